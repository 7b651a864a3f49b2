import { parse } from 'graphql';

import { CostQueryError, estimateCost } from '../../src/cost';
import { costSchema } from '../support/cost-schema';

/*
 * The static estimate of operations on the cost test schema (see support/cost-schema.ts for its
 * weights), each against a value worked out by hand: objects 1, leaves 0, lists × their size.
 */

const schema = costSchema();
const estimate = (query: string, variables?: Record<string, unknown>, operationName?: string) =>
  estimateCost(schema, parse(query), { variables, operationName });

// [what, operation, variables, expected: arithmetic in the comment]
const table: Array<[string, string, Record<string, unknown> | undefined, number]> = [
  ['an object and its leaves', '{ viewer { id name } }', undefined, 1], // viewer 1 + leaves 0
  ['a slicing argument', '{ users(first: 5) { id } }', undefined, 5], // 5 × 1
  // 5 × (user 1 + 3 × friend 1)
  ['lists in lists', '{ users(first: 5) { friends(first: 3) { id } } }', undefined, 20],
  // 2 × (user 1 + posts 4 × (post 3 + author 1))
  [
    'assumedSize and @cost on a type',
    '{ users(first: 2) { posts { author { id } } } }',
    undefined,
    34,
  ],
  ['the default list size', '{ everything { id } }', undefined, 30], // 10 × post 3
  // first: 2, last: 7: the largest wins, 7 × 1
  ['several slicing arguments', '{ usersLoose(first: 2, last: 7) { id } }', undefined, 7],
  [
    'several slicing arguments, the first largest',
    '{ usersLoose(first: 9, last: 4) { id } }',
    undefined,
    9,
  ],
  ['no slicing argument, none required', '{ usersLoose { id } }', undefined, 10], // 10 × 1
  ["a slicing argument's default", '{ page { id } }', undefined, 60], // limit = 20 × post 3
  ['a slicing argument over its default', '{ page(limit: 2) { id } }', undefined, 6], // 2 × 3
  ['a slicing variable', 'query ($n: Int) { users(first: $n) { id } }', { n: 4 }, 4], // 4 × 1
  ["a slicing variable's default", 'query ($n: Int = 6) { users(first: $n) { id } }', {}, 6],
  // connection 1 + edges 5 × (edge 1 + node 1) + pageInfo 1
  [
    'sized fields',
    '{ usersConnection(first: 5) { edges { node { id } } pageInfo { hasNextPage } } }',
    undefined,
    12,
  ],
  // connection 1 + edges 5 × edge 1, through a named fragment
  [
    'sized fields in a fragment',
    'query { usersConnection(first: 5) { ...C } } fragment C on UserConnection { edges { cursor } }',
    undefined,
    6,
  ],
  ['@cost on a field', '{ expensive }', undefined, 7], // 7
  ['@cost on an object field', '{ viewer { avatar { url } } }', undefined, 6], // viewer 1 + avatar 5
  ['@cost on an enum and a scalar', '{ color when }', undefined, 5], // Color 2 + Timestamp 3
  ['@cost on a type behind an interface', '{ node(id: 1) { id } }', undefined, 3], // max(User 1, Post 3)
  // max(User 1, Post 3) + thumbnail 2, the weight its interface gives
  ['@cost on an interface field', '{ node(id: 1) { thumbnail { url } } }', undefined, 5],
  // max(User 1 + avatar 5, Post 3 + author 1)
  [
    'inline fragments on an interface',
    '{ node(id: 1) { id ... on User { avatar { url } } ... on Post { author { id } } } }',
    undefined,
    6,
  ],
  // 5 × max(User 1 + friends 3 × 1, Post 3 + 0)
  [
    'inline fragments on a union',
    '{ search(term: "x") { ... on User { friends(first: 3) { id } } ... on Post { title } } }',
    undefined,
    20,
  ],
  // 5 × max(User 1 + 0, Post 3 + author 1): a fragment on the interface reaches both
  [
    'a named fragment on an interface inside a union',
    'query { search(term: "x") { ...N } } fragment N on Node { ... on Post { author { id } } }',
    undefined,
    20,
  ],
  // viewer 1 + posts 4 × post 3
  [
    'a named fragment',
    'query { viewer { ...U } } fragment U on User { posts { id } }',
    undefined,
    13,
  ],
  ['aliases run twice', '{ a: viewer { id } b: viewer { id } }', undefined, 2], // 1 + 1
  ['one response key runs once', '{ viewer { id } viewer { name } }', undefined, 1], // merged: 1
  ['__typename is free', '{ __typename viewer { __typename } }', undefined, 1], // viewer 1
  [
    'literal @skip and @include',
    '{ viewer @skip(if: true) { id } expensive @include(if: true) }',
    undefined,
    7,
  ],
  // a = true: viewer 1; expensive skipped
  [
    '@include and @skip with a variable (true)',
    'query ($a: Boolean!) { viewer @include(if: $a) { id } expensive @skip(if: $a) }',
    { a: true },
    1,
  ],
  [
    '@include and @skip with a variable (false)',
    'query ($a: Boolean!) { viewer @include(if: $a) { id } expensive @skip(if: $a) }',
    { a: false },
    7,
  ],
  [
    '@include on an inline fragment',
    'query ($a: Boolean = true) { ... @include(if: $a) { expensive } }',
    {},
    7,
  ],
  // viewer kept by $b only: 1; avatar, asked under $a, is not counted
  [
    'one response key under two conditions',
    'query ($a: Boolean!, $b: Boolean!) { viewer @include(if: $a) { avatar { url } } viewer @include(if: $b) { id } }',
    { a: false, b: true },
    1,
  ],
  [
    'one response key under two conditions, both kept',
    'query ($a: Boolean!, $b: Boolean!) { viewer @include(if: $a) { avatar { url } } viewer @include(if: $b) { id } }',
    { a: true, b: true },
    6, // viewer 1 + avatar 5
  ],
  ['an argument with @cost, not given', '{ report }', undefined, 0],
  ['an input object argument with @cost', '{ report(filter: {}) }', undefined, 4], // filter 4
  // filter 4 + tags 2 × 2 + range (input object) 1 + from 0
  ['input fields', '{ report(filter: { tags: ["a", "b"], range: { from: 1 } }) }', undefined, 9],
  ['an input field of a weighted scalar', '{ report(filter: { since: "2024" }) }', undefined, 7], // 4 + Timestamp 3
  [
    'an argument from a variable',
    'query ($f: Filter) { report(filter: $f) }',
    { f: { tags: ['a'] } },
    6,
  ], // 4 + 2
  ['an argument from an unset variable', 'query ($f: Filter) { report(filter: $f) }', {}, 0],
  ['a mutation', 'mutation { rename(id: 1, name: "x") { id } }', undefined, 11], // 10 + user 1
  ['a list of lists', '{ matrix }', undefined, 4], // 2 × 2 items × weight 1
];

