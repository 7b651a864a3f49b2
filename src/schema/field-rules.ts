import {
  getNamedType,
  isLeafType,
  isListType,
  isNonNullType,
  type GraphQLField,
  type GraphQLFieldConfig,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import { getDirective } from '@graphql-tools/utils';

import { ALGORITHMS, ruleProblem, type RateLimitRule } from '../rate-limit-rule';
import { RateLimitConfigError } from '../errors';
import { showValue } from '../show-value';

/** The prefix of a `by` that names one of the field's arguments. */
export const ARGUMENT_SOURCE = 'args.';

/** A rule as one field applies it: the counter, and where each hit's cost comes from. */
export interface FieldRule extends RateLimitRule {
  /** An `Int` argument of the field that multiplies `cost`; undefined for a fixed cost. */
  readonly costArg?: string | undefined;
}

/**
 * The rules that apply to `typeName.fieldName`: the field's own `@rateLimit` directives, or,
 * when it has none, those on its object type. Throws a RateLimitConfigError naming the field
 * and the argument for any invalid value, so a bad directive fails at schema build.
 */
export function rulesFor(
  schema: GraphQLSchema,
  typeName: string,
  fieldName: string,
  field: GraphQLFieldConfig<unknown, unknown>,
  directiveName: string,
  identityNames: ReadonlySet<string> = new Set(),
): FieldRule[] {
  const coordinate = `${typeName}.${fieldName}`;
  let args = directivesOn(schema, field, directiveName, coordinate);
  if (args.length === 0) {
    const type: GraphQLNamedType | undefined = schema.getType(typeName);
    if (type) args = directivesOn(schema, type, directiveName, coordinate);
  }
  const rules = args.map((a) => {
    const rule = toRule(a, coordinate, directiveName, missingDefinition(schema, directiveName));
    return withSources(rule, a, field, coordinate, directiveName, identityNames);
  });
  const seen = new Set<string>();
  for (const r of rules) {
    const id = `${r.algorithm}/${r.windowSeconds}/${r.action}/${r.by ?? ''}`;
    if (seen.has(id)) {
      throw new RateLimitConfigError(
        `${coordinate}: two @${directiveName} share action "${r.action}", algorithm ${r.algorithm}, ` +
          `window ${r.windowSeconds} and by; they would count one counter twice, keep one`,
      );
    }
    seen.add(id);
  }
  return rules;
}

/** What directives are read from: a field (its config or itself) or a named type. */
export type DirectableNode =
  GraphQLFieldConfig<unknown, unknown> | GraphQLField<unknown, unknown> | GraphQLNamedType;

/**
 * The arguments of each `@name` on `node`, from wherever a schema style writes directives: AST
 * nodes (SDL, and those Pothos makes up), `extensions.directives` keyed by name (graphql-tools,
 * `{ rateLimit: args | args[] }`), or `extensions.directives` as a list of `{ name, args }`
 * (graphql-compose, Pothos). A `@name` that is there but cannot be read throws, naming the field:
 * a directive skipped in silence would leave the field unlimited.
 */
export function directivesOn(
  schema: GraphQLSchema,
  node: DirectableNode,
  name: string,
  coordinate: string,
): Record<string, unknown>[] {
  const fail = (why: string): never => {
    throw new RateLimitConfigError(`${coordinate}: @${name}: ${why}`);
  };
  let read: unknown[];
  try {
    read = getDirective(schema, node as Parameters<typeof getDirective>[1], name) ?? [];
  } catch (error) {
    const message = (error as Error).message;
    const valid = /"algorithm"/.test(message) ? ` (valid: ${ALGORITHMS.join(', ')})` : '';
    return fail(`${message}${valid}${missingDefinition(schema, name)}`);
  }
  const listed = listedDirectives(node, name, fail);
  // Pothos writes its list and AST nodes made from it: one directive, written twice
  if (listed !== undefined && listed.length > 0) {
    if (read.length > 0 && read.length !== listed.length) {
      fail(
        `extensions.directives lists ${listed.length} and the AST ${read.length}; ` +
          'write each directive once',
      );
    }
    read = listed;
  }
  for (const args of read) {
    if (!isArgumentObject(args)) {
      fail(`its arguments must be an object, got ${showValue(args)} in extensions.directives`);
    }
  }
  return read as Record<string, unknown>[];
}

/** The `args` of each `{ name, args }` in a list of directives, or undefined when not a list. */
function listedDirectives(
  node: Parameters<typeof getDirective>[1],
  name: string,
  fail: (why: string) => never,
): unknown[] | undefined {
  const directives = (node.extensions as { directives?: unknown } | null | undefined)?.directives;
  if (!Array.isArray(directives)) return undefined;
  const listed: unknown[] = [];
  for (const entry of directives as unknown[]) {
    if (!isArgumentObject(entry) || typeof entry.name !== 'string') {
      fail(
        `extensions.directives, as a list, must hold { name, args } objects, got ${showValue(entry)}`,
      );
    }
    const { name: entryName, args } = entry as { name: string; args?: unknown };
    if (entryName === name) listed.push(args ?? {});
  }
  return listed;
}

function isArgumentObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A hint for a schema that does not define `@name`: GraphQL then checks none of its arguments,
 * and an SDL schema built without `typeDefs` fails with a bare `Unknown directive`.
 */
export function missingDefinition(schema: GraphQLSchema, name: string): string {
  return schema.getDirective(name)
    ? ''
    : ` (the schema does not define @${name}: add the \`typeDefs\` of rateLimitDirective() ` +
        'to its typeDefs, so that GraphQL checks its arguments)';
}

/** What an RFC 8941 string cannot carry: anything but printable ASCII. `action` goes in headers. */
const NOT_HEADER_SAFE = /[^\x20-\x7e]/u;

function toRule(
  args: Record<string, unknown>,
  coordinate: string,
  name: string,
  hint: string,
): RateLimitRule {
  const { action, window, limit, algorithm = 'FIXED_WINDOW', cost = 1 } = args;
  const rule = { action, algorithm, windowSeconds: window, limit, cost };
  const problem = ruleProblem(rule);
  if (problem) {
    const argument = problem.field === 'windowSeconds' ? 'window' : problem.field;
    throw new RateLimitConfigError(
      problem.value === undefined
        ? `${coordinate}: @${name}: ${argument} is missing: it ${problem.why}${hint}`
        : `${coordinate}: @${name}(${argument}: ${showValue(problem.value)}) ${problem.why}${hint}`,
    );
  }
  const unsafe = NOT_HEADER_SAFE.exec(action as string)?.[0];
  if (unsafe !== undefined) {
    const codePoint = `U+${(unsafe.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
    throw new RateLimitConfigError(
      `${coordinate}: @${name}(action: ${JSON.stringify(action)}) must be printable ASCII ` +
        `(space to ~) but holds ${codePoint}: the RateLimit headers carry it as a string`,
    );
  }
  return rule as RateLimitRule;
}

/**
 * `rule` with its `by` and `costArg`, checked against the field: `by` names an identity source
 * of the options or a non-null leaf argument (`args.email`), and `costArg` an `Int` argument.
 */
function withSources(
  rule: RateLimitRule,
  args: Record<string, unknown>,
  field: GraphQLFieldConfig<unknown, unknown>,
  coordinate: string,
  name: string,
  identityNames: ReadonlySet<string>,
): FieldRule {
  const { by, costArg } = args;
  const fail = (arg: string, value: unknown, why: string): never => {
    throw new RateLimitConfigError(
      `${coordinate}: @${name}(${arg}: ${JSON.stringify(value)}) ${why}`,
    );
  };
  if (by !== undefined && by !== null) {
    if (typeof by !== 'string' || by === '') fail('by', by, 'must be a non-empty string');
    const source = by as string;
    if (source.startsWith(ARGUMENT_SOURCE)) {
      const argName = source.slice(ARGUMENT_SOURCE.length);
      const type = field.args?.[argName]?.type;
      if (!type) fail('by', by, `names no argument of ${coordinate}`);
      else if (!isNonNullType(type) || isListType(type.ofType) || !isLeafType(type.ofType)) {
        fail(
          'by',
          by,
          `needs a non-null scalar or enum argument, and ${argName} is ${String(type)}`,
        );
      } else if (getNamedType(type).name === 'Boolean') {
        fail('by', by, 'needs a string, ID, number or enum argument, not a Boolean');
      }
    } else if (!identityNames.has(source)) {
      const known = [...identityNames].map((n) => JSON.stringify(n)).join(', ') || 'none';
      fail(
        'by',
        by,
        `is neither "${ARGUMENT_SOURCE}<argument>" nor a name in identities (${known})`,
      );
    }
  }
  if (costArg !== undefined && costArg !== null) {
    if (typeof costArg !== 'string' || costArg === '') {
      fail('costArg', costArg, 'must be a non-empty string');
    }
    const type = field.args?.[costArg as string]?.type;
    if (!type) fail('costArg', costArg, `names no argument of ${coordinate}`);
    else if (
      isListType(isNonNullType(type) ? type.ofType : type) ||
      getNamedType(type).name !== 'Int'
    ) {
      fail(
        'costArg',
        costArg,
        `needs an Int argument, and ${costArg as string} is ${String(type)}`,
      );
    }
  }
  return {
    ...rule,
    ...(typeof by === 'string' ? { by } : {}),
    ...(typeof costArg === 'string' ? { costArg } : {}),
  };
}
