import { createRedisStore, rateLimitDirective } from '../../src';
import { gate } from '../support/running-calls';
import { connectRedis, ownRedis, scriptCalls, uniquePrefix, waitFor } from '../support/redis';
import { codes, run } from '../support/schema';
import { opened } from '../support/stores';
import { makeExecutableSchema } from '@graphql-tools/schema';

/*
 * A hit whose answer came after its deadline (`timeoutMs`) was refused, or decided by a
 * fallback: no call holds what it took. The slots of its late answer are released as soon as the
 * answer arrives, not left to the lease time (`window`, 20 s here: far longer than this test).
 * Redis is made slow with `CLIENT PAUSE` on a redis-server of this file's own.
 */

const redis = ownRedis();

test('limit 2, one hit timed out: both slots are free once its late answer arrived', async () => {
  const admin = await connectRedis({}, redis.url());
  const store = await opened(
    createRedisStore({ client: await connectRedis({}, redis.url()), prefix: uniquePrefix() }),
  );
  await store.ready?.();
  const slow = gate();
  const directive = rateLimitDirective({ store, identify: () => 'team-1', timeoutMs: 300 });
  const schema = directive.transformer(
    makeExecutableSchema({
      typeDefs: [
        directive.typeDefs,
        'type Query { slow: Boolean @rateLimit(action: "lost", limit: 2, window: 20, algorithm: CONCURRENCY) }',
      ],
      resolvers: { Query: { slow: slow.resolve } },
    }),
  );
  const free = async () => (await directive.peek({ identity: 'team-1', action: 'lost' }))[0];
  const before = await scriptCalls(admin);
  // every client waits 1 s: the hit is answered by Redis after its 300 ms deadline
  await admin.call('CLIENT', 'PAUSE', '1000', 'ALL');
  const lost = await run(schema, '{ slow }');
  expect(codes(lost)).toEqual(['RATE_LIMIT_UNAVAILABLE']);
  expect(slow.running).toBe(0);
  // the late answer arrived (the hit ran), and the slot it took was released
  await waitFor('the late hit to run', async () => (await scriptCalls(admin)) > before, 5_000);
  await waitFor('both slots free', async () => (await free())?.remaining === 2, 5_000);
  // and both are there to take: two calls run at once
  const calls = [run(schema, '{ slow }'), run(schema, '{ slow }')];
  await waitFor('two calls running', () => slow.running === 2, 5_000);
  expect(codes(await run(schema, '{ slow }'))).toEqual(['RATE_LIMITED']);
  slow.open();
  expect((await Promise.all(calls)).map((r) => r.data)).toEqual([{ slow: true }, { slow: true }]);
  await store.close?.();
});
