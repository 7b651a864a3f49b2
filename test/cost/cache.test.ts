import { parse } from 'graphql';

import { actualCost, createCostEstimator } from '../../src/cost';
import * as collect from '../../src/cost/collect';
import * as listSize from '../../src/cost/list-size';
import * as plan from '../../src/cost/plan';
import { costSchema } from '../support/cost-schema';

/*
 * Pricing a repeated operation costs little: a document object is compiled once, the parts of
 * its plan that depend on no variable are costed once, and a plan reached from many places (a
 * fragment spread everywhere) is compiled and costed once.
 */

const schema = costSchema();
let compile: jest.SpyInstance;
let size: jest.SpyInstance;
beforeEach(() => {
  compile = jest.spyOn(plan, 'compileOperation');
  size = jest.spyOn(listSize, 'expectedSize');
});
afterEach(() => jest.restoreAllMocks());

test('a document object is compiled once, for the estimate and the actual cost', () => {
  const estimate = createCostEstimator(schema);
  const document = parse('{ users(first: 5) { id } }');
  expect(estimate(document)).toBe(5);
  expect(estimate(document)).toBe(5);
  expect(actualCost(schema, document, { users: [{ id: 1 }] })).toBe(1);
  expect(compile).toHaveBeenCalledTimes(1);
  // the cache is keyed by the object: the same text parsed again is compiled again
  expect(estimate(parse('{ users(first: 5) { id } }'))).toBe(5);
  expect(compile).toHaveBeenCalledTimes(2);
});

test('what depends on no variable is costed once; what does is costed per request', () => {
  const estimate = createCostEstimator(schema);
  const fixed = parse('{ users(first: 5) { id } }');
  estimate(fixed);
  estimate(fixed);
  expect(size).toHaveBeenCalledTimes(1);
  size.mockClear();
  const variable = parse('query ($n: Int) { users(first: $n) { id } }');
  expect(estimate(variable, { n: 2 })).toBe(2);
  expect(estimate(variable, { n: 7 })).toBe(7);
  expect(size).toHaveBeenCalledTimes(2);
  expect(compile).toHaveBeenCalledTimes(2);
});

describe('a fragment spread twice at each of 12 levels', () => {
  // F0 … F11 each select `best` twice (aliases a and b) and spread the next; F12 selects `id`.
  // Unshared, that is 2^13 selection sets to compile and to cost; shared, one per fragment.
  const levels = 12;
  const fragments = (last: string) =>
    Array.from(
      { length: levels },
      (_, i) => `fragment F${i} on User { a: best { ...F${i + 1} } b: best { ...F${i + 1} } }`,
    )
      .concat(`fragment F${levels} on User { ${last} }`)
      .join('\n');

  test('is compiled and costed once per fragment', () => {
    const walk = jest.spyOn(collect, 'collectFields');
    const document = parse(`{ viewer { ...F0 } }\n${fragments('id')}`);
    // viewer 1 + 2 + 4 + … + 2^12 objects = 2^13 - 1
    expect(createCostEstimator(schema)(document)).toBe(2 ** 13 - 1);
    // the operation, then one per fragment
    expect(walk).toHaveBeenCalledTimes(levels + 2);
  });

  test('also when it depends on a variable', () => {
    const document = parse(
      `query ($x: Boolean!) { viewer { ...F0 } }\n${fragments('id best @include(if: $x) { id }')}`,
    );
    const estimate = createCostEstimator(schema);
    const kept = jest.spyOn(collect, 'holds');
    expect(estimate(document, { x: false })).toBe(2 ** 13 - 1);
    // each field of each plan is looked at once: viewer, a and b per fragment, id and best
    expect(kept).toHaveBeenCalledTimes(2 * levels + 3);
    // each of the 2^12 innermost users adds one `best`
    expect(estimate(document, { x: true })).toBe(2 ** 13 - 1 + 2 ** 12);
  });
});
