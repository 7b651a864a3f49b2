import { createRedisStore } from '../../src';
import { releaseTogether } from '../support/barrier';
import { CLIENT_FAMILIES, closeClient, dropClient, makeClient } from '../support/clients';
import { freePort, within } from '../support/processes';
import { startRedisServer, uniquePrefix, type RedisProcess } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';

/*
 * Hits made while a store sets itself up wait for that set-up (test/cluster/first-burst.test.ts),
 * but a set-up that cannot finish never holds them past its allowance: with Redis not listening,
 * or refusing the credentials, every hit is answered, RATE_LIMIT_UNAVAILABLE (the default
 * `onStoreError`), while the fault lasts; once Redis is there, the same store is exact.
 */

const SDL = `type Query { a: Int }
type Mutation { hit: Boolean @rateLimit(action: "hit", window: 60, limit: 5) }`;

/** 20 hits at once for a fresh team, their codes sorted ('PASSED' when the field resolved). */
async function hits(store: ReturnType<typeof createRedisStore>, team: string): Promise<string[]> {
  // the deadline generous: these tests are about the set-up's allowance, not a loaded machine
  const schema = limitedSchema(
    SDL,
    { Mutation: { hit: () => true } },
    { store, timeoutMs: 10_000 },
  );
  const answers = await within(
    releaseTogether(20, async () => () => run(schema, 'mutation { hit }', { team: { id: team } })),
    30_000,
    'the hits to be answered',
  );
  return answers.map((a) => (codes(a)[0] as string | undefined) ?? 'PASSED').sort();
}

const UNAVAILABLE = Array<string>(20).fill('RATE_LIMIT_UNAVAILABLE');
const EXACT = [...Array<string>(5).fill('PASSED'), ...Array<string>(15).fill('RATE_LIMITED')];

let server: RedisProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe.each(CLIENT_FAMILIES)('%s', (family) => {
  test('Redis not listening when the store is made: every hit answered, unavailable; exact once it listens', async () => {
    const port = await freePort();
    const { client } = makeClient(family, { url: `redis://127.0.0.1:${port}` });
    try {
      // a short allowance keeps the test short; the default (5 s) bounds the wait alike
      const store = createRedisStore({ client, prefix: uniquePrefix(), setupWaitMs: 1_000 });
      expect(await hits(store, 'down')).toEqual(UNAVAILABLE);
      server = await startRedisServer(port);
      await within(store.ready(), 20_000, 'the store to be set up');
      expect(await hits(store, 'up')).toEqual(EXACT);
      await store.close();
    } finally {
      dropClient(family, client);
    }
  }, 60_000);

  test('credentials refused: every hit answered, unavailable, with the default allowance', async () => {
    server = await startRedisServer(undefined, { args: ['--requirepass', 'right-password'] });
    const url = `redis://:wrong-password@127.0.0.1:${server.port}`;
    const { client } = makeClient(family, { url });
    try {
      const store = createRedisStore({ client, prefix: uniquePrefix() });
      expect(await hits(store, 'refused')).toEqual(UNAVAILABLE);
      await store.close();
    } finally {
      await closeClient(family, client).catch(() => dropClient(family, client));
    }
  }, 60_000);
});
