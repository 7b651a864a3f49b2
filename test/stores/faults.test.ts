import { randomUUID } from 'node:crypto';

import type { GraphQLSchema } from 'graphql';
import { Redis } from 'ioredis';

import {
  createMemoryStore,
  createRedisStore,
  type DecisionEvent,
  type RedisStoreOptions,
  type StoreErrorPolicy,
} from '../../src';
import { releaseTogether } from '../support/barrier';
import {
  CLIENT_FAMILIES,
  clientState,
  dropClient,
  makeClient,
  type ClientFamily,
} from '../support/clients';
import { loadFor, type Answer } from '../support/load';
import { freePort, sleep, stopAll } from '../support/processes';
import { startRedisServer, uniquePrefix, waitFor, type RedisProcess } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';

/*
 * Each fault is a real redis-server process misbehaving while requests are in flight. For every
 * one: every request is answered within the store timeout plus a margin (a hang check, not a
 * speed claim), the policy decides what the client sees, nothing is left unhandled, and once
 * Redis is back the limits are exact again, decided by Redis, without restarting anything. Each
 * fault is played under `onStoreError` alone and with a memory `fallbackStore`, which must
 * decide every hit the store fails, exactly (per process) while the fault lasts; and on a client
 * of every family the store accepts (ioredis, iovalkey, node-redis 6 and 5).
 */

const TIMEOUT_MS = 200;
const HANG_MARGIN_MS = 1_500;
const SDL = `type Query { ping: Int }
  type Mutation {
    hit: Boolean @rateLimit(action: "hit", window: 60, limit: 1000)
    exact: Boolean @rateLimit(action: "exact", window: 60, limit: 5)
  }`;

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason);
};
beforeAll(() => process.on('unhandledRejection', onUnhandled));
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await stopAll();
});

const admins: Redis[] = [];
const clients: { family: ClientFamily; client: unknown }[] = [];
afterEach(() => {
  for (const c of admins.splice(0)) c.disconnect();
  for (const { family, client } of clients.splice(0)) dropClient(family, client);
});

/** What decides while Redis fails: `onStoreError` alone, or a memory fallback (then `deny`). */
type Policy = StoreErrorPolicy | 'fallback';

interface Rig {
  readonly schema: GraphQLSchema;
  readonly family: ClientFamily;
  /** The client of `family` the store was made from (each family has its own type). */
  readonly client: any;
  /** Resolves once the client is ready (never, while no Redis listens). */
  readonly ready: Promise<void>;
  readonly resolved: { count: number };
  readonly events: DecisionEvent[];
  readonly clientErrors: Error[];
  /** The directive's `timeoutMs`, and the store's `connectWaitMs` unless given. */
  readonly timeoutMs: number;
  /** The store's `ready()`: set up (connected, its Lua loaded), as a server awaits it. */
  readonly storeReady: () => Promise<void>;
}

/**
 * ioredis' `disconnect()` ends the socket and arms a timer (`disconnectTimeout`, 2 s) to destroy
 * it should it not close, and a socket already closed by an outage, or held by a frozen Redis,
 * never closes again: that timer outlived the last test and kept the jest worker from exiting
 * ("a worker process has failed to exit gracefully"). The tests' ioredis and iovalkey clients
 * destroy at once; node-redis' `destroy()` does already.
 */
const DISCONNECT = { disconnectTimeout: 0 } as const;

/**
 * A schema on a store whose client of `family` has that family's defaults, as most users' do
 * (but for how an ioredis or iovalkey client lets go of its socket once the test is over).
 */
function rig(
  family: ClientFamily,
  port: number,
  policy: Policy,
  storeOptions: Partial<RedisStoreOptions> = {},
  timeoutMs = TIMEOUT_MS,
): Rig {
  const clientErrors: Error[] = [];
  const options = family.startsWith('node-redis') ? {} : DISCONNECT;
  const { client, ready } = makeClient(
    family,
    { url: `redis://127.0.0.1:${port}`, options },
    clientErrors,
  );
  clients.push({ family, client });
  const resolved = { count: 0 };
  const events: DecisionEvent[] = [];
  const store = createRedisStore({
    client,
    prefix: uniquePrefix(),
    connectWaitMs: timeoutMs,
    // these faults are about each hit's own deadline: a set-up that cannot finish holds a hit
    // at most this allowance more (test/stores/setup-wait.test.ts holds it to that)
    setupWaitMs: timeoutMs,
    ...storeOptions,
  });
  const schema = limitedSchema(
    SDL,
    { Mutation: { hit: () => ++resolved.count > 0, exact: () => true } },
    {
      store,
      onStoreError: policy === 'fallback' ? 'deny' : policy,
      fallbackStore: policy === 'fallback' ? createMemoryStore() : undefined,
      timeoutMs,
      onDecision: (e) => events.push(e),
    },
  );
  const storeReady = () => store.ready();
  return { schema, family, client, ready, resolved, events, clientErrors, timeoutMs, storeReady };
}

