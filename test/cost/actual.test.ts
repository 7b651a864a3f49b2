import { makeExecutableSchema } from '@graphql-tools/schema';
import { execute, parse, validate } from 'graphql';

import { actualCost, costTypeDefs, estimateCost } from '../../src/cost';
import { COST_SDL } from '../support/cost-schema';

/*
 * The actual cost of an operation, from the data it returned: the estimate's formula with the
 * real list lengths. The data comes from executing the operation on the cost test schema.
 */

const user = (id: number, posts = 0, friends: number[] = []) => ({
  id,
  name: `u${id}`,
  avatar: id % 2 ? { url: `/${id}` } : null,
  posts: Array.from({ length: posts }, (_, i) => ({
    id: `${id}-${i}`,
    title: 't',
    author: { id },
  })),
  friends: () => friends.map((f) => user(f)),
});
const people = [user(1, 2, [2, 3]), user(2, 0), user(3, 1, [1])];

const schema = makeExecutableSchema({
  typeDefs: [costTypeDefs(), COST_SDL],
  resolvers: {
    Query: {
      users: (_: unknown, { first }: { first?: number }) => people.slice(0, first),
      viewer: () => people[0],
      node: (_: unknown, { id }: { id: string }) =>
        id === 'p' ? { id: 'p', title: 't', author: people[0] } : people[Number(id) - 1],
      search: () => [people[1], { id: 'p', title: 't', author: people[0] }],
      expensive: () => 1,
    },
    Mutation: { rename: (_: unknown, { id }: { id: string }) => people[Number(id) - 1] ?? null },
    Node: { __resolveType: (o: object) => ('title' in o ? 'Post' : 'User') },
    SearchResult: { __resolveType: (o: object) => ('title' in o ? 'Post' : 'User') },
  },
});

async function both(query: string, variables?: Record<string, unknown>) {
  const document = parse(query);
  const result = await execute({ schema, document, variableValues: variables });
  expect(result.errors).toBeUndefined();
  return {
    estimated: estimateCost(schema, document, { variables }),
    actual: actualCost(schema, document, result.data, { variables }),
  };
}

test('a list that returned 3 of first: 50 costs 3 of its items', async () => {
  // estimated 50 × 1; actual 3 × 1
  expect(await both('{ users(first: 50) { id } }')).toEqual({ estimated: 50, actual: 3 });
});

test('nested lists cost their real lengths', async () => {
  // estimated 50 × (user 1 + posts 4 × post 3 + friends 10 × friend 1) = 50 × 23
  // actual: users 3 + posts (2 + 0 + 1) × 3 + friends (2 + 0 + 1) × 1 = 3 + 9 + 3
  expect(await both('{ users(first: 50) { posts { title } friends { id } } }')).toEqual({
    estimated: 1150,
    actual: 15,
  });
});

test('a null field costs its own weight and nothing below', async () => {
  // user 2 has no avatar: users 2 + avatar 5 (user 1) + avatar 5 (user 2, null)
  const { actual } = await both('{ users(first: 2) { avatar { url } } }');
  expect(actual).toBe(12);
  // a null list and null data cost nothing but their arguments; a mutation keeps its 10
  const document = parse('{ users(first: 2) { id } }');
  expect(actualCost(schema, document, { users: null })).toBe(0);
  expect(actualCost(schema, document, null)).toBe(0);
  expect(actualCost(schema, parse('mutation { rename(id: 9, name: "x") { id } }'), null)).toBe(10);
});

test('fields left out by @skip or @include cost nothing', async () => {
  const query = 'query ($a: Boolean!) { viewer { id avatar @include(if: $a) { url } } }';
  expect(await both(query, { a: false })).toEqual({ estimated: 1, actual: 1 });
  expect(await both(query, { a: true })).toEqual({ estimated: 6, actual: 6 });
});

test('an interface costs the type the data has', async () => {
  const query =
    '{ node(id: $id) { id ... on User { avatar { url } } ... on Post { author { id } } } }';
  const typed = query.replace('{ id', '{ __typename id');
  // estimated max(User 1 + avatar 5, Post 3 + author 1) = 6; a Post costs 3 + 1
  const post = await both(`query ($id: ID!) ${typed}`, { id: 'p' });
  expect(post).toEqual({ estimated: 6, actual: 4 });
  // without __typename, the most expensive type that fits the keys the object has: a Post's
  // keys fit User (1 + no avatar) and Post (3 + author 1)
  expect((await both(`query ($id: ID!) ${query}`, { id: 'p' })).actual).toBe(4);
  // a User with no avatar: exactly 1 when the data names its type, else max(User 1, Post 3)
  expect((await both('{ node(id: 2) { __typename id } }')).actual).toBe(1);
  expect((await both('{ node(id: 2) { id } }')).actual).toBe(3);
});

test('a union costs each item as its type', async () => {
  // estimated 5 × max(User 1 + friends 10 × 1, Post 3 + author 1) = 55
  // actual: user 2 (1 + no friends) + post (3 + author 1)
  const query =
    '{ search(term: "x") { __typename ... on User { friends { id } } ... on Post { author { id } } } }';
  expect(await both(query)).toEqual({ estimated: 55, actual: 5 });
});

test('a field aliased to __typename never names the type: the object costs its most expensive type', async () => {
  // a User whose name is "Post", its name asked for as `__typename`: the data says "Post"
  const attack =
    '{ search(term: "x") { ... on User { __typename: name friends(first: 10) { id } } ... on Post { author { id } } } }';
  const friends = Array.from({ length: 10 }, (_, i) => ({ id: String(i) }));
  const data = { search: [{ __typename: 'Post', friends }] };
  expect(validate(schema, parse(attack))).toEqual([]);
  // estimated 5 × max(User 1 + friends 10, Post 3 + author 1) = 55; the User ran: 1 + 10
  expect(estimateCost(schema, parse(attack))).toBe(55);
  expect(actualCost(schema, parse(attack), data)).toBe(11);
  // the same on an interface, the alias in the cheap type's selections
  const node =
    '{ node(id: 1) { ... on Post { __typename: title } ... on User { avatar { url } } } }';
  expect(validate(schema, parse(node))).toEqual([]);
  expect(actualCost(schema, parse(node), { node: { __typename: 'Post', avatar: null } })).toBe(6);
  // the real __typename, even aliased to itself, still names the type: a Post costs 3 + author 1
  const honest =
    '{ search(term: "x") { __typename: __typename ... on User { friends(first: 10) { id } } ... on Post { author { id } } } }';
  expect(
    actualCost(schema, parse(honest), { search: [{ __typename: 'Post', author: { id: 1 } }] }),
  ).toBe(4);
});

test('arguments and the mutation cost count as in the estimate', async () => {
  // mutation 10 + user 1; the arguments are leaves
  expect(await both('mutation { rename(id: 1, name: "x") { id } }')).toEqual({
    estimated: 11,
    actual: 11,
  });
});
