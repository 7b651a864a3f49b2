import { makeExecutableSchema } from '@graphql-tools/schema';
import {
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
} from 'graphql';

import { RateLimitConfigError } from '../../src';
import {
  checkCostDirectives,
  costTypeDefs,
  createCostEstimator,
  estimateCost,
} from '../../src/cost';
import { costSchema } from '../support/cost-schema';

/*
 * The cost directives: their SDL, their checks at schema build (errors name Type.field), and
 * their reading from SDL and from `extensions.directives` (code-first) alike.
 */

const sdl = (typeDefs: string) => makeExecutableSchema({ typeDefs: [costTypeDefs(), typeDefs] });
const CONNECTION = `
  type Item { id: ID }
  type Edge { node: Item }
  type Connection { edges: [Edge] pageInfo: Item count: Int }
`;

test('the SDL declares @cost and @listSize as Apollo Router does', () => {
  const schema = sdl('type Query { a: Int }');
  expect(String(schema.getDirective('cost'))).toBe('@cost');
  expect(schema.getDirective('cost')?.locations.slice().sort()).toEqual(
    [
      'ARGUMENT_DEFINITION',
      'ENUM',
      'FIELD_DEFINITION',
      'INPUT_FIELD_DEFINITION',
      'OBJECT',
      'SCALAR',
    ].sort(),
  );
  expect(String(schema.getDirective('cost')?.args[0]?.type)).toBe('Int!');
  const listSize = schema.getDirective('listSize');
  expect(listSize?.locations).toEqual(['FIELD_DEFINITION']);
  expect(listSize?.args.map((a) => `${a.name}: ${String(a.type)}`)).toEqual([
    'assumedSize: Int',
    'slicingArguments: [String!]',
    'sizedFields: [String!]',
    'requireOneSlicingArgument: Boolean',
  ]);
  expect(listSize?.args[3]?.defaultValue).toBe(true);
});

test('a schema that uses every directive correctly passes', () => {
  expect(() => checkCostDirectives(costSchema())).not.toThrow();
});

describe('a bad @listSize fails at schema build, naming the field', () => {
  test.each([
    [
      'a slicing argument the field does not have',
      'type Query { items(first: Int): [Item] @listSize(slicingArguments: ["count"]) }',
      /^Query\.items: @listSize slicingArguments names "count", which is not an Int argument of the field$/,
    ],
    [
      'a slicing argument that is not an Int',
      'type Query { items(first: String): [Item] @listSize(slicingArguments: ["first"]) }',
      /^Query\.items: @listSize slicingArguments names "first", .* \(it is String\)$/,
    ],
    [
      'a slicing argument that is a list of Int',
      'type Query { items(first: [Int]): [Item] @listSize(slicingArguments: ["first"]) }',
      /^Query\.items: @listSize slicingArguments names "first"/,
    ],
    [
      'a sized field that is not a list',
      'type Query { items(first: Int!): Connection @listSize(slicingArguments: ["first"], sizedFields: ["pageInfo"]) }',
      /^Query\.items: @listSize sizedFields names "pageInfo", which is not a list field of Connection$/,
    ],
    [
      'a sized field the returned type does not have',
      'type Query { items(first: Int!): Connection @listSize(slicingArguments: ["first"], sizedFields: ["nodes"]) }',
      /^Query\.items: @listSize sizedFields names "nodes", which is not a list field of Connection$/,
    ],
    [
      'on an object field that returns no list',
      'type Query { item: Item @listSize(assumedSize: 3) }',
      /^Query\.item: @listSize is on a field that returns no list \(Item\)/,
    ],
    [
      'a negative assumedSize',
      'type Query { items: [Item] @listSize(assumedSize: -1) }',
      /^Query\.items: @listSize assumedSize must be an integer >= 0, got -1$/,
    ],
    [
      'on a field of an object type below the root',
      'type Query { item: Item } extend type Item { more: [Item] @listSize(slicingArguments: ["n"]) }',
      /^Item\.more: @listSize slicingArguments names "n"/,
    ],
  ])('%s', (_what, typeDefs, message) => {
    const schema = sdl(CONNECTION + typeDefs);
    expect(() => checkCostDirectives(schema)).toThrow(RateLimitConfigError);
    expect(() => checkCostDirectives(schema)).toThrow(message);
    // The estimator checks too, before it prices anything.
    expect(() => createCostEstimator(schema)).toThrow(message);
  });
});

describe('code-first schemas carry the directives in extensions.directives', () => {
  const item = new GraphQLObjectType({
    name: 'Item',
    extensions: { directives: { cost: { weight: 4 } } },
    fields: { id: { type: GraphQLString } },
  });
  const connection = new GraphQLObjectType({
    name: 'Connection',
    fields: { edges: { type: new GraphQLList(item) }, total: { type: GraphQLInt } },
  });
  const build = (listSize: Record<string, unknown>, weight: unknown = 2) =>
    new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          items: {
            type: new GraphQLNonNull(connection),
            args: { first: { type: GraphQLInt } },
            extensions: { directives: { listSize } },
          },
          slow: { type: GraphQLInt, extensions: { directives: { cost: [{ weight }] } } },
        },
      }),
    });

  test('they price as their SDL twin would', () => {
    const schema = build({ slicingArguments: ['first'], sizedFields: ['edges'] });
    expect(() => checkCostDirectives(schema)).not.toThrow();
    // connection 1 + edges 3 × item 4 + slow 2
    expect(estimateCost(schema, parse('{ items(first: 3) { edges { id } } slow }'))).toBe(15);
    // requireOneSlicingArgument defaults to true without the SDL's default
    expect(() => estimateCost(schema, parse('{ items { total } }'))).toThrow(/Query\.items/);
  });

  test('and are checked the same', () => {
    const schema = build({ slicingArguments: ['first'], sizedFields: ['total'] });
    expect(() => checkCostDirectives(schema)).toThrow(
      'Query.items: @listSize sizedFields names "total", which is not a list field of Connection',
    );
  });

  test('a weight that is not an integer is refused', () => {
    const schema = build({ slicingArguments: ['first'], sizedFields: ['edges'] }, '2.0');
    expect(() => checkCostDirectives(schema)).toThrow(
      'Query.slow: @cost(weight: "2.0") must be an integer',
    );
  });
});
