// @ts-check
'use strict';
/*
 * The application every host of the conformance suite (test/conformance) serves: one SDL, its
 * resolvers, and the budget, written once. Plain JavaScript so that a host run as its own
 * process (Mercurius with graphql-jit, whose cache Jest cannot load) serves the very same app.
 * Each resolver counts its runs in `runs`, by `Type.field`; `Query.slow` also counts how many of
 * its calls run at once (`Query.slow running`) and the most that ever did (`Query.slow most`).
 */

/** The fields' limits, for the tests that count against them. */
const LIMITS = { hit: 3, lookup: 3, replaced: 2, bump: 3, ticks: 3, slow: 1, live: 1 };

/** The lease time, in seconds, of the CONCURRENCY fields (`slow`, `live`). */
const LEASE = 2;

/**
 * Points per identity per minute, a fixed window (no refill during a test).
 * @type {{ limit: number, window: number, algorithm: 'FIXED_WINDOW' }}
 */
const BUDGET = { limit: 100, window: 60, algorithm: 'FIXED_WINDOW' };

const SDL = /* GraphQL */ `
  type Query {
    hit: Int @rateLimit(action: "hit", window: 60, limit: ${LIMITS.hit})
    lookup(filter: Filter!): Int @rateLimit(action: "lookup", window: 60, limit: ${LIMITS.lookup})
    replaced: Int @rateLimit(action: "replaced", window: 60, limit: ${LIMITS.replaced})
    "Priced \`first\`; returns \`returned\` items."
    items(first: Int!, returned: Int!): [Item!]! @listSize(slicingArguments: ["first"])
    "A Dear (priced 40) when \`dear\`, else a Cheap (1); either's \`name\` is \\"Cheap\\"."
    found(dear: Boolean!): Found
    "Works for \`ms\` milliseconds; at most ${LIMITS.slow} at once per identity."
    slow(ms: Int!): Int
      @rateLimit(action: "slow", window: ${LEASE}, limit: ${LIMITS.slow}, algorithm: CONCURRENCY)
  }
  input Filter {
    id: ID
  }
  type Item {
    id: ID!
  }
  union Found = Cheap | Dear
  type Cheap {
    name: String
  }
  type Dear @cost(weight: 40) {
    name: String
  }
  type Mutation {
    bump: Int @rateLimit(action: "bump", window: 60, limit: ${LIMITS.bump})
  }
  type Subscription {
    ticks: Int @rateLimit(action: "ticks", window: 60, limit: ${LIMITS.ticks})
    "At most ${LIMITS.live} live per identity."
    live: Int
      @rateLimit(action: "live", window: ${LEASE}, limit: ${LIMITS.live}, algorithm: CONCURRENCY)
  }
`;

/**
 * @typedef {Record<string, number>} Runs
 */

/** @param {Runs} runs @param {string} coordinate */
function count(runs, coordinate) {
  runs[coordinate] = (runs[coordinate] ?? 0) + 1;
  return runs[coordinate];
}

/**
 * The work of `Query.slow`: `ms` milliseconds, counted in `runs` while it runs (the most at once,
 * as the work itself sees it, whatever host and transport called it).
 * @param {Runs} runs @param {number} ms
 */
async function slow(runs, ms) {
  const ran = count(runs, 'Query.slow');
  runs['Query.slow running'] = (runs['Query.slow running'] ?? 0) + 1;
  runs['Query.slow most'] = Math.max(runs['Query.slow most'] ?? 0, runs['Query.slow running']);
  try {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return ran;
  } finally {
    runs['Query.slow running'] -= 1;
  }
}

/** A subscription's source: one event of `field`, then open until the client leaves. */
async function* ticks(field = 'ticks') {
  yield { [field]: 1 };
  await new Promise(() => undefined);
}

/** The app's resolvers, counting into `runs`. @param {Runs} runs */
function resolversFor(runs) {
  return {
    Query: {
      hit: () => count(runs, 'Query.hit'),
      lookup: () => count(runs, 'Query.lookup'),
      replaced: () => count(runs, 'Query.replaced'),
      /** @param {unknown} _ @param {{ returned: number }} args */
      items: (_, args) => {
        count(runs, 'Query.items');
        return Array.from({ length: args.returned }, (_item, i) => ({ id: String(i) }));
      },
      /** @param {unknown} _ @param {{ ms: number }} args */
      slow: (_, args) => slow(runs, args.ms),
      /** @param {unknown} _ @param {{ dear: boolean }} args */
      found: (_, args) => {
        count(runs, 'Query.found');
        // the default resolveType (graphql-js', graphql-jit's) reads `__typename`
        return { __typename: args.dear ? 'Dear' : 'Cheap', name: 'Cheap' };
      },
    },
    Mutation: { bump: () => count(runs, 'Mutation.bump') },
    Subscription: {
      ticks: {
        subscribe: () => {
          count(runs, 'Subscription.ticks');
          return ticks();
        },
      },
      live: {
        subscribe: () => {
          count(runs, 'Subscription.live');
          return ticks('live');
        },
      },
    },
  };
}

/**
 * What a host puts in place of `Query.replaced`'s resolver after the library wrapped it: its
 * runs are counted apart, as `Query.replaced (replacement)`. @param {Runs} runs
 */
function replacementFor(runs) {
  return { Query: { replaced: () => count(runs, 'Query.replaced (replacement)') } };
}

module.exports = { BUDGET, LEASE, LIMITS, SDL, replacementFor, resolversFor, slow };
