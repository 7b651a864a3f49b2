import { performance } from 'node:perf_hooks';

import fc from 'fast-check';

import {
  createMemoryStore,
  createRedisStore,
  type RateLimitRule,
  type RateLimitStore,
} from '../../src';
import { RATE_ALGORITHMS } from '../support/algorithms';
import { sleep, within } from '../support/processes';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { violations, type ObservedHit } from '../support/model';
import { scheduleArb, type Step } from '../support/schedules';

/**
 * Randomized schedules: hits at random times over a few windows, alone and in simultaneous
 * bursts, straight at `store.hit`, each recorded with the client's send and receive time. The
 * store decides on its own clock, so the model (support/model.ts) knows each decision
 * only to lie between send and receive, and reports only what no such timing explains.
 *
 * The schedule comes from fast-check with a fixed seed (SCHEDULE_SEED overrides the base; each
 * case adds its index), printed in the test name and in fast-check's failure report.
 */

const BASE_SEED = Number(process.env.SCHEDULE_SEED ?? 20_260_611);
const WINDOW_SECONDS = 1;
/** Every hit of a run must have answered this long after the last was fired. */
const ANSWER_DEADLINE_MS = 5_000;
const CASE_TIMEOUT_MS = 20_000;

/** Fires `plan` at `store` on time, without waiting for answers in between. */
async function play(
  store: RateLimitStore,
  rule: RateLimitRule,
  plan: readonly Step[],
): Promise<ObservedHit[]> {
  const start = performance.now();
  const clock = () => performance.now() - start;
  const one = async (): Promise<ObservedHit> => {
    const sent = clock();
    const { allowed } = await store.hit('id', [rule]);
    return { sent, received: clock(), allowed };
  };
  const bursts: Promise<ObservedHit[]>[] = [];
  for (const step of plan) {
    const wait = step.atMs - clock();
    if (wait > 0) await sleep(wait);
    bursts.push(Promise.all(Array.from({ length: step.size }, one)));
  }
  return (await within(Promise.all(bursts), ANSWER_DEADLINE_MS, 'the schedule')).flat();
}

/** One line per hit: its index, send and receive time (ms after the run started), outcome. */
const describeHits = (hits: readonly ObservedHit[]): string =>
  hits
    .map(
      (h, i) =>
        `#${i} ${h.sent.toFixed(1)}..${h.received.toFixed(1)} ${h.allowed ? 'pass' : 'block'}`,
    )
    .join('\n');

const STORES: [string, () => Promise<RateLimitStore>][] = [
  [
    'Redis store',
    async () => createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
  ],
  ['memory store', async () => createMemoryStore()],
];
/** Every algorithm against every store, with cost 1 and cost 2; each case its own seed. */
const CASES = STORES.flatMap(([storeName, makeStore], s) =>
  RATE_ALGORITHMS.flatMap((algorithm, a) =>
    [1, 2].map((cost, c) => ({
      storeName,
      makeStore,
      algorithm,
      cost,
      seed: BASE_SEED + (s * RATE_ALGORITHMS.length + a) * 2 + c,
    })),
  ),
);

afterAll(closeClients);

describe.each(RATE_ALGORITHMS)('%s', (algorithm) => {
  test.concurrent.each(CASES.filter((k) => k.algorithm === algorithm))(
    '$storeName: random schedule, cost $cost, window 1 s (seed $seed)',
    async ({ makeStore, storeName, cost, seed }) => {
      const store = await makeStore();
      // The script is loaded before the run, so no hit pays the NOSCRIPT round trip.
      await store.hit('warm-up', [
        { action: 'warm-up', algorithm, windowSeconds: 1, limit: 10, cost: 1 },
      ]);
      await fc.assert(
        fc.asyncProperty(scheduleArb(cost), async ({ limit, plan }) => {
          const rule: RateLimitRule = {
            action: `schedule-${seed}`,
            algorithm,
            windowSeconds: WINDOW_SECONDS,
            limit,
            cost,
          };
          const hits = await play(store, rule, plan);
          const passed = hits.filter((h) => h.allowed).length;
          // The schedule must exercise both outcomes, or it proves little.
          expect(passed).toBeGreaterThan(0);
          expect(passed).toBeLessThan(hits.length);
          const found = violations(rule, hits);
          if (found.length > 0) {
            const what = `${storeName} ${algorithm} limit ${limit} cost ${cost} seed ${seed}`;
            const timeline = `hits (sent..received, ms after the run started):\n${describeHits(hits)}`;
            throw new Error(`${what}:\n${found.join('\n')}\n${timeline}`);
          }
        }),
        // One run, and no shrinking: every run replays in real time.
        { seed, numRuns: 1, endOnFailure: true },
      );
    },
    CASE_TIMEOUT_MS,
  );
});
