import { makeExecutableSchema } from '@graphql-tools/schema';
import { graphql } from 'graphql';

import { createMemoryStore, rateLimitDirective, WARNING_CODES } from '../../src';

/*
 * Every process warning carries its code from WARNING_CODES, which the root exports, so a
 * process can tell them apart (`process.on('warning', (w) => w.code)`) and troubleshooting can
 * name them.
 */

let emitWarning: jest.SpyInstance;
beforeEach(() => {
  emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
});
afterEach(() => emitWarning.mockRestore());

const codes = (): unknown[] =>
  emitWarning.mock.calls.map(([, options]) => (options as { code?: string } | undefined)?.code);

const limited = (options: Partial<Parameters<typeof rateLimitDirective>[0]> = {}) => {
  const { typeDefs, transformer } = rateLimitDirective({ store: createMemoryStore(), ...options });
  return transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        'type Query { a: Int } type Mutation { go: Boolean @rateLimit(action: "go", window: 60, limit: 1000) }',
      ],
      resolvers: { Mutation: { go: () => true } },
    }),
  );
};

test('an identity missing on every hit: MISSING_IDENTITY', async () => {
  const schema = limited();
  for (let i = 0; i < 100; i++) {
    await graphql({ schema, source: 'mutation { go }', contextValue: {} });
  }
  expect(codes()).toEqual([WARNING_CODES.MISSING_IDENTITY]);
});

test('an onDecision that throws: ON_DECISION_THREW', async () => {
  const schema = limited({
    onDecision: () => {
      throw new Error('hook');
    },
  });
  await graphql({ schema, source: 'mutation { go }', contextValue: { team: { id: 't' } } });
  expect(codes()).toEqual([WARNING_CODES.ON_DECISION_THREW]);
});

test('the codes are distinct and prefixed', () => {
  const values = Object.values(WARNING_CODES);
  expect(new Set(values).size).toBe(values.length);
  expect(values.filter((code) => !code.startsWith('GRAPHQL_RATE_LIMIT_'))).toEqual([]);
});
