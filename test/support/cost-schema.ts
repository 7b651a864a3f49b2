import { makeExecutableSchema } from '@graphql-tools/schema';

import { costTypeDefs } from '../../src/cost';

/**
 * A schema that uses every part of the cost spec once, for the cost tests. Weights that differ
 * from the defaults: Post 3, Color 2, Timestamp 3, User.avatar 5, Query.expensive 7, the `filter`
 * argument 4, Filter.tags 2 (per tag), Node.thumbnail 2 (which its implementations inherit).
 * Lists: users and friends by slicing, posts assumedSize 4, page default 20, search assumedSize
 * 5, everything the default (listSize).
 */
export const COST_SDL = /* GraphQL */ `
  type Query {
    viewer: User
    node(id: ID!): Node
    users(first: Int, last: Int): [User!]! @listSize(slicingArguments: ["first", "last"])
    usersLoose(first: Int, last: Int): [User!]!
      @listSize(slicingArguments: ["first", "last"], requireOneSlicingArgument: false)
    page(limit: Int = 20): [Post!]! @listSize(slicingArguments: ["limit"])
    everything: [Post!]!
    search(term: String!): [SearchResult!]! @listSize(assumedSize: 5)
    usersConnection(first: Int, after: String): UserConnection!
      @listSize(slicingArguments: ["first"], sizedFields: ["edges"])
    expensive: Int @cost(weight: 7)
    report(filter: Filter @cost(weight: 4)): Int
    color: Color
    when: Timestamp
    matrix: [[Int!]!]! @cost(weight: 1) @listSize(assumedSize: 2)
  }

  type Mutation {
    rename(id: ID!, name: String!): User
  }

  interface Node {
    id: ID!
    thumbnail: Image @cost(weight: 2)
  }

  type User implements Node {
    id: ID!
    name: String
    best: User
    friends(first: Int): [User!]!
      @listSize(slicingArguments: ["first"], requireOneSlicingArgument: false)
    posts: [Post!]! @listSize(assumedSize: 4)
    avatar: Image @cost(weight: 5)
    thumbnail: Image
  }

  type Post implements Node @cost(weight: 3) {
    id: ID!
    title: String
    author: User!
    thumbnail: Image
  }

  type Image {
    url: String
  }

  union SearchResult = User | Post

  type UserConnection {
    edges: [UserEdge!]!
    pageInfo: PageInfo!
  }

  type UserEdge {
    cursor: String!
    node: User!
  }

  type PageInfo {
    hasNextPage: Boolean!
  }

  input Filter {
    since: Timestamp
    tags: [String!] @cost(weight: 2)
    range: Range
  }

  input Range {
    from: Int
    to: Int
  }

  enum Color @cost(weight: 2) {
    RED
    GREEN
  }

  scalar Timestamp @cost(weight: 3)
`;

/** {@link COST_SDL} built as an application builds its schema, with the cost directives' SDL. */
export const costSchema = () => makeExecutableSchema({ typeDefs: [costTypeDefs(), COST_SDL] });
