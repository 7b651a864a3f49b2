import {
  getIntrospectionQuery,
  Kind,
  parse,
  type DefinitionNode,
  type DocumentNode,
} from 'graphql';
import { makeExecutableSchema } from '@graphql-tools/schema';

import {
  COST_MAX_DEPTH,
  costTypeDefs,
  CostQueryError,
  CostVariablesError,
  createCostEstimator,
  estimateCost,
} from '../../src/cost';
import * as bounds from '../../src/cost/bounds';
import { costSchema } from '../support/cost-schema';
import {
  conditionedFragments,
  deepFields,
  deepInlineFragments,
  denseFragments,
  doubledFragments,
  wideAliases,
} from '../../kit/hostile-documents';

/*
 * What bounds pricing: each fragment collected once per selection set and conditions, a bound
 * on the steps and on the depth (refused with COST_QUERY_PARSE_FAILURE and a `reason`), slicing
 * arguments that may not be negative, variables coerced as execution coerces them, and an
 * estimate that is a safe integer or Infinity. The documents are those of the benchmark.
 */

const schema = costSchema();
const VIEWER = 'viewer { id }'; // costs 1
const estimate = (query: string | DocumentNode, variables?: Record<string, unknown>) =>
  estimateCost(schema, typeof query === 'string' ? parse(query) : query, { variables });

function refusal(run: () => unknown): CostQueryError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(CostQueryError);
  return caught as CostQueryError;
}

/** `source` parsed, with each read of a fragment's selections counted. */
function counted(source: string): { document: DocumentNode; reads: () => number } {
  const parsed = parse(source);
  let reads = 0;
  const definitions = parsed.definitions.map((definition): DefinitionNode => {
    if (definition.kind !== Kind.FRAGMENT_DEFINITION) return definition;
    const { selectionSet } = definition;
    return Object.defineProperty({ ...definition }, 'selectionSet', {
      get: () => (reads++, selectionSet),
      enumerable: true,
    });
  });
  return { document: { ...parsed, definitions }, reads: () => reads };
}

describe('each fragment is collected once per selection set and conditions', () => {
  test('a fragment spread twice at each of 16 levels is read once per level, not 2^16 times', () => {
    const { document, reads } = counted(doubledFragments(16, VIEWER));
    expect(estimate(document)).toBe(1);
    // once to count the size of the document, then once per level
    expect(reads()).toBeLessThanOrEqual(17 + 17);
  });

  test.each([20, 24, 30, 60])('%i doubled levels price as their one field', (n) => {
    expect(estimate(doubledFragments(n, VIEWER))).toBe(1);
  });

  test('spreads under conditions still price by them', () => {
    const source = conditionedFragments(4, VIEWER);
    expect(estimate(source)).toBe(1);
    expect(estimate(source, { a0: false })).toBe(1); // the $b0 path still reaches it
    expect(estimate(source, { a0: false, b0: false })).toBe(0);
    expect(estimate(source, { a3: false, b3: false })).toBe(0);
  });

  test('fragments that spread every later one price in a bounded number of reads', () => {
    const { document, reads } = counted(denseFragments(40, VIEWER));
    expect(estimate(document)).toBe(1);
    // once to count the size of the document, then once per fragment
    expect(reads()).toBeLessThanOrEqual(40 + 40);
  });
});

