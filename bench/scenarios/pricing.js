'use strict';
/* 11. What pricing an operation costs (bench/estimate-bench.js, one process, no Redis). */

const { join } = require('node:path');

const { runJson } = require('../children');
const { log } = require('../settings');
const { fmt, table } = require('../stats');

async function pricing() {
  log('pricing: the cost estimate, cold and cached, and the actual cost of a result');
  return runJson(join(__dirname, '..', 'estimate-bench.js'), [], {
    profile: 'pricing',
    timeoutMs: 180_000,
    env: { NODE_ENV: 'production' },
  });
}

const ROWS = [
  ['parseOnly', 'graphql parse() of the document alone (for scale)'],
  ['cold', 'estimate of a new document: parse + compile + price'],
  ['cachedNoVariables', 'estimate of the same document object again, no variables'],
  ['cachedVariables', 'estimate of the same document object again, with variables'],
  ['actual', "actualCost of a result (the refund's price)"],
];

/** The report's section for pricing. */
function pricingSection(result) {
  return [
    `### 11. Pricing an operation (us per call, median of 7 runs; estimate ${fmt(result.estimate)} points)`,
    '',
    table(
      ['what', 'us per call'],
      ROWS.map(([key, name]) => [name, fmt(result[key])]),
    ),
    '',
  ];
}

module.exports = { pricing, pricingSection };
