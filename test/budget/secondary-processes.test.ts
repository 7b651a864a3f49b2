import { randomUUID } from 'node:crypto';

import { rateLimitDirective } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { fire, type Body } from '../support/identities';
import { stopAll, waitFor } from '../support/processes';
import { closeClients, connectRedis, redisUrl, uniquePrefix } from '../support/redis';
import { startBudgetServer, type ServerProcess } from '../support/servers';
import { openedRedisStore } from '../support/stores';

/*
 * `budget.inFlight` and `budget.time` across four GraphQL Yoga processes on one Redis (the
 * built library: `npm run build` first), operations released at one instant. The resolvers
 * record when they ran (`slow(ms)`: [start, end] on this machine's clock), and the test counts
 * how many ran at once across every process.
 */

type Slow = Body & {
  data?: { slow?: [number, number] } | null;
  extensions?: {
    executionTime?: { chargedMs: number; throttleStatus: { currentlyAvailable: number } };
  };
};

const prefix = uniquePrefix();
const env = { REDIS_URL: redisUrl(), RATE_LIMIT_PREFIX: prefix };
afterAll(async () => {
  await stopAll();
  await closeClients();
});

/** The most intervals that overlap at one instant (an end before a start at the same time). */
function mostAtOnce(intervals: readonly [number, number][]): number {
  const events = intervals.flatMap(([s, e]) => [
    [s, 1],
    [e, -1],
  ]);
  events.sort((a, b) => (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number));
  let now = 0;
  let most = 0;
  for (const [, d] of events) most = Math.max(most, (now += d as number));
  return most;
}

/** `n` servers of `budget`, started one after the other: four at once overload a shared machine. */
async function serve(
  n: number,
  budget: Record<string, unknown>,
  more: Record<string, string> = {},
): Promise<ServerProcess[]> {
  const servers: ServerProcess[] = [];
  for (let i = 0; i < n; i++) servers.push(await startBudgetServer(budget, { ...env, ...more }));
  return servers;
}

const ran = (answers: Slow[]) =>
  answers.flatMap((a): [number, number][] => (a.data?.slow ? [a.data.slow] : []));

test('4 processes x 200 operations of one identity, in flight limit 10: exactly 10 run at once', async () => {
  const budget = { limit: 1_000_000, window: 3600, inFlight: { limit: 10, leaseSeconds: 30 } };
  // a store call may wait behind 200 requests' parsing on a loaded machine: exactness is the
  // point here, not latency
  const servers = await serve(4, budget, { TIMEOUT_MS: '20000' });
  const team = `team-${randomUUID()}`;
  const answers = (await fire(
    servers,
    800,
    () => '{ slow(ms: 200) }',
    () => ({ 'x-team': team }),
    // every request of a process in flight at once, however slow a shared machine answers them
    { connections: 200, timeoutMs: 60_000 },
  )) as Slow[];
  const admitted = ran(answers);
  const refused = answers.filter((a) => !a.data?.slow);
  for (const a of refused) {
    expect(a.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', policy: 'inFlight' });
  }
  expect(admitted.length + refused.length).toBe(800);
  expect(mostAtOnce(admitted)).toBe(10);
  await Promise.all(servers.map((s) => s.stop()));
}, 90_000);

test('a process SIGKILLed while holding slots frees them within the lease, and not before', async () => {
  const budget = { limit: 1_000_000, window: 3600, inFlight: { limit: 3, leaseSeconds: 2 } };
  const [holder, other] = await serve(2, budget);
  const team = `team-${randomUUID()}`;
  const store = await openedRedisStore({ client: await connectRedis(), prefix });
  const { peek } = rateLimitDirective({ store, budget });
  const free = async () => (await peek({ identity: team, action: 'inFlight' }))[0]?.remaining;
  // three operations that outlive a lease: held by renewal while the holder lives
  const held = fire(
    [holder as ServerProcess],
    3,
    () => '{ slow(ms: 6000) }',
    () => ({
      'x-team': team,
    }),
  ).catch(() => []);
  await waitFor('the three slots taken', async () => (await free()) === 0, 5_000);
  await new Promise((r) => setTimeout(r, 2_500));
  expect(await free()).toBe(0);
  const refused = (await fire(
    [other as ServerProcess],
    1,
    () => '{ slow(ms: 1) }',
    () => ({
      'x-team': team,
    }),
  )) as Slow[];
  expect(refused[0]?.errors?.[0]?.extensions).toMatchObject({ policy: 'inFlight' });
  process.kill((holder as ServerProcess).child.pid, 'SIGKILL');
  await waitFor('the slots freed after the kill', async () => (await free()) === 3, 2_000 + 1_000);
  const admitted = (await fire(
    [other as ServerProcess],
    1,
    () => '{ slow(ms: 1) }',
    () => ({
      'x-team': team,
    }),
  )) as Slow[];
  expect(admitted[0]?.data?.slow).toHaveLength(2);
  await held;
  await (other as ServerProcess).stop();
}, 30_000);

test('time 2 s per hour, 4 processes: no time is spent beyond it but overruns; Redis holds what was charged', async () => {
  const reserveMs = 500;
  const budget = { limit: 1_000_000, window: 3600, time: { seconds: 2, window: 3600, reserveMs } };
  const servers = await serve(4, budget);
  const team = `team-${randomUUID()}`;
  const answers: Slow[] = [];
  const startedMs = Date.now();
  // waves of 16 at once until every operation of a wave is refused
  for (let wave = 0; wave < 20; wave++) {
    const got = (await fire(
      servers,
      16,
      (i) => `{ slow(ms: ${50 + ((i * 37) % 100)}) }`,
      () => ({ 'x-team': team }),
    )) as Slow[];
    answers.push(...got);
    if (got.every((a) => !a.data?.slow)) break;
  }
  // an hour restores 2 s: what came back while the test ran
  const restoredMs = ((Date.now() - startedMs) / 1000) * (2000 / 3600) + 1;
  const admitted = answers.filter((a) => a.data?.slow);
  const refused = answers.filter((a) => !a.data?.slow);
  expect(refused.length).toBeGreaterThanOrEqual(16);
  for (const a of refused) {
    expect(a.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', policy: 'time' });
  }
  const chargedOf = (a: Slow) => a.extensions?.executionTime?.chargedMs as number;
  const charged = admitted.reduce((sum, a) => sum + chargedOf(a), 0);
  // an operation starts only while its reservation fits: beyond the 2 s, only what operations
  // took past their reservation (debt) was spent
  const withinReservations = admitted.reduce(
    (sum, a) => sum + Math.min(chargedOf(a), reserveMs),
    0,
  );
  expect(withinReservations).toBeLessThanOrEqual(2000 + restoredMs);
  // each was charged at least what its resolver measured of itself
  for (const a of admitted) {
    const [start, end] = a.data?.slow as [number, number];
    expect(chargedOf(a)).toBeGreaterThanOrEqual(end - start);
  }
  // what Redis holds is what was charged, within 1% (and what the hour restored meanwhile)
  const timeRule = {
    action: 'time',
    algorithm: 'TOKEN_BUCKET' as const,
    windowSeconds: 3600,
    limit: 2000,
    cost: reserveMs,
  };
  const client = await connectRedis();
  const value = (await client.get(counterKey(prefix, team, timeRule))) ?? '';
  const spentMs = Number(value.split(':')[0]) / 1000;
  expect(Math.abs(spentMs - charged)).toBeLessThanOrEqual(charged * 0.01 + restoredMs);
  await Promise.all(servers.map((s) => s.stop()));
}, 90_000);