describe('a document too complex or too deep to price is refused', () => {
  test.each([20, 30, 60])(
    '%i levels of spreads each under its own @include: TOO_COMPLEX',
    (n) => {
      const error = refusal(() => estimate(conditionedFragments(n, VIEWER)));
      expect(error.extensions).toEqual({ code: 'COST_QUERY_PARSE_FAILURE', reason: 'TOO_COMPLEX' });
      expect(error.message).toMatch(/too complex to price/);
    },
    10_000,
  );

  test('a document refused once is refused again without the work', () => {
    const { document, reads } = counted(conditionedFragments(30, VIEWER));
    const once = refusal(() => estimate(document));
    const spent = reads();
    expect(refusal(() => estimate(document))).toBe(once);
    expect(reads()).toBe(spent);
  });

  test.each([
    ['inline fragments', deepInlineFragments],
    [
      'fields',
      (depth: number) => deepFields(depth, { root: 'users(first: 1)', child: 'friends(first: 1)' }),
    ],
    // graphql-js's own parser runs out of stack some thousands of levels down (the server refuses those)
  ])('%s nested 800 and 1,000 deep: TOO_DEEP, no RangeError', (_what, build) => {
    for (const depth of [800, 1_000]) {
      const error = refusal(() => estimate(build(depth)));
      expect(error.extensions).toEqual({ code: 'COST_QUERY_PARSE_FAILURE', reason: 'TOO_DEEP' });
      expect(error.message).toMatch(/nest more than 128 levels/);
    }
  });

  test('fragments nested 5,000 deep through spreads: TOO_DEEP', () => {
    const fragments = Array.from(
      { length: 5_000 },
      (_, i) => `fragment F${i} on Query { ...F${i + 1} }`,
    );
    const source = `query { ...F0 }\n${fragments.join('\n')}\nfragment F5000 on Query { ${VIEWER} }`;
    expect(refusal(() => estimate(source)).extensions.reason).toBe('TOO_DEEP');
  });

  test('a depth within the bound prices', () => {
    // users 1 × (user 1 + 1 × (friend 1 + ...)): one per level
    const depth = COST_MAX_DEPTH - 1;
    const source = deepFields(depth - 1, { root: 'users(first: 1)', child: 'friends(first: 1)' });
    expect(estimate(source)).toBe(depth);
  });

  test('a plan made shallow and met again deeper counts at its deepest', () => {
    // each G<k> is 60 levels of `best` around G<k+1>; the query spreads the last ones first, so
    // each is compiled near the root and met again 60 levels down: 3 × 60 levels in all
    const levels = (inner: string) => `${'best { '.repeat(60)}${inner}${' }'.repeat(60)}`;
    const source = [
      'query { a: viewer { ...G2 } b: viewer { ...G1 } c: viewer { ...G0 } }',
      `fragment G0 on User { ${levels('...G1')} }`,
      `fragment G1 on User { ${levels('...G2')} }`,
      `fragment G2 on User { ${levels('id')} }`,
    ].join('\n');
    expect(refusal(() => estimate(source)).extensions.reason).toBe('TOO_DEEP');
  });

  test('ordinary large documents are far within the bounds', () => {
    expect(estimate(getIntrospectionQuery())).toBe(0);
    const node =
      'node(id: 1) { id ... on User { friends(first: 5) { id name posts { title } } } ' +
      '... on Post { author { id best { id } } } }';
    // each: max(User 1 + 5 × (1 + 4 × 3), Post 3 + author 1 + best 1)
    expect(estimate(wideAliases(500, node))).toBe(500 * 66);
  });

  test('10,000 aliases price (wide is not deep)', () => {
    expect(estimate(wideAliases(10_000, VIEWER))).toBe(10_000);
  });
});

