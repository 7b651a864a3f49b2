import { MapperKind, mapSchema } from '@graphql-tools/utils';
import type { GraphQLFieldResolver, GraphQLSchema } from 'graphql';

import { RateLimitConfigError } from '../errors';
import { LIMITED, resolvesThrough } from '../transformed';

/**
 * The field extension `@RateLimit` sets: the directive arguments it carries, decided after the
 * handler's guards rather than before the resolver.
 */
export const AFTER_GUARDS = 'graphqlAtomicRateLimitAfterGuards';

/** Runs the field's decision, then `proceed` (the rest of Nest's pipeline) if it passed. */
export type DecideThen = (proceed: () => Promise<unknown>) => Promise<unknown>;

/**
 * What the transform leaves for the interceptor: per resolver call (keyed by its `info`, which
 * graphql-js makes anew for every field it resolves), the decision that waits for the guards.
 */
export interface AfterGuards {
  /** The decision waiting for the call whose `info` this is; taken once. */
  take(info: object): DecideThen | undefined;
  /**
   * Returns a new schema whose fields marked by `@RateLimit` (or named in `coordinates`) are
   * decided by `transformer`'s wrapper when the interceptor reaches them, after the guards;
   * every other limited field is decided as `transformer` alone decides it. `fieldInterceptors`:
   * whether Nest runs interceptors on field resolvers (`fieldResolverEnhancers`).
   */
  readonly transform: (schema: GraphQLSchema, fieldInterceptors: boolean) => GraphQLSchema;
}

/**
 * Decisions moved behind Nest's guards. `transformer` wraps a stand-in that runs the rest of
 * the pipeline, and the field keeps Nest's own resolver, so that guards run first; the
 * interceptor then runs the wrapped stand-in, which decides (same store, errors, headers and
 * `onDecision` as every other field) and proceeds only if the hit passed. A call a guard refuses
 * never reaches the interceptor and counts nothing.
 */
export function afterGuards(
  transformer: (schema: GraphQLSchema) => GraphQLSchema,
  name: string,
  coordinates: readonly string[] = [],
): AfterGuards {
  const waiting = new WeakMap<object, DecideThen>();
  const proceeding = new WeakMap<object, () => Promise<unknown>>();
  const proceed: GraphQLFieldResolver<unknown, unknown> = (_s, _a, _c, info) => {
    const next = proceeding.get(info);
    proceeding.delete(info);
    if (!next) throw new Error('graphql-atomic-rate-limit: a decision ran outside its resolver');
    return next();
  };
  const transform = (schema: GraphQLSchema, fieldInterceptors: boolean): GraphQLSchema => {
    const named = new Set(coordinates);
    const roots = new Set(
      [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].map(
        (t) => t?.name,
      ),
    );
    const handlers = new Map<string, GraphQLFieldResolver<unknown, unknown>>();
    const staged = mapSchema(schema, {
      [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
        const coordinate = `${typeName}.${fieldName}`;
        const marked = field.extensions?.[AFTER_GUARDS] as
          readonly Record<string, unknown>[] | undefined;
        if (!marked && !named.delete(coordinate)) return field;
        if (!field.resolve) {
          throw new RateLimitConfigError(
            `${coordinate}: decided after guards, but it has no resolver method for guards to run on`,
          );
        }
        if (!fieldInterceptors && !roots.has(typeName)) {
          // Nest would run neither the guards nor the interceptor: the limit would do nothing
          throw new RateLimitConfigError(
            `${coordinate}: decided after guards, but Nest runs no interceptor on a field ` +
              "resolver: add fieldResolverEnhancers: ['guards', 'interceptors'] to GraphQLModule's options",
          );
        }
        handlers.set(coordinate, field.resolve);
        return { ...field, resolve: proceed, extensions: withDirectives(field, name, marked) };
      },
    });
    if (named.size > 0) {
      throw new RateLimitConfigError(
        `afterGuards names ${[...named].join(', ')}, which the schema has no field for`,
      );
    }
    const limited = transformer(staged);
    return mapSchema(limited, {
      [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
        const coordinate = `${typeName}.${fieldName}`;
        const handler = handlers.get(coordinate);
        if (!handler) return field;
        const decide = field.resolve;
        if (!decide || !field.extensions?.[LIMITED]) {
          throw new RateLimitConfigError(
            `${coordinate}: decided after guards, but it carries no @${name}`,
          );
        }
        const guarded = {
          ...field,
          resolve: async (source, args, context, info) => {
            waiting.set(info, (next) => {
              proceeding.set(info, next);
              return Promise.resolve(decide(source, args, context, info));
            });
            let result: unknown;
            try {
              result = await handler(source, args, context, info);
            } catch (error) {
              // a guard refused (or the resolver failed): the decision left untaken counted nothing
              waiting.delete(info);
              throw error;
            }
            if (waiting.delete(info)) {
              // the resolver ran and nothing decided: the limit would do nothing
              throw new RateLimitConfigError(
                `${coordinate}: its resolver ran without the rate-limit interceptor; ` +
                  'import RateLimitModule.forRoot() in the application module',
              );
            }
            return result;
          },
        } satisfies typeof field;
        // Nest's pipeline runs `decide`, the transformer's wrapper: the field still decides
        resolvesThrough(guarded.resolve, decide);
        return guarded;
      },
    });
  };
  return {
    take(info) {
      const decide = waiting.get(info);
      waiting.delete(info);
      return decide;
    },
    transform,
  };
}

/** The field's extensions with the arguments of its `@RateLimit` as `@name` directives. */
function withDirectives(
  field: { readonly extensions?: Readonly<Record<string, unknown>> | null | undefined },
  name: string,
  marked: readonly Record<string, unknown>[] | undefined,
): Readonly<Record<string, unknown>> | null | undefined {
  if (!marked) return field.extensions;
  const directives = field.extensions?.directives as Record<string, unknown> | undefined;
  const own = directives?.[name];
  const mine = own === undefined ? [] : Array.isArray(own) ? own : [own];
  return { ...field.extensions, directives: { ...directives, [name]: [...mine, ...marked] } };
}