const load = (r: Rig, durationMs: number) =>
  loadFor(r.schema, {
    durationMs,
    concurrency: 16,
    maxRequests: 20_000,
    identityOf: (n) => `load-${n % 50}`,
  });

function expectAllAnswered(answers: Answer[], timeoutMs: number): void {
  expect(answers.length).toBeGreaterThan(0);
  const slowest = Math.max(...answers.map((a) => a.latencyMs));
  expect(slowest).toBeLessThan(timeoutMs + HANG_MARGIN_MS);
  expect(unhandled).toEqual([]);
}

const LIMIT = 5; // `exact`
const BURST = 20;
const EXACT = [
  ...Array<string>(LIMIT).fill('OK'),
  ...Array<string>(BURST - LIMIT).fill('RATE_LIMITED'),
];

/** BURST hits of `exact` for a fresh identity, released together: outcomes sorted, and events. */
async function burst(r: Rig): Promise<{ outcomes: string[]; events: DecisionEvent[] }> {
  const identity = `burst-${randomUUID()}`;
  const answers = await releaseTogether(BURST, async () => async () => {
    const started = performance.now();
    const result = await run(r.schema, 'mutation { exact }', { team: { id: identity } });
    const code = codes(result)[0];
    return { outcome: typeof code === 'string' ? code : 'OK', ms: performance.now() - started };
  });
  expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(r.timeoutMs + HANG_MARGIN_MS);
  return {
    outcomes: answers.map((a) => a.outcome).sort(),
    events: r.events.filter((e) => e.identity === identity),
  };
}

/** What BURST simultaneous hits on a limit of LIMIT get while the store fails, and who decides. */
const DURING_OUTAGE: Record<Policy, { outcomes: string[]; decidedBy: DecisionEvent['decidedBy'] }> =
  {
    deny: { outcomes: Array<string>(BURST).fill('RATE_LIMIT_UNAVAILABLE'), decidedBy: 'store' },
    allow: { outcomes: Array<string>(BURST).fill('OK'), decidedBy: 'store' },
    fallback: { outcomes: EXACT, decidedBy: 'fallback' },
  };

/**
 * Until the store itself (no failure, no fallback) decides a hit of a fresh identity: `exact`,
 * whose resolver counts nothing in `resolved`.
 */
async function untilStoreDecides(r: Rig, what: string): Promise<void> {
  const probe = { team: { id: `probe-${randomUUID()}` } };
  await waitFor(
    what,
    async () => {
      await run(r.schema, 'mutation { exact }', probe);
      const last = r.events.filter((e) => e.identity === probe.team.id).at(-1);
      return last?.decidedBy === 'store' && last.error === undefined;
    },
    15_000,
    100,
  );
}

/**
 * After recovery: once the store is set up and decides a probe again, a burst is exact and
 * decided by it (a burst racing the set-up of a store that never was ready measures the set-up).
 */
async function expectExactAgain(r: Rig): Promise<void> {
  await r.storeReady();
  await untilStoreDecides(r, 'Redis to decide again');
  const after = await burst(r);
  expect(after.outcomes).toEqual(EXACT);
  expect(after.events.map((e) => [e.decidedBy, e.error])).toEqual(
    Array(BURST).fill(['store', undefined]),
  );
}

const outcomes = (answers: Answer[]) => new Set(answers.map((a) => a.outcome));

/** The Redis a fault is played on; `redis` is absent while nothing listens on `port`. */
interface Stage {
  readonly port: number;
  redis?: RedisProcess | undefined;
}

