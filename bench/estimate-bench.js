'use strict';
/*
 * What pricing an operation costs (`node bench/estimate-bench.js`, after `npm run build`): the
 * static estimate of a document the first time (parse + compile + cost) and again for the same
 * document object (the cached plan), with and without variables, and `actualCost` of a result.
 * One process, no Redis; prints one JSON object of microseconds per call (median of 7 runs).
 */

const { parse } = require('graphql');
const { makeExecutableSchema } = require('@graphql-tools/schema');

const { actualCost, costTypeDefs, createCostEstimator } = require('../dist/cost');

const schema = makeExecutableSchema({
  typeDefs: [
    costTypeDefs(),
    /* GraphQL */ `
      type Query {
        users(first: Int): [User!]! @listSize(slicingArguments: ["first"])
      }
      type User {
        id: ID!
        name: String!
        posts(first: Int): [Post!]! @listSize(slicingArguments: ["first"])
      }
      type Post @cost(weight: 3) {
        id: ID!
        title: String!
        author: User!
      }
    `,
  ],
});
const SOURCE = `query ($n: Int = 5) {
  users(first: $n) { id name posts(first: 10) { id title author { id name } } }
}`;
const variables = { n: 20 };

function perCall(fn, count) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i++) fn(i);
  return Number(process.hrtime.bigint() - started) / 1000 / count;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const estimate = createCostEstimator(schema, {});
const cached = parse(SOURCE);
const data = {
  users: Array.from({ length: 3 }, (_, i) => ({
    id: String(i),
    name: 'n',
    posts: [{ id: 'p', title: 't', author: { id: 'a', name: 'n' } }],
  })),
};
const runs = { cold: [], parseOnly: [], cachedNoVariables: [], cachedVariables: [], actual: [] };
for (let round = 0; round < 7; round++) {
  runs.parseOnly.push(perCall(() => parse(SOURCE), 2_000));
  runs.cold.push(perCall(() => estimate(parse(SOURCE), variables), 2_000));
  runs.cachedNoVariables.push(perCall(() => estimate(cached, undefined), 200_000));
  runs.cachedVariables.push(perCall(() => estimate(cached, variables), 200_000));
  runs.actual.push(perCall(() => actualCost(schema, cached, data, { variables }), 20_000));
}
const result = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)]));
result.estimate = estimate(cached, variables);
process.stdout.write(`${JSON.stringify(result)}\n`);
