// @ts-check
'use strict';
/*
 * Documents built to make pricing slow, for the estimator's tests and its benchmark. Each is
 * valid GraphQL that a server accepts on a schema whose `Query` has `field` (for example
 * `items(first: 1) { id }`) and, for `deepFields`, a type with a list field `children` of
 * itself. Sizes in the comments are for the default `field`.
 */

/**
 * `query { ...F0 }` where each Fi spreads Fi+1 twice (i < n) and Fn selects `field`: one field
 * in the response, 2^n paths to it. n = 20 is 0.8 KB and took 4 s and 283 MB to price when each
 * path was collected; n = 24 took 83 s.
 * @param {number} n
 * @param {string} [field]
 */
function doubledFragments(n, field = 'items(first: 1) { id }') {
  const fragments = [];
  for (let i = 0; i < n; i++)
    fragments.push(`fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`);
  fragments.push(`fragment F${n} on Query { ${field} }`);
  return `query { ...F0 }\n${fragments.join('\n')}`;
}

/**
 * The same chain with a variable `@include` on each spread (`$a<i>` on one, `$b<i>` on the
 * other), every variable declared `Boolean! = true`: each of the 2^n paths is reached under its
 * own conjunction of conditions, so collecting each fragment once per conditions saves nothing.
 * @param {number} n
 * @param {string} [field]
 */
function conditionedFragments(n, field = 'items(first: 1) { id }') {
  const variables = [];
  const fragments = [];
  for (let i = 0; i < n; i++) {
    variables.push(`$a${i}: Boolean! = true`, `$b${i}: Boolean! = true`);
    fragments.push(
      `fragment F${i} on Query { ...F${i + 1} @include(if: $a${i}) ...F${i + 1} @include(if: $b${i}) }`,
    );
  }
  fragments.push(`fragment F${n} on Query { ${field} }`);
  return `query (${variables.join(', ')}) { ...F0 }\n${fragments.join('\n')}`;
}

/**
 * `depth` inline fragments `... on Query { }` nested around `field`: as deep as a document gets
 * on any schema.
 * @param {number} depth
 * @param {string} [field]
 */
function deepInlineFragments(depth, field = 'items(first: 1) { id }') {
  return `{ ${'... on Query { '.repeat(depth)}${field}${' }'.repeat(depth)} }`;
}

/**
 * `depth` levels of `child` under `root`, ending in `id`: as deep as fields nest.
 * @param {number} depth
 * @param {{ root?: string, child?: string }} [fields] `root` the outermost field, `child` each
 *   level's, both with their arguments
 */
function deepFields(depth, { root = 'items(first: 1)', child = 'children(first: 1)' } = {}) {
  return `{ ${root} { ${`${child} { `.repeat(depth)}id${' }'.repeat(depth)} } }`;
}

/**
 * `count` aliases of `field` at the root: as wide as a document gets.
 * @param {number} count
 * @param {string} [field]
 */
function wideAliases(count, field = 'items(first: 1) { id }') {
  return `{ ${Array.from({ length: count }, (_, i) => `a${i}: ${field}`).join(' ')} }`;
}

/**
 * `count` fragments on Query, each spreading every fragment after it (a fragment reached by
 * count^2/2 spreads), all ending in `field`.
 * @param {number} count
 * @param {string} [field]
 */
function denseFragments(count, field = 'items(first: 1) { id }') {
  const fragments = [];
  for (let i = 0; i < count; i++) {
    const spreads = [];
    for (let j = i + 1; j < count; j++) spreads.push(`...D${j}`);
    fragments.push(`fragment D${i} on Query { ${field} ${spreads.join(' ')} }`);
  }
  return `query { ...D0 }\n${fragments.join('\n')}`;
}

module.exports = {
  conditionedFragments,
  deepFields,
  deepInlineFragments,
  denseFragments,
  doubledFragments,
  wideAliases,
};
