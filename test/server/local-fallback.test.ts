import { createMemoryStore, type RateLimitStore } from '../../src';
import { startCtfServer, type CtfServer } from '../../server/src/app';
import { localFallback } from '../../server/src/local-fallback';
import { ctfData } from '../support/ctf';
import { postGraphQL } from '../support/http';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * RATE_LIMIT_ON_STORE_ERROR=local stands a store in for Redis's: every method of the store
 * contract is still there (a budget settles in one call, as it does on Redis alone), and closing
 * it closes Redis's store and the memory fallback.
 */

const BOARD = '{ me { name score } challenges { id title points solved } }';
let redis: RateLimitStore;
let server: CtfServer | undefined;

beforeEach(async () => {
  redis = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
});
afterEach(async () => {
  await server?.stop();
  server = undefined;
});
afterAll(() => closeClients());

test('a budget settles in one store call, refund and peek together', async () => {
  const calls = { refundAndPeek: 0, refund: 0, peek: 0 };
  for (const method of ['refundAndPeek', 'refund', 'peek'] as const) {
    const real = redis[method]?.bind(redis) as (...args: unknown[]) => Promise<never>;
    Object.assign(redis, {
      [method]: (...args: unknown[]) => {
        calls[method] += 1;
        return real(...args);
      },
    });
  }
  const local = localFallback(redis);
  server = await startCtfServer({
    data: ctfData(1),
    ...local,
    onStoreError: 'deny',
    port: 0,
  });
  const { body } = await postGraphQL(server.url, BOARD, 'token-0');
  // priced at 51, cost 2: 49 refunded, and the budget as the refund left it
  expect(body.extensions?.cost).toMatchObject({ requestedQueryCost: 51, actualQueryCost: 2 });
  expect(calls).toEqual({ refundAndPeek: 1, refund: 0, peek: 0 });
});

test("closing it closes Redis's store and the memory fallback", async () => {
  const memory = createMemoryStore();
  let memoryClosed = 0;
  const close = memory.close.bind(memory);
  memory.close = () => {
    memoryClosed += 1;
    return close();
  };
  const local = localFallback(redis, memory);
  expect(local.fallbackStore).toBe(memory);
  await local.store.close?.();
  expect(memoryClosed).toBe(1);
  // the Redis store's own connection is closed: it decides nothing more
  await expect(
    redis.hit('t', [
      { action: 'a', algorithm: 'FIXED_WINDOW', windowSeconds: 60, limit: 1, cost: 1 },
    ]),
  ).rejects.toThrow();
});

test("a CONCURRENCY slot Redis admitted is freed in the memory's copy too when it ends", async () => {
  const memory = createMemoryStore();
  const { store } = localFallback(redis, memory);
  const rule = {
    action: 'export',
    algorithm: 'CONCURRENCY',
    windowSeconds: 30,
    limit: 2,
    cost: 1,
  } as const;
  const first = await store.hit('team-1', [rule]);
  const second = await store.hit('team-1', [rule]);
  expect([first.allowed, second.allowed]).toEqual([true, true]);
  expect((await memory.peek?.('team-1', [rule]))?.[0]?.remaining).toBe(0);
  await store.release?.(first.lease!);
  await store.release?.(second.lease!);
  // both copies free again: a fallback that took over now would admit two calls, not none
  expect((await memory.peek?.('team-1', [rule]))?.[0]?.remaining).toBe(2);
  expect((await redis.peek?.('team-1', [rule]))?.[0]?.remaining).toBe(2);
});
