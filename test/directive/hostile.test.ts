import type { RateLimitRule } from '../../src';
import { closeClients, connectRedis, keysUnder, uniquePrefix } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';
import { openedRedisStore } from '../support/stores';

/*
 * Identities and actions chosen to break a naive key scheme: separators, braces (the Cluster
 * hash tag), newlines, unicode, 10 kB strings, and values spelled like other teams' keys.
 * Against a real Redis, each must get its own counter and never touch another's.
 */

afterAll(closeClients);

const HOSTILE = [
  'team',
  'team:submit',
  'team}:submit:f60',
  '{team}',
  '}{',
  '{',
  '}',
  ':',
  '%7D',
  '%',
  'team\nsubmit',
  'équipe 🚩',
  '\u0000',
  ' ',
  'x'.repeat(10_000),
  'rl:{team}:submit:f60',
];

const rule = (action: string): RateLimitRule => ({
  action,
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: 2,
  cost: 1,
});

test('hostile identities each get their own counter, exactly `limit` hits', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const store = await openedRedisStore({ client, prefix });
  const results = await Promise.all(
    HOSTILE.flatMap((id) =>
      Array.from({ length: 4 }, async () => ({
        id,
        allowed: (await store.hit(id, [rule('submit')])).allowed,
      })),
    ),
  );
  for (const id of HOSTILE) {
    expect(results.filter((r) => r.id === id && r.allowed)).toHaveLength(2);
  }
  const keys = await keysUnder(client, prefix);
  expect(keys).toHaveLength(HOSTILE.length);
  for (const key of keys) expect(await client.pttl(key)).toBeGreaterThan(0);
});

test('hostile actions for one identity never share a counter', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const store = await openedRedisStore({ client, prefix });
  for (const action of HOSTILE) {
    const first = await store.hit('team', [rule(action)]);
    expect(first).toMatchObject({ allowed: true, limits: [{ remaining: 1 }] });
  }
  expect(await keysUnder(client, prefix)).toHaveLength(HOSTILE.length);
});

test.each([
  ['a:b', 'c', 'a', 'b:c'],
  ['a}:b', 'c', 'a', 'b}:c'],
  ['a', 'b:f60', 'a:b', 'f60'],
])(
  'identity %j with action %j never meets identity %j with action %j',
  async (id1, a1, id2, a2) => {
    const client = await connectRedis();
    const store = await openedRedisStore({ client, prefix: uniquePrefix() });
    await store.hit(id1, [rule(a1)]);
    await store.hit(id1, [rule(a1)]);
    expect((await store.hit(id1, [rule(a1)])).allowed).toBe(false);
    expect((await store.hit(id2, [rule(a2)])).limits[0]?.remaining).toBe(1);
  },
);

test('numeric identities are counted as their string form', async () => {
  const client = await connectRedis();
  const store = await openedRedisStore({ client, prefix: uniquePrefix() });
  const schema = limitedSchema(
    'type Query { a: Int } type Mutation { go: Boolean @rateLimit(action: "go", window: 60, limit: 1) }',
    { Mutation: { go: () => true } },
    { store, identify: (ctx: { n: number }) => ctx.n },
  );
  expect(codes(await run(schema, 'mutation { go }', { n: 0 }))).toEqual([]);
  expect(codes(await run(schema, 'mutation { go }', { n: 0 }))).toEqual(['RATE_LIMITED']);
  expect(codes(await run(schema, 'mutation { go }', { n: 1 }))).toEqual([]);
});

test('a hostile identity through GraphQL is limited like any other and leaves no key without TTL', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const schema = limitedSchema(
    'type Query { a: Int } type Mutation { go: Boolean @rateLimit(action: "go", window: 60, limit: 1) }',
    { Mutation: { go: () => true } },
    { store: await openedRedisStore({ client, prefix }) },
  );
  for (const id of HOSTILE) {
    const result = await run(schema, 'mutation { a: go b: go }', { team: { id } });
    expect(codes(result)).toEqual(['RATE_LIMITED']);
  }
  const keys = await keysUnder(client, prefix);
  expect(keys).toHaveLength(HOSTILE.length);
});

test('lone surrogates and U+FFFD, which UTF-8 would make one key, are three counters in Redis', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const store = await openedRedisStore({ client, prefix });
  const ids = ['x\uD800', 'x\uDC00', 'x\uFFFD', 'x\uDC00\uD800'];
  for (const id of ids) {
    expect(await store.hit(id, [rule('submit')])).toMatchObject({ limits: [{ remaining: 1 }] });
  }
  expect(await keysUnder(client, prefix)).toHaveLength(ids.length);
});

test('a 1 MB identity costs Redis one short key, and is counted apart from its neighbours', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const store = await openedRedisStore({ client, prefix });
  const huge = `${'a'.repeat(1 << 20)}@example.com`;
  const neighbour = `${'a'.repeat(1 << 20)}@example.org`;
  for (let i = 0; i < 3; i++) await store.hit(huge, [rule('login')]);
  expect((await store.hit(huge, [rule('login')])).allowed).toBe(false);
  expect(await store.hit(neighbour, [rule('login')])).toMatchObject({ allowed: true });
  const keys = await keysUnder(client, prefix);
  expect(keys).toHaveLength(2);
  for (const key of keys) {
    expect(key.length).toBeLessThan(prefix.length + 80);
    expect(await client.memory('USAGE', key)).toBeLessThan(1_000);
  }
});
