import { isObjectType, type GraphQLObjectType, type GraphQLSchema } from 'graphql';

import { RateLimitConfigError } from '../errors';
import { directivesOn, type DirectableNode } from './field-rules';

/**
 * The extension by which a field the transformer wrapped is marked: `{ [directive name]: mark }`,
 * the mark being one per `rateLimitDirective()`, so that a forgotten transform can be told, and a
 * second pass of one transformer wraps nothing twice.
 */
export const LIMITED = 'graphqlAtomicRateLimit';

/** The mark of the directive named `name` that wrapped `field`, if one did. */
export function limitedBy(
  field: { readonly extensions?: Readonly<Record<string, unknown>> | null | undefined },
  name: string,
): unknown {
  const marks = field.extensions?.[LIMITED];
  return typeof marks === 'object' && marks !== null
    ? (marks as Record<string, unknown>)[name]
    : undefined;
}

/**
 * What each resolver the library put on a field stands for: a transformer's wrapper (`mark`:
 * its directive's) and the resolver it calls. A marked field whose resolver does not lead to its
 * mark's wrapper through these steps was redefined after the transform, and would run unlimited.
 */
const steps = new WeakMap<object, { readonly mark: unknown; readonly inner: unknown }>();

/**
 * Records that `outer` resolves a field by way of `inner`: the transformer's wrapper of the
 * directive whose mark is `mark`, or (no `mark`) a host integration's resolver in front of it
 * that runs it, such as NestJS' decision after guards.
 */
export function resolvesThrough<T extends object>(outer: T, inner: unknown, mark?: unknown): T {
  steps.set(outer, { mark, inner });
  return outer;
}

/** Whether `resolve` reaches the wrapper of `mark`; bounded, as a chain of wrappers is short. */
function reaches(resolve: unknown, mark: unknown): boolean {
  let at = resolve;
  for (let depth = 0; depth < 64 && typeof at === 'function'; depth++) {
    const step = steps.get(at);
    if (!step) return false;
    if (step.mark === mark) return true;
    at = step.inner;
  }
  return false;
}

/** The resolver of a field that carries its decision. */
type ResolverKey = 'resolve' | 'subscribe';

/** A field the transformer wrapped, and the resolver last seen on it that reaches its wrapper. */
export interface Wrapped {
  readonly type: GraphQLObjectType;
  readonly fieldName: string;
  /** Where the wrapper sits: `subscribe` on a Subscription field (a hit is a start), else `resolve`. */
  readonly key: ResolverKey;
  readonly mark: unknown;
  seen: unknown;
  /** The marks of hosts' instrumentation already accepted as one layer over the wrapper. */
  layers?: Set<symbol>;
}

/**
 * What marks a host's own instrumentation that wraps every resolver in place and calls the one
 * it wrapped: Apollo Server's schema (when a plugin uses `willResolveField`, on its first
 * execution) and each field envelop's `useOnResolve` wrapped. A resolver that changed along with
 * one such mark newly set is accepted as one layer over the wrapper; any other change is not.
 */
const HOST_LAYERS: readonly {
  readonly on: 'schema' | 'field' | 'resolver';
  readonly description: string;
}[] = [
  { on: 'schema', description: 'apolloServerPluginsEnabled' },
  { on: 'field', description: 'hasWrappedResolve' },
  // @opentelemetry/instrumentation-graphql marks each resolver it wraps at execution
  { on: 'resolver', description: 'opentelemetry.patched' },
];

function hostLayer(
  schema: GraphQLSchema,
  field: object,
  resolver: object,
  at: Wrapped,
): symbol | undefined {
  for (const { on, description } of HOST_LAYERS) {
    const owner = on === 'schema' ? schema : on === 'field' ? field : resolver;
    for (const mark of Object.getOwnPropertySymbols(owner)) {
      if (mark.description === description && !at.layers?.has(mark)) return mark;
    }
  }
  return undefined;
}