describe('the steps pricing may take are bounded by the size of the document', () => {
  afterEach(() => jest.restoreAllMocks());

  /** Prices `source` on a new document object: what it answered, the steps and the bound. */
  function priced(source: string, variables?: Record<string, unknown>) {
    const works: bounds.Work[] = [];
    const bounded: number[] = [];
    const create = bounds.createWork;
    jest.spyOn(bounds, 'createWork').mockImplementation((bound) => {
      bounded.push(bound ?? bounds.MAX_WORK);
      const work = create(bound);
      works.push(work);
      return work;
    });
    const document = parse(source);
    let answer: number | CostQueryError;
    try {
      answer = estimate(document, variables);
    } catch (error) {
      if (!(error instanceof CostQueryError)) throw error;
      answer = error;
    }
    jest.restoreAllMocks();
    expect(works).toHaveLength(1);
    const nodes = bounds.documentNodes(document);
    return { answer, spent: works[0]!.spent, bound: bounded[0]!, nodes };
  }

  test('the bound: MIN_WORK and WORK_PER_NODE steps per node, at most MAX_WORK', () => {
    const { MIN_WORK, WORK_PER_NODE, MAX_WORK } = bounds;
    // operation, field, argument, its value, selection: 5 nodes
    expect(bounds.documentNodes(parse('{ users(first: 1) { id } }'))).toBe(5);
    expect(bounds.workBound(parse('{ users(first: 1) { id } }'))).toBe(
      MIN_WORK + 5 * WORK_PER_NODE,
    );
    for (const n of [10, 20, 40]) {
      const document = parse(conditionedFragments(n, VIEWER));
      const nodes = bounds.documentNodes(document);
      expect(bounds.workBound(document)).toBe(MIN_WORK + nodes * WORK_PER_NODE);
    }
    expect(bounds.workBound(parse(wideAliases(10_000, VIEWER)))).toBe(MAX_WORK);
    // variables and their defaults, directives, arguments and each of their values count
    const source =
      'query ($v: [Int] = [1, 2]) { a: viewer @skip(if: false) { id } b: report(filter: { tags: ["x"] }) }';
    // operation 1, $v 1, [1, 2] 3; a 1, @skip 1, if 1, false 1, id 1; b 1, filter 1, { } 1, tags 1, [ ] 1, "x" 1
    expect(bounds.documentNodes(parse(source))).toBe(16);
  });

  test.each([8, 10, 20, 60])(
    'spreads under their own @include, %i levels: refused within the steps its size pays for',
    (n) => {
      const { answer, spent, bound, nodes } = priced(conditionedFragments(n, VIEWER));
      expect(answer).toBeInstanceOf(CostQueryError);
      expect((answer as CostQueryError).extensions).toEqual({
        code: 'COST_QUERY_PARSE_FAILURE',
        reason: 'TOO_COMPLEX',
      });
      expect((answer as CostQueryError).message).toMatch(/too complex to price/);
      expect(bound).toBe(bounds.MIN_WORK + nodes * bounds.WORK_PER_NODE);
      expect(bound).toBeLessThan(bounds.MAX_WORK / 5);
      // steps are spent before their work is done: the last one passes the bound, its work undone
      expect(spent).toBeGreaterThan(bound);
      expect(spent).toBeLessThan(2 * bound);
    },
  );

  test.each([
    ['graphql-js introspection query', getIntrospectionQuery()],
    ['a fragment spread twice at each of 60 levels', doubledFragments(60, VIEWER)],
    ['40 fragments, each spreading every later one', denseFragments(40, VIEWER)],
    [
      'fields nested 126 deep',
      deepFields(125, { root: 'users(first: 1)', child: 'friends(first: 1)' }),
    ],
    [
      '500 aliases of a node with fragments on two types',
      wideAliases(
        500,
        'node(id: 1) { id ... on User { friends(first: 5) { id name posts { title } } } ' +
          '... on Post { author { id best { id } } } }',
      ),
    ],
    ['10,000 aliases', wideAliases(10_000, VIEWER)],
  ])('%s: priced in at most 4 steps per node', (_what, source) => {
    const { answer, spent, nodes } = priced(source);
    expect(typeof answer).toBe('number');
    expect(spent).toBeLessThanOrEqual(4 * nodes);
  });

  test('a long list argument counts its values, and is paid for by its size', () => {
    const tags = Array.from({ length: 5_000 }, (_, i) => `"t${i}"`).join(', ');
    const { answer, spent, nodes } = priced(`{ report(filter: { tags: [${tags}] }) }`);
    // the filter 4, each tag 2
    expect(answer).toBe(4 + 5_000 * 2);
    expect(spent).toBeGreaterThan(5_000);
    expect(spent).toBeLessThanOrEqual(2 * nodes);
  });
});