test.each(table)('%s', (_what, query, variables, expected) => {
  expect(estimate(query, variables)).toBe(expected);
});

test('the operation is chosen by name', () => {
  const query = 'query A { expensive } query B { viewer { id } }';
  expect(estimate(query, undefined, 'A')).toBe(7);
  expect(estimate(query, undefined, 'B')).toBe(1);
  expect(() => estimate(query)).toThrow(CostQueryError);
  expect(() => estimate(query, undefined, 'C')).toThrow(/Unknown operation named "C"/);
});

test('the default list size is an option', () => {
  const document = parse('{ everything { id } }');
  expect(estimateCost(schema, document, { listSize: 2 })).toBe(6); // 2 × post 3
  expect(estimateCost(schema, document)).toBe(30); // 10 × 3, not mixed up with the other
  expect(
    estimateCost(schema, parse('mutation { rename(id: 1, name: "x") { id } }'), {
      mutationCost: 0,
    }),
  ).toBe(1);
});

describe('requireOneSlicingArgument', () => {
  test.each([
    ['none', '{ users { id } }', {}],
    ['two', '{ users(first: 1, last: 2) { id } }', {}],
    ['an unset variable', 'query ($n: Int) { users(first: $n) { id } }', {}],
    ['a null variable', 'query ($n: Int) { users(first: $n) { id } }', { n: null }],
  ])('%s given: the operation cannot be priced', (_what, query, variables) => {
    let caught: unknown;
    try {
      estimate(query, variables);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CostQueryError);
    expect((caught as CostQueryError).extensions.code).toBe('COST_QUERY_PARSE_FAILURE');
    expect((caught as Error).message).toMatch(/^Query\.users: exactly one slicing argument/);
  });
});
