import {
  Kind,
  type ArgumentNode,
  type DefinitionNode,
  type DirectiveNode,
  type DocumentNode,
  type SelectionNode,
  type ValueNode,
} from 'graphql';

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
 * The most steps compiling one operation for pricing may take, whatever its size: one per
 * selection met while collecting fields (a fragment counts again each time it is collected
 * under other conditions), per directive and argument value read, and per selection a compiled
 * plan is made of, four per plan made. Within it, {@link workBound} holds a document to steps
 * in proportion to its own size.
 */
export const MAX_WORK = 100_000;

/**
 * The steps a document may take per node of its own (see {@link documentNodes}) to be priced.
 * A document a server would run takes one to six per node (graphql-js's introspection query
 * five, a fragment spread in many places more); one built to multiply the work (fragments
 * spread under distinct `@include` conditions at each level, abstract types over abstract
 * types) takes thousands, and is refused after a number of steps its size pays for.
 */
export const WORK_PER_NODE = 16;

/**
 * The steps any document may take, however small: room for a field of an interface or a union
 * with many possible types, each of which gets a plan.
 */
export const MIN_WORK = 4_000;

/**
 * The steps compiling an operation of `document` may take: {@link MIN_WORK} and
 * {@link WORK_PER_NODE} per node of the document, at most {@link MAX_WORK}. Pricing work is then
 * proportional to the document's size, as its parse is: a document made to be slow to price is
 * refused after a few milliseconds, not a hundred.
 */
export function workBound(document: DocumentNode): number {
  const most = Math.ceil((MAX_WORK - MIN_WORK) / WORK_PER_NODE);
  return Math.min(MAX_WORK, MIN_WORK + WORK_PER_NODE * documentNodes(document, most));
}

type Counted = DefinitionNode | SelectionNode | DirectiveNode | ArgumentNode | ValueNode;

/**
 * The nodes of `document` that pricing reads: its definitions, selections, directives,
 * arguments and argument values (each item of a list, each field of an object), variable
 * definitions and their defaults; names and types are part of the node they name. Counting
 * stops past `most`. One pass, without recursion.
 */
export function documentNodes(document: DocumentNode, most = Infinity): number {
  let count = 0;
  const stack: Counted[] = [...document.definitions];
  for (let node = stack.pop(); node && count <= most; node = stack.pop()) {
    count += 1;
    switch (node.kind) {
      case Kind.OPERATION_DEFINITION:
        for (const v of node.variableDefinitions ?? []) {
          count += 1;
          if (v.defaultValue) stack.push(v.defaultValue);
        }
      // falls through: an operation has selections and directives as a fragment has
      case Kind.FRAGMENT_DEFINITION:
      case Kind.INLINE_FRAGMENT:
        push(stack, node.directives);
        push(stack, node.selectionSet.selections);
        break;
      case Kind.FIELD:
        push(stack, node.directives);
        push(stack, node.arguments);
        push(stack, node.selectionSet?.selections);
        break;
      case Kind.FRAGMENT_SPREAD:
        push(stack, node.directives);
        break;
      case Kind.DIRECTIVE:
        push(stack, node.arguments);
        break;
      case Kind.ARGUMENT:
        stack.push(node.value);
        break;
      case Kind.LIST:
        push(stack, node.values);
        break;
      case Kind.OBJECT:
        for (const field of node.fields) stack.push(field.value);
        count += node.fields.length;
        break;
      default:
        break;
    }
  }
  return count;
}

// one at a time: a spread of a list of 100,000 values would pass as many arguments
function push(stack: Counted[], nodes: readonly Counted[] | undefined): void {
  for (const node of nodes ?? []) stack.push(node);
}

/** Counts the steps of one compilation, and refuses the document once they pass the bound. */
export interface Work {
  spend(steps: number): void;
  /** The steps spent so far. */
  readonly spent: number;
}

export function createWork(bound: number = MAX_WORK): Work {
  let spent = 0;
  return {
    spend(steps) {
      spent += steps;
      if (spent > bound) {
        throw new CostQueryError(
          `Operation too complex to price: more than ${bound} steps for a document of its size`,
          'TOO_COMPLEX',
        );
      }
    },
    get spent() {
      return spent;
    },
  };
}

/**
 * Spends a step per argument and per node of its value (see {@link documentNodes}), as pricing
 * reads them.
 */
export function spendArguments(work: Work, args: readonly ArgumentNode[] | undefined): void {
  if (!args?.length) return;
  work.spend(args.length);
  spendValues(
    work,
    args.map((a) => a.value),
  );
}

function spendValues(work: Work, values: readonly ValueNode[]): void {
  work.spend(values.length);
  for (const value of values) {
    if (value.kind === Kind.LIST) spendValues(work, value.values);
    else if (value.kind === Kind.OBJECT) {
      work.spend(value.fields.length);
      spendValues(
        work,
        value.fields.map((f) => f.value),
      );
    }
  }
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
