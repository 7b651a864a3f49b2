'use strict';
/*
 * What pricing an operation costs (`node bench/estimate-bench.js`, after `npm run build`): the
 * static estimate of a document the first time (parse + compile + cost) and again for the same
 * document object (the cached plan), with and without variables, and `actualCost` of a result;
 * then the worst documents we could build (kit/hostile-documents.js), each priced
 * or refused on a new document object, and the plugins' check of a document's text before it is
 * parsed. One process, no Redis; prints one JSON object: microseconds per call (median of 7
 * runs), and under `worst` for each document its size, what pricing answered (the estimate or
 * the refusal's reason), and milliseconds (median of 7) of graphql's `parse` of it (for
 * scale), and of the wall and CPU time of pricing it.
 */

const { parse } = require('graphql');
const { makeExecutableSchema } = require('@graphql-tools/schema');

const { actualCost, costTypeDefs, createCostEstimator } = require('../dist/cost');
const { sourceTooDeep } = require('../dist/cost/bounds');
const hostile = require('../kit/hostile-documents');

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
        friends(first: Int): [User!]! @listSize(slicingArguments: ["first"])
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

const ONE = 'users(first: 1) { id }';
const DEEP = { root: 'users(first: 1)', child: 'friends(first: 1)' };
const WORST = {
  'fragments spread twice at each of 60 levels': hostile.doubledFragments(60, ONE),
  '60 fragments, each spreading every later one': hostile.denseFragments(60, ONE),
  'spreads under their own @include, 12 levels (4,096 conjunctions)': hostile.conditionedFragments(
    12,
    ONE,
  ),
  'spreads under their own @include, 13 levels': hostile.conditionedFragments(13, ONE),
  'spreads under their own @include, 60 levels': hostile.conditionedFragments(60, ONE),
  'fields nested 127 deep': hostile.deepFields(126, DEEP),
  'inline fragments nested 200 deep': hostile.deepInlineFragments(200, ONE),
  '5,000 aliases': hostile.wideAliases(5_000, ONE),
  '1,000 aliases of 100 fields nested 100 deep': hostile.wideAliases(
    1_000,
    hostile.deepFields(98, DEEP).slice(2, -2),
  ),
};

/** What pricing `source` answers on a new document object, and how long it takes. */
function priced(source) {
  const parsing = process.hrtime.bigint();
  const document = parse(source);
  const parseMs = Number(process.hrtime.bigint() - parsing) / 1e6;
  const wall = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  let answer;
  try {
    answer = estimate(document);
  } catch (error) {
    answer = error.extensions?.reason ?? error.extensions?.code ?? String(error);
  }
  const used = process.cpuUsage(cpu);
  const wallMs = Number(process.hrtime.bigint() - wall) / 1e6;
  return { answer, parseMs, wallMs, cpuMs: (used.user + used.system) / 1000 };
}

result.worst = {};
for (const [name, source] of Object.entries(WORST)) {
  const rounds = Array.from({ length: 7 }, () => priced(source));
  result.worst[name] = {
    bytes: source.length,
    answer: rounds[0].answer,
    parseMs: median(rounds.map((r) => r.parseMs)),
    wallMs: median(rounds.map((r) => r.wallMs)),
    cpuMs: median(rounds.map((r) => r.cpuMs)),
  };
}
// what the plugins with a budget do before parsing: a pass over the text of 5,000 levels
const tooDeep = hostile.deepInlineFragments(5_000, ONE);
result.worst['5,000 levels, refused from the text before parsing'] = {
  bytes: tooDeep.length,
  answer: sourceTooDeep(tooDeep)?.extensions.reason,
  wallMs:
    median(Array.from({ length: 7 }, () => perCall(() => sourceTooDeep(tooDeep), 100))) / 1000,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
