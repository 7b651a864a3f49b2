import { CostQueryError } from './errors';

/**
 * The most selection sets one path of an operation may nest to be priced: each field with a
 * selection set, inline fragment and fragment spread is one level. Generous for real operations
 * (the introspection query nests 13), it keeps pricing, which recurses along the document, far
 * from the stack's end, where a document of 800 levels would otherwise take it.
 */
export const MAX_DEPTH = 128;

/**
 * The most steps compiling one operation for pricing may take: one per selection met while
 * collecting fields (a fragment counts again each time it is collected under other
 * conditions) and per selection a compiled plan is made of. A document a server would run
 * takes a few thousand; one built to multiply the work (fragments spread under distinct
 * `@include` conditions at each level) is refused in milliseconds instead of taking minutes.
 */
export const MAX_WORK = 200_000;

/** Counts the steps of one compilation, and refuses the document once they pass the bound. */
export interface Work {
  spend(steps: number): void;
}

export function createWork(bound: number = MAX_WORK): Work {
  let spent = 0;
  return {
    spend(steps) {
      spent += steps;
      if (spent > bound) {
        throw new CostQueryError(
          `Operation too complex to price: more than ${bound} steps`,
          'TOO_COMPLEX',
        );
      }
    },
  };
}

/** Refuses a selection that nests deeper than {@link MAX_DEPTH}. */
export function checkDepth(depth: number): void {
  if (depth > MAX_DEPTH) {
    throw new CostQueryError(
      `Operation too deep to price: its selections nest more than ${MAX_DEPTH} levels`,
      'TOO_DEEP',
    );
  }
}
