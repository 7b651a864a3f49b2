import { MapperKind, mapSchema } from '@graphql-tools/utils';
import { isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';

import { RateLimitConfigError } from '../errors';
import { LIMITED, resolvesThrough } from '../schema/transform-mark';
import { directivesOn } from '../schema/field-rules';
import { calls, markedMethods, markOfLimits, type Call, type HandlerMark } from './gate';
import { directedMethods } from './resolver-directives';

/**
 * The field extension `@RateLimit` sets: the directive arguments it carries, decided after the
 * handler's guards rather than before the resolver.
 */
export const AFTER_GUARDS = 'graphqlAtomicRateLimitAfterGuards';

/**
 * What the transform leaves for the module: the `@RateLimit` methods whose fields it wired (the
 * others would throw when called, and the module refuses to start with them).
 */
export interface AfterGuards {
  /** The `@RateLimit` methods a transform found on a field; empty until one ran. */
  readonly wired: ReadonlySet<HandlerMark>;
  /** Whether a GraphQLModule built from `graphqlOptions()` ran the transform. */
  readonly built: () => boolean;
  /**
   * Returns a new schema whose fields marked by `@RateLimit` (or named in `coordinates`) are
   * decided by `transformer`'s wrapper after the guards: by the method's gate for `@RateLimit`,
   * by the interceptor for `coordinates`; every other limited field is decided as `transformer`
   * alone decides it. `fieldInterceptors`: whether Nest runs interceptors on field resolvers
   * (`fieldResolverEnhancers`).
   */
  readonly transform: (schema: GraphQLSchema, fieldInterceptors: boolean) => GraphQLSchema;
}

/**
 * Decisions moved behind Nest's guards. `transformer` wraps a stand-in that runs the rest of
 * the pipeline, and the field keeps Nest's own resolver, run inside a {@link Call}, so that
 * guards run first; the gate of a `@RateLimit` method (or, for a schema-first field, the
 * interceptor) then runs the wrapped stand-in for each pass, which decides (same store, errors,
 * headers and `onDecision` as every other field) and proceeds only if the hit passed. A call a
 * guard refuses never gets there and counts nothing.
 */
export function afterGuards(
  transformer: (schema: GraphQLSchema) => GraphQLSchema,
  name: string,
  coordinates: readonly string[] = [],
  resolvers: () => readonly object[] = () => [],
): AfterGuards {
  const wired = new Set<HandlerMark>();
  let built = false;
  const proceeding = new WeakMap<object, () => Promise<unknown>>();
  const proceed: GraphQLFieldResolver<unknown, unknown> = (_s, _a, _c, info) => {
    const next = proceeding.get(info);
    proceeding.delete(info);
    if (!next) throw new Error('graphql-atomic-rate-limit: a decision ran outside its resolver');
    return next();
  };
  const transform = (schema: GraphQLSchema, fieldInterceptors: boolean): GraphQLSchema => {
    built = true;
    const named = new Set(coordinates);
    // a @ResolveField's extensions are dropped when its @ObjectType declares the field too
    const instances = resolvers();
    const byField = new Map(instances.flatMap(markedMethods).map((m) => [m.coordinate, m.mark]));
    // and a @Directive on a @ResolveField is dropped when that @Field has directives of its own
    for (const { coordinate, method } of directedMethods(instances, name)) {
      const [typeName = '', fieldName = ''] = coordinate.split('.');
      const type = schema.getType(typeName);
      const field = isObjectType(type) ? type.getFields()[fieldName] : undefined;
      if (field && directivesOn(schema, field, name, coordinate).length === 0) {
        throw new RateLimitConfigError(
          `${coordinate}: the @Directive('@${name}(...)') of ${method} is dropped: Nest keeps the ` +
            `directives of the @ObjectType's own @Field ${fieldName}; write @${name} there, or ` +
            'put @RateLimit on the method',
        );
      }
    }
    const subscription = schema.getSubscriptionType()?.name;
    const roots = new Set([schema.getQueryType(), schema.getMutationType()].map((t) => t?.name));
    const handlers = new Map<
      string,
      { resolve: GraphQLFieldResolver<unknown, unknown>; mark: HandlerMark | undefined }
    >();
    const staged = mapSchema(schema, {
      [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
        const coordinate = `${typeName}.${fieldName}`;
        const extension = field.extensions?.[AFTER_GUARDS] as
          readonly Record<string, unknown>[] | undefined;
        const mark = extension ? markOfLimits(extension) : byField.get(coordinate);
        const marked = extension ?? mark?.limits;
        if (!marked && !named.delete(coordinate)) return field;
        if (typeName === subscription) {
          // the decision would run per event, never when the subscription starts
          throw new RateLimitConfigError(
            `${coordinate}: @RateLimit and afterGuards do not limit subscriptions yet; ` +
              `limit a Subscription field with @${name} in the SDL`,
          );
        }
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
        handlers.set(coordinate, { resolve: field.resolve, mark });
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
        const { resolve, mark } = handler;
        if (mark) wired.add(mark);
        const guarded = {
          ...field,
          resolve: async (source, args, context, info) => {
            const call: Call = {
              coordinate,
              info,
              mark,
              decided: 0,
              decide: (next) => {
                call.decided++;
                proceeding.set(info, next);
                return Promise.resolve(decide(source, args, context, info));
              },
            };
            const result = await calls.run(call, () => resolve(source, args, context, info));
            if (call.decided === 0 && !mark) {
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
  return { wired, built: () => built, transform };
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
