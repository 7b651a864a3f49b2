import type { GraphQLSchema } from 'graphql';
import { Redis } from 'ioredis';

import {
  createRedisStore,
  type DecisionEvent,
  type RedisStoreOptions,
  type StoreErrorPolicy,
} from '../src';
import { loadFor, type Answer } from './support/load';
import { freePort, sleep, stopAll } from './support/processes';
import { startRedisServer, uniquePrefix, waitFor, type RedisProcess } from './support/redis';
import { limitedSchema, run } from './support/schema';

/*
 * Each fault is a real redis-server process misbehaving while requests are in flight. For every
 * one: every request is answered within the store timeout plus a margin (a hang check, not a
 * speed claim), the policy decides what the client sees, nothing is left unhandled, and once
 * Redis is back the limits are exact again without restarting anything.
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

const clients: Redis[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.disconnect();
});

interface Rig {
  readonly schema: GraphQLSchema;
  readonly client: Redis;
  readonly resolved: { count: number };
  readonly events: DecisionEvent[];
  readonly clientErrors: Error[];
}

/** A schema on a store whose client uses ioredis' defaults, as most users' clients do. */
function rig(
  port: number,
  onStoreError: StoreErrorPolicy,
  storeOptions: Partial<RedisStoreOptions> = {},
): Rig {
  const client = new Redis(port, '127.0.0.1');
  clients.push(client);
  const clientErrors: Error[] = [];
  client.on('error', (e: Error) => clientErrors.push(e));
  const resolved = { count: 0 };
  const events: DecisionEvent[] = [];
  const schema = limitedSchema(
    SDL,
    { Mutation: { hit: () => ++resolved.count > 0, exact: () => true } },
    {
      store: createRedisStore({ client, prefix: uniquePrefix(), ...storeOptions }),
      onStoreError,
      timeoutMs: TIMEOUT_MS,
      onDecision: (e) => events.push(e),
    },
  );
  return { schema, client, resolved, events, clientErrors };
}

const load = (r: Rig, durationMs: number) =>
  loadFor(r.schema, {
    durationMs,
    concurrency: 16,
    maxRequests: 20_000,
    identityOf: (n) => `load-${n % 50}`,
  });

function expectAllAnswered(answers: Answer[]): void {
  expect(answers.length).toBeGreaterThan(0);
  const slowest = Math.max(...answers.map((a) => a.latencyMs));
  expect(slowest).toBeLessThan(TIMEOUT_MS + HANG_MARGIN_MS);
  expect(unhandled).toEqual([]);
}

/** After recovery: 20 simultaneous hits of a fresh identity on a limit of 5 let exactly 5 pass. */
async function expectExactAgain(r: Rig): Promise<void> {
  await waitFor(
    'Redis to answer again',
    async () =>
      (await run(r.schema, 'mutation { hit }', { team: { id: 'probe' } })).errors === undefined,
    15_000,
    100,
  );
  const identity = `after-${Math.random()}`;
  const results = await Promise.all(
    Array.from({ length: 20 }, () =>
      run(r.schema, 'mutation { exact }', { team: { id: identity } }),
    ),
  );
  expect(results.filter((x) => x.data?.exact === true)).toHaveLength(5);
  expect(results.filter((x) => x.errors?.[0]?.extensions?.code === 'RATE_LIMITED')).toHaveLength(
    15,
  );
}

const outcomes = (answers: Answer[]) => new Set(answers.map((a) => a.outcome));

describe('Redis not listening', () => {
  test.each<[StoreErrorPolicy, string]>([
    ['deny', 'RATE_LIMIT_UNAVAILABLE'],
    ['allow', 'OK'],
  ])("'%s': every request is answered %s at once", async (policy, expected) => {
    const r = rig(await freePort(), policy);
    const answers = await load(r, 500);
    expectAllAnswered(answers);
    expect(outcomes(answers)).toEqual(new Set([expected]));
    expect(r.resolved.count).toBe(policy === 'allow' ? answers.length : 0);
    expect(r.events.every((e) => e.error instanceof Error)).toBe(true);
    expect(r.events).toHaveLength(answers.length);
  });
});

describe('faults mid-load', () => {
  let redis: RedisProcess;
  beforeEach(async () => {
    redis = await startRedisServer();
  });
  afterEach(async () => {
    await redis.stop();
  });

  test.each<StoreErrorPolicy>(['deny', 'allow'])(
    "Redis frozen with SIGSTOP, then SIGCONT ('%s')",
    async (policy) => {
      const r = rig(redis.port, policy);
      await r.client.ping();
      const running = load(r, 2_000);
      await sleep(400);
      process.kill(redis.child.pid, 'SIGSTOP');
      await sleep(800);
      process.kill(redis.child.pid, 'SIGCONT');
      const answers = await running;
      expectAllAnswered(answers);
      if (policy === 'deny') {
        expect(outcomes(answers)).toEqual(new Set(['OK', 'RATE_LIMIT_UNAVAILABLE']));
        expect(r.resolved.count).toBe(answers.filter((a) => a.outcome === 'OK').length);
      } else {
        expect(outcomes(answers)).toEqual(new Set(['OK']));
      }
      expect(r.events.some((e) => e.error?.name === 'StoreTimeoutError')).toBe(true);
      await expectExactAgain(r);
    },
    30_000,
  );

  test('Redis killed and restarted on the same port', async () => {
    const r = rig(redis.port, 'deny');
    await r.client.ping();
    const running = load(r, 2_500);
    await sleep(400);
    const { port } = redis;
    await redis.child.stop(0); // SIGTERM with no grace: SIGKILL at once
    await sleep(500);
    redis = await startRedisServer(port);
    const answers = await running;
    expectAllAnswered(answers);
    expect(outcomes(answers)).toEqual(new Set(['OK', 'RATE_LIMIT_UNAVAILABLE']));
    // the restarted Redis has an empty script cache: EVALSHA got NOSCRIPT and fell back to EVAL
    await expectExactAgain(r);
  }, 30_000);

  test('SCRIPT FLUSH mid-load is recovered transparently', async () => {
    const r = rig(redis.port, 'deny');
    await r.client.ping();
    const admin = new Redis(redis.port, '127.0.0.1');
    clients.push(admin);
    const running = load(r, 1_000);
    for (let i = 0; i < 5; i++) {
      await sleep(150);
      await admin.script('FLUSH');
    }
    const answers = await running;
    expectAllAnswered(answers);
    expect(outcomes(answers)).toEqual(new Set(['OK']));
    await expectExactAgain(r);
  }, 30_000);
});

describe('a client that is not ready yet', () => {
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
    const r = rig(redis.port, 'deny', { connectWaitMs: 50 });
    await waitFor('the client to reach the frozen Redis', () => r.client.status === 'connect');
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
    await waitFor('the client to be ready', () => r.client.status === 'ready');
    // none of the twenty refused hits was counted: the victim has its whole limit of 5
    const after = await Promise.all(
      Array.from({ length: 6 }, () => run(r.schema, 'mutation { exact }', victim)),
    );
    expect(after.filter((x) => x.data?.exact === true)).toHaveLength(5);
  }, 30_000);
});