/**
 * The check every host integration runs, at start and before each operation, for the directive
 * named `name`: every field that uses the directive went through `transformer` and still resolves
 * through its wrapper. It throws a RateLimitConfigError naming the field otherwise: a schema
 * served without the transform, or a resolver replaced after it (Mercurius' `defineResolvers` or
 * `defineLoaders`, a `field.resolve` assigned, a schema merged anew), would run the field
 * unlimited. A schema is walked once; after that a check compares each wrapped field's resolver
 * with the one last seen there (the served schema may be changed in place).
 */
export function createTransformedCheck(name: string): (schema: GraphQLSchema) => void {
  const walked = new WeakMap<GraphQLSchema, readonly Wrapped[]>();
  return (schema) => {
    const wrapped = walked.get(schema);
    if (!wrapped) {
      walked.set(schema, assertTransformed(schema, name));
      return;
    }
    for (const at of wrapped) {
      // looked up each time: Mercurius replaces a Subscription field's whole object
      const field = at.type.getFields()[at.fieldName];
      const resolve = field?.[at.key];
      if (resolve === at.seen) continue;
      if (!reaches(resolve, at.mark)) {
        const layer =
          field && typeof resolve === 'function' && hostLayer(schema, field, resolve, at);
        if (!layer) throw replaced(name, [`${at.type.name}.${at.fieldName}`], [resolve]);
        // the host wrapped what was seen here (it runs it): one layer, once per mark
        resolvesThrough(resolve, at.seen);
        (at.layers ??= new Set()).add(layer);
      }
      at.seen = resolve;
    }
  };
}

/**
 * Throws when a field carries the directive (or its type does) but was not wrapped: the
 * schema was served without `transformer`, and its limits would do nothing; or when a field
 * was wrapped but no longer resolves through the wrapper. Returns the fields wrapped.
 */
export function assertTransformed(schema: GraphQLSchema, name: string): Wrapped[] {
  const forgotten: string[] = [];
  const redefined: string[] = [];
  const by: unknown[] = [];
  const wrapped: Wrapped[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    const typeLimited = uses(schema, type, name);
    const key: ResolverKey = type === schema.getSubscriptionType() ? 'subscribe' : 'resolve';
    for (const field of Object.values(type.getFields())) {
      const mark = limitedBy(field, name);
      if (mark === undefined) {
        if (typeLimited || uses(schema, field, name)) forgotten.push(`${type.name}.${field.name}`);
      } else if (reaches(field[key], mark)) {
        wrapped.push({ type, fieldName: field.name, key, mark, seen: field[key] });
      } else {
        redefined.push(`${type.name}.${field.name}`);
        by.push(field[key]);
      }
    }
  }
  if (forgotten.length > 0) {
    throw new RateLimitConfigError(
      `@${name} is used on ${listed(forgotten)} ` +
        'but the schema was not passed through the transformer of rateLimitDirective(); ' +
        'these limits would do nothing. Serve transformer(schema).',
    );
  }
  if (redefined.length > 0) throw replaced(name, redefined, by);
  return wrapped;
}

function replaced(name: string, fields: readonly string[], by: readonly unknown[]): Error {
  const now = by[0];
  const what =
    typeof now !== 'function'
      ? 'no resolver'
      : now.name
        ? `a function named "${now.name}"`
        : 'an anonymous function';
  return new RateLimitConfigError(
    `${listed(fields)}: its resolver was replaced after the transformer of @${name} wrapped it ` +
      `(it is now ${what}), so its limits would do nothing. Define resolvers before the ` +
      'transform (Mercurius: in its options, not defineResolvers or defineLoaders after ' +
      'mercuriusRateLimit) and apply transformer last',
  );
}

function listed(coordinates: readonly string[]): string {
  return `${coordinates.slice(0, 5).join(', ')}${coordinates.length > 5 ? ', ...' : ''}`;
}

function uses(schema: GraphQLSchema, node: DirectableNode, name: string): boolean {
  try {
    return directivesOn(schema, node, name, '').length > 0;
  } catch {
    return true;
  }
}
