import { randomUUID } from 'node:crypto';

import { Kind, parse, type InlineFragmentNode, type OperationDefinitionNode } from 'graphql';

import * as estimator from '../../src/cost/estimate';
import { onlyIntrospection } from '../../src/budget/free';
import { codeOf, budgetPerTest, SERVER_KINDS, type ServerKind } from '../support/budget-servers';
import {
  conditionedFragments,
  deepFields,
  doubledFragments,
  wideAliases,
} from '../../kit/hostile-documents';
import { closeClients } from '../support/redis';

/*
 * A caller the budget cannot identify never reaches the estimator: the budget reads the identity
 * first and answers UNAUTHENTICATED, whatever the document, so documents built to make pricing
 * slow cost an anonymous client nothing but their parse. A query of introspection fields and
 * `__typename` alone stays free for anyone, told apart by one pass over its root selections.
 * Each call of an estimator the budget makes is counted through the estimator module.
 */

afterAll(closeClients);
afterEach(() => jest.restoreAllMocks());

const HOURLY = { limit: 100, window: 3600 };

/** Counts every call of every estimator made from now on. */
function countEstimates(): { calls: number } {
  const counted = { calls: 0 };
  const create = estimator.createCostEstimator;
  jest.spyOn(estimator, 'createCostEstimator').mockImplementation((schema, options) => {
    const estimate = create(schema, options);
    return (...args) => (counted.calls++, estimate(...args));
  });
  return counted;
}

const HOSTILE: [string, string][] = [
  ['spreads under their own @include, 60 levels', conditionedFragments(60)],
  ['a fragment spread twice at each of 30 levels', doubledFragments(30)],
  ['fields nested 200 deep', deepFields(200)],
  ['2,000 aliases', wideAliases(2_000)],
];

describe.each(SERVER_KINDS)('%s', (kind: ServerKind) => {
  let estimates: { calls: number };
  const suite = budgetPerTest(kind, HOURLY);
  const serve = () => {
    estimates = countEstimates();
    return suite.serve();
  };

  test.each(HOSTILE)('%s, anonymous: UNAUTHENTICATED, never priced', async (_what, query) => {
    const s = await serve();
    const answer = await s.run(query);
    expect(codeOf(answer)).toBe('UNAUTHENTICATED');
    expect(answer.body.extensions?.cost).toBeUndefined();
    expect({ estimates: estimates.calls, items: s.runs.items }).toEqual({ estimates: 0, items: 0 });
    // the same document from a caller with an identity is priced: the count sees the estimator
    await s.run(query, `team-${randomUUID()}`);
    expect(estimates.calls).toBe(1);
  });

  test.each([
    ['{ __typename }', { __typename: 'Query' }],
    ['{ __schema { queryType { name } } }', { __schema: { queryType: { name: 'Query' } } }],
    [
      'query { ...T ... on Query { __type(name: "Item") { name } } } fragment T on Query { __typename }',
      { __typename: 'Query', __type: { name: 'Item' } },
    ],
  ])('anonymous %s: answered for free, never priced', async (query, data) => {
    const s = await serve();
    const answer = await s.run(query);
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data).toEqual(data);
    expect(answer.body.extensions?.cost).toMatchObject({ requestedQueryCost: 0 });
    expect(estimates.calls).toBe(0);
  });

  test.each([
    '{ __typename items(first: 1) { id } }',
    'query { ...T } fragment T on Query { __typename ... on Query { heavy { id } } }',
    'mutation { __typename }',
  ])('anonymous %s: not only introspection, UNAUTHENTICATED', async (query) => {
    const s = await serve();
    expect(codeOf(await s.run(query))).toBe('UNAUTHENTICATED');
    expect({ estimates: estimates.calls, items: s.runs.items }).toEqual({ estimates: 0, items: 0 });
  });
});

describe('telling a query of introspection fields alone', () => {
  const only = (source: string) => {
    const document = parse(source);
    return onlyIntrospection(document, document.definitions[0] as OperationDefinitionNode);
  };

  test('a fragment spread twice at each of 60 levels is read once per fragment', () => {
    const source = doubledFragments(60, '__typename');
    const document = parse(source);
    let reads = 0;
    const definitions = document.definitions.map((definition) =>
      definition.kind === Kind.FRAGMENT_DEFINITION
        ? Object.defineProperty({ ...definition }, 'selectionSet', {
            get: () => (reads++, definition.selectionSet),
          })
        : definition,
    );
    const counted = { ...document, definitions };
    expect(onlyIntrospection(counted, definitions[0] as OperationDefinitionNode)).toBe(true);
    expect(reads).toBe(61);
  });

  test('inline fragments nested 5,000 deep: no recursion, no RangeError', () => {
    // deeper than graphql's parser goes: the document is built by hand
    const operation = parse('{ __typename }').definitions[0] as OperationDefinitionNode;
    let selectionSet = operation.selectionSet;
    for (let i = 0; i < 5_000; i++) {
      const inline: InlineFragmentNode = { kind: Kind.INLINE_FRAGMENT, selectionSet };
      selectionSet = { kind: Kind.SELECTION_SET, selections: [inline] };
    }
    const deep = { ...operation, selectionSet };
    expect(onlyIntrospection({ kind: Kind.DOCUMENT, definitions: [deep] }, deep)).toBe(true);
  });

  test.each([
    ['{ __typename __schema { types { name } } }', true],
    ['{ __typename items(first: 1) { id } }', false],
    ['{ ...Missing }', false],
    ['subscription { __typename }', false],
  ])('%s: %s', (source, expected) => {
    expect(only(source)).toBe(expected);
  });
});