interface Fault {
  readonly name: string;
  readonly policies: readonly Policy[];
  /** Whether Redis answers when the load starts. */
  readonly upAtStart: boolean;
  /** Whether hits fail on the store while it lasts (a flushed script is reloaded within the hit). */
  readonly outage: boolean;
  /** Whether every failure is the store's own timeout (Redis holds the connection, silent). */
  readonly onlyTimeouts: boolean;
  readonly loadMs: number;
  /**
   * The directive's `timeoutMs` (and the store's `connectWaitMs`) while it plays, when not
   * TIMEOUT_MS: a fault that must fail nothing gets room for a loaded machine's slow moments.
   */
  readonly timeoutMs?: number;
  /** Brings the fault on mid-load, runs `meanwhile` while it lasts, and ends it. */
  inflict(stage: Stage, meanwhile: () => Promise<void>): Promise<void>;
  /** Ends the fault once the load is over, for a fault that lasts all of it. */
  recover?(stage: Stage): Promise<void>;
}

const redisOf = (stage: Stage): RedisProcess => {
  if (!stage.redis) throw new Error('this fault needs a running Redis');
  return stage.redis;
};

const FAULTS: readonly Fault[] = [
  {
    name: 'Redis not listening, then started on that port',
    policies: ['deny', 'allow', 'fallback'],
    upAtStart: false,
    outage: true,
    onlyTimeouts: false, // the client may also give up on the connection first
    loadMs: 500,
    inflict: (_stage, meanwhile) => meanwhile(),
    recover: async (stage) => {
      stage.redis = await startRedisServer(stage.port);
    },
  },
  {
    name: 'Redis frozen with SIGSTOP, then SIGCONT',
    policies: ['deny', 'allow', 'fallback'],
    upAtStart: true,
    outage: true,
    onlyTimeouts: true,
    loadMs: 2_000,
    inflict: async (stage, meanwhile) => {
      const { pid } = redisOf(stage).child;
      await sleep(400);
      process.kill(pid, 'SIGSTOP');
      // 50 ms on, the process has long been stopped: nothing of the burst reaches it first
      await Promise.all([sleep(800), sleep(50).then(meanwhile)]);
      process.kill(pid, 'SIGCONT');
    },
  },
  {
    name: 'Redis killed and restarted on the same port',
    policies: ['deny', 'fallback'],
    upAtStart: true,
    outage: true,
    onlyTimeouts: false,
    loadMs: 2_500,
    inflict: async (stage, meanwhile) => {
      await sleep(400);
      await redisOf(stage).child.stop(0); // SIGTERM with no grace: SIGKILL at once
      await Promise.all([sleep(500), meanwhile()]);
      // the restarted Redis has an empty script cache: EVALSHA gets NOSCRIPT and falls back to EVAL
      stage.redis = await startRedisServer(stage.port);
    },
  },
  {
    name: 'SCRIPT FLUSH mid-load, recovered within the hit',
    policies: ['deny', 'fallback'],
    upAtStart: true,
    outage: false,
    onlyTimeouts: false,
    loadMs: 1_000,
    timeoutMs: 2_000,
    inflict: async (stage, meanwhile) => {
      const admin = new Redis(stage.port, '127.0.0.1', DISCONNECT);
      admins.push(admin);
      for (let i = 0; i < 5; i++) {
        await sleep(150);
        await admin.script('FLUSH');
        if (i === 2) await meanwhile();
      }
    },
  },
];

