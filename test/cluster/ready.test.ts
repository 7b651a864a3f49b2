import { createRedisStore } from '../../src';
import { startCluster, type TestCluster } from '../support/cluster';
import { uniquePrefix } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';

/*
 * A store sets itself up (connection, every master's version, its Lua loaded on every master)
 * when it is made, not inside its first hits' deadlines: once `ready()` resolved, a burst on a
 * fresh store with default options is decided exactly, without one RATE_LIMIT_UNAVAILABLE, and
 * so it is after FUNCTION FLUSH and SCRIPT FLUSH (the library and scripts are loaded again, and
 * the calls that found them missing are sent again, counted once).
 */

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

const SDL = `type Query { a: Int }
type Mutation {
  submit: Boolean
    @rateLimit(action: "six", window: 60, limit: 6)
    @rateLimit(action: "four", window: 60, limit: 4)
}`;

/** 50 identities x 6 hits at once: per identity, the codes of its 6 answers, sorted. */
async function burst(prefix: string, store: ReturnType<typeof createRedisStore>) {
  const schema = limitedSchema(SDL, { Mutation: { submit: () => true } }, { store });
  const ids = Array.from({ length: 50 }, (_, i) => `${prefix}team-${i}`);
  const answers = await Promise.all(
    ids.flatMap((id) =>
      Array.from({ length: 6 }, () => run(schema, 'mutation { submit }', { team: { id } })),
    ),
  );
  return ids.map((_, i) =>
    answers
      .slice(i * 6, i * 6 + 6)
      .map((a) => String(codes(a)[0] ?? 'PASSED') + (a.errors?.[0]?.message ?? ''))
      .sort(),
  );
}

const EXACT = ['PASSED', 'PASSED', 'PASSED', 'PASSED', 'RATE_LIMITED', 'RATE_LIMITED'];

test('50 identities x 6 hits at once on a fresh store, after ready(): every identity exact', async () => {
  const client = await cluster.connect();
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  await store.ready?.();
  expect(await burst('', store)).toEqual(Array(50).fill(EXACT));
  await store.close?.();
}, 60_000);

test('after FUNCTION FLUSH and SCRIPT FLUSH on every master, decisions stay exact', async () => {
  const client = await cluster.connect();
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  await store.ready?.();
  for (const node of client.nodes('master')) {
    await node.call('FUNCTION', 'FLUSH');
    await node.call('SCRIPT', 'FLUSH');
  }
  expect(await burst('flushed-', store)).toEqual(Array(50).fill(EXACT));
  // the library is back on every master, and the next burst goes by FCALL
  for (const node of client.nodes('master')) {
    expect(String(await node.call('FUNCTION', 'LIST'))).toMatch(/graphql_atomic_rate_limit_/);
  }
  expect(await burst('again-', store)).toEqual(Array(50).fill(EXACT));
  await store.close?.();
}, 60_000);