describe('slicing arguments', () => {
  test.each([
    ['a literal', '{ users(first: -1) { id } }', undefined],
    ['a variable', 'query ($n: Int) { users(first: $n) { id } }', { n: -1 }],
    ['one of several', '{ usersLoose(first: 2, last: -5) { id } }', undefined],
  ])(
    'a negative one given as %s is refused, never priced as 0 items',
    (_what, query, variables) => {
      const error = refusal(() => estimate(query, variables));
      expect(error.extensions.code).toBe('COST_QUERY_PARSE_FAILURE');
      expect(error.message).toMatch(
        /slicing argument "(first|last)" must not be negative, got -\d/,
      );
    },
  );
});

describe('variables are coerced as execution coerces them', () => {
  const query = 'query ($n: Int) { users(first: $n) { id } }';

  test.each([
    ['a fraction', 2.5],
    ['1e308', 1e308],
    ['a string', '3'],
  ])('%s for an Int is GraphQL’s coercion error, not a price', (_what, n) => {
    let caught: unknown;
    try {
      estimate(query, { n });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CostVariablesError);
    expect((caught as Error).message).toMatch(
      /^Variable "\$n" got invalid value .*; Int cannot represent/,
    );
  });

  test('a variable that coerces prices, and a default fills an absent one', () => {
    expect(estimate(query, { n: 4 })).toBe(4);
    expect(estimate('query ($n: Int = 6) { users(first: $n) { id } }', {})).toBe(6);
  });
});

describe('variables nested deep', () => {
  const inputs = makeExecutableSchema({
    typeDefs: [
      costTypeDefs(),
      /* GraphQL */ `
        scalar JSON
        input Where {
          and: [Where!]
          value: Int
        }
        type Query {
          find(where: Where, raw: JSON @cost(weight: 1)): Int
        }
      `,
    ],
  });
  const price = (query: string, variables: Record<string, unknown>) =>
    estimateCost(inputs, parse(query), { variables });

  test('a custom scalar given an array 100,000 deep is one value', () => {
    let raw: unknown = 1;
    for (let i = 0; i < 100_000; i++) raw = [raw];
    expect(price('query ($raw: JSON) { find(raw: $raw) }', { raw })).toBe(1);
  });

  test('a recursive input nested past what graphql can coerce is its coercion error', () => {
    let where: Record<string, unknown> = { value: 1 };
    for (let i = 0; i < 100_000; i++) where = { and: [where] };
    expect(() => price('query ($w: Where) { find(where: $w) }', { w: where })).toThrow(
      CostVariablesError,
    );
  });

  test('a recursive input within reach is priced along its type', () => {
    let where: Record<string, unknown> = { value: 1 };
    for (let i = 0; i < 500; i++) where = { and: [where, { value: 2 }] };
    // each level: the input object 1 + its `value` sibling 1; the innermost 1
    expect(price('query ($w: Where) { find(where: $w) }', { w: where })).toBe(1_001);
  });
});

describe('an estimate is a safe integer, else Infinity', () => {
  const nested = (outer: number, levels: number) =>
    deepFields(levels, {
      root: `users(first: ${outer})`,
      child: 'friends(first: 2147483647)',
    });

  test('0 items of an infinite subtree (0 × Infinity, NaN) is Infinity', () => {
    expect(estimate(nested(0, 35))).toBe(Infinity);
  });

  test('sizes that multiply past 2^53 are Infinity', () => {
    expect(estimate(nested(2147483647, 2))).toBe(Infinity);
  });

  test('an estimator made once answers the same', () => {
    const estimator = createCostEstimator(schema);
    expect(estimator(parse(nested(0, 35)))).toBe(Infinity);
  });
});
