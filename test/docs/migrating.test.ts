import { migratedSchema } from '../../examples/one-counter-per-field';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { codes, run } from '../support/schema';
import { openedRedisStore } from '../support/stores';

/*
 * docs/migrating.md: graphql-rate-limit-directive's default, one counter per field for every
 * caller, is `identify: () => 'all'` (examples/one-counter-per-field.ts). An app migrated with it
 * neither refuses anonymous callers nor gives each caller a counter of its own.
 */

afterAll(() => closeClients());

test('anonymous and signed-in callers share the one counter of the field', async () => {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  const schema = migratedSchema(store);
  const submit = 'mutation { submitFlag(flag: "CTF{x}") }';
  const answers = [];
  for (const context of [{}, { team: { id: 'a' } }, {}, { team: { id: 'b' } }]) {
    const result = await run(schema, submit, context);
    answers.push(result.data?.submitFlag ?? codes(result)[0]);
  }
  expect(answers).toEqual([false, false, false, 'RATE_LIMITED']);
  await store.close?.();
});