describe.each(CLIENT_FAMILIES)('faults mid-load, %s', (family: ClientFamily) => {
  let stage: Stage | undefined;
  afterEach(async () => {
    await stage?.redis?.stop();
    stage = undefined;
  });

  test.each(FAULTS.flatMap((f) => f.policies.map((p) => [f.name, p, f] as const)))(
    "%s ('%s')",
    async (_name, policy, fault) => {
      const redis = fault.upAtStart ? await startRedisServer() : undefined;
      const here: Stage = { port: redis?.port ?? (await freePort()), redis };
      stage = here;
      const r = rig(family, here.port, policy, {}, fault.timeoutMs);
      if (fault.upAtStart) {
        await r.ready;
        // as a server that has served before the fault: the store has read the server's version
        // and loaded its script, which a loaded machine's cold start could take past a deadline
        await untilStoreDecides(r, 'the store to decide');
        r.events.splice(0);
      }
      const loading = load(r, fault.loadMs);
      let during: Awaited<ReturnType<typeof burst>> | undefined;
      await fault.inflict(here, async () => {
        during = await burst(r);
      });
      const answers = await loading;
      expectAllAnswered(answers, r.timeoutMs);
      expect(r.events).toHaveLength(answers.length + BURST);

      // hits the store failed are decided by the fallback when there is one, by the policy if not
      for (const e of r.events) {
        expect(e.decidedBy).toBe(policy === 'fallback' && e.error ? 'fallback' : 'store');
      }
      const failures = r.events.flatMap((e) => (e.error ? [e.error.name] : []));
      expect(failures.length > 0).toBe(fault.outage);
      if (fault.onlyTimeouts) expect(new Set(failures)).toEqual(new Set(['StoreTimeoutError']));
      const expected =
        !fault.outage || policy !== 'deny'
          ? ['OK']
          : fault.upAtStart
            ? ['OK', 'RATE_LIMIT_UNAVAILABLE']
            : ['RATE_LIMIT_UNAVAILABLE'];
      expect(outcomes(answers)).toEqual(new Set(expected));
      expect(r.resolved.count).toBe(answers.filter((a) => a.outcome === 'OK').length);
      if (!fault.upAtStart) expect(r.events.every((e) => e.error instanceof Error)).toBe(true);

      // simultaneous hits during the fault: exact per process on the fallback
      const { outcomes: burstOutcomes, events } = during ?? { outcomes: [], events: [] };
      const want = fault.outage ? DURING_OUTAGE[policy] : { outcomes: EXACT, decidedBy: 'store' };
      expect(burstOutcomes).toEqual(want.outcomes);
      expect(events.map((e) => [e.decidedBy, e.error instanceof Error])).toEqual(
        Array(BURST).fill([want.decidedBy, fault.outage]),
      );

      await fault.recover?.(here);
      await expectExactAgain(r);
    },
    30_000,
  );
});

describe.each(CLIENT_FAMILIES)('a client that is not ready yet, %s', (family: ClientFamily) => {
  let redis: RedisProcess;
  beforeEach(async () => {
    redis = await startRedisServer();
  });
  afterEach(async () => {
    await redis.stop();
  });

  test('hits refused while the client waits on a frozen Redis are never counted afterwards', async () => {
    process.kill(redis.child.pid, 'SIGSTOP');
    // the kernel still accepts the connection, so the client sits in `connect`, its ready
    // check unanswered: with ioredis' defaults a command now waits in its offline queue
    const r = rig(family, redis.port, 'deny', { connectWaitMs: 50 });
    await waitFor(
      'the client to reach the frozen Redis',
      () => clientState(family, r.client) === 'connecting',
    );
    const victim = { team: { id: 'victim' } };
    const wave = async (): Promise<unknown[]> => {
      const results = await Promise.all(
        Array.from({ length: 10 }, () => run(r.schema, 'mutation { exact }', victim)),
      );
      return results.map((x) => x.errors?.[0]?.extensions?.code);
    };
    // the first wave may wait for the connection, 50 ms; its callers give up at 200 ms
    expect(await wave()).toEqual(Array(10).fill('RATE_LIMIT_UNAVAILABLE'));
    const timedOut = r.events.filter((e) => e.error?.name === 'StoreTimeoutError').length;
    // the client has been connecting for longer than that: the second wave fails at once
    expect(await wave()).toEqual(Array(10).fill('RATE_LIMIT_UNAVAILABLE'));
    expect(r.events.filter((e) => e.error?.name === 'StoreTimeoutError')).toHaveLength(timedOut);
    process.kill(redis.child.pid, 'SIGCONT');
    await waitFor('the client to be ready', () => clientState(family, r.client) === 'ready');
    // the store's first calls once ready (its version check, the script's load) may outlast
    // the deadline in a slow moment: another identity's hit is decided first
    await untilStoreDecides(r, 'the store to decide again');
    // none of the twenty refused hits was counted: the victim has its whole limit of 5
    const after = await Promise.all(
      Array.from({ length: 6 }, () => run(r.schema, 'mutation { exact }', victim)),
    );
    expect(after.filter((x) => x.data?.exact === true)).toHaveLength(5);
  }, 30_000);
});
