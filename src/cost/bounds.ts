import { CostQueryError } from './errors';

/**
 * The most selection sets one path of an operation may nest to be priced: each field with a
 * selection set, inline fragment and fragment spread is one level. Generous for real operations
 * (graphql-js's introspection query nests 17, its fragments counted), it keeps pricing, which
 * recurses along the document, far from the stack's end, where a document of 800 levels would
 * otherwise take it.
 */
export const MAX_DEPTH = 128;

/**
 * The most steps compiling one operation for pricing may take: one per selection met while
 * collecting fields (a fragment counts again each time it is collected under other
 * conditions) and per selection a compiled plan is made of, four per plan made. A document a
 * server would run takes a few thousand; one built to multiply the work (fragments spread under
 * distinct `@include` conditions at each level, thousands of aliases of deep selections) is
 * refused in milliseconds instead of taking minutes.
 */
export const MAX_WORK = 100_000;

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

/**
 * The most brackets (`{`, `(`, `[`) a document's text may nest for a server plugin with a
 * budget to let it be parsed: graphql-js parses by recursion and runs out of stack some
 * thousands of levels down (a RangeError that servers answer as an internal error). Twice
 * {@link MAX_DEPTH}, so a document within MAX_DEPTH with nested argument values still parses,
 * and gets the estimator's own answer.
 */
export const MAX_SOURCE_DEPTH = 2 * MAX_DEPTH;

/**
 * The refusal of a document whose brackets nest deeper than {@link MAX_SOURCE_DEPTH} (strings
 * and comments skipped), for a server plugin to give before the document is parsed: the
 * estimator's `TOO_DEEP`, with HTTP status 400. Undefined for any other document. One pass over
 * the text, stopping at the first bracket too deep.
 */
export function sourceTooDeep(source: string): CostQueryError | undefined {
  let depth = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '{' || c === '(' || c === '[') {
      depth += 1;
      if (depth > MAX_SOURCE_DEPTH) {
        return new CostQueryError(
          `Operation too deep to price: it nests more than ${MAX_SOURCE_DEPTH} brackets`,
          'TOO_DEEP',
          400,
        );
      }
    } else if (c === '}' || c === ')' || c === ']') {
      depth -= 1;
    } else if (c === '#') {
      while (i + 1 < source.length && source[i + 1] !== '\n' && source[i + 1] !== '\r') i++;
    } else if (c === '"') {
      i = stringEnd(source, i);
    }
  }
  return undefined;
}

/** The index of the last character of the string (or block string) that starts at `start`. */
function stringEnd(source: string, start: number): number {
  if (source.startsWith('"""', start)) {
    let i = start + 3;
    while (i < source.length && !source.startsWith('"""', i))
      i += source.startsWith('\\"""', i) ? 4 : 1;
    return i + 2;
  }
  let i = start + 1;
  while (i < source.length && source[i] !== '"' && source[i] !== '\n')
    i += source[i] === '\\' ? 2 : 1;
  return i;
}
