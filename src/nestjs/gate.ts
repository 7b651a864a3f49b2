import { AsyncLocalStorage } from 'node:async_hooks';

import { isObservable, lastValueFrom } from 'rxjs';

import { RateLimitConfigError } from '../errors';

/** Runs the field's decision, then `proceed` (the rest of Nest's pipeline) if it passed. */
export type DecideThen = (proceed: () => Promise<unknown>) => Promise<unknown>;

/** One `@RateLimit` method: what its gate and the transform agree on. */
export interface HandlerMark {
  /** `Class.method`, for errors. */
  readonly name: string;
  /** The arguments of its `@RateLimit`, as the field extension carries them. */
  readonly limits: readonly Record<string, unknown>[];
}

/**
 * The resolver call in progress, set by the transform's wrapper around Nest's resolver for a
 * field decided after guards, and read by whatever decides it: the gate of a `@RateLimit`
 * method (code-first) or the interceptor (schema-first `afterGuards`).
 */
export interface Call {
  readonly coordinate: string;
  /** The `info` of the call, so that a nested execution never takes an outer call's decision. */
  readonly info: object;
  /** The `@RateLimit` method the field was wired for; none for a schema-first field. */
  readonly mark: HandlerMark | undefined;
  /** Decides one pass: every pass that reaches the handler is a hit of its own. */
  readonly decide: DecideThen;
  /** How many passes were decided. */
  decided: number;
}

/** The call in progress (an `AsyncLocalStorage`, typed so the declarations need no Node types). */
export const calls: {
  getStore(): Call | undefined;
  run<R>(call: Call, fn: () => R): R;
  exit<R>(fn: () => R): R;
} = new AsyncLocalStorage<Call>();

/** The mark of each `@RateLimit` limits array (the field extension) and of each gate. */
const byLimits = new WeakMap<object, HandlerMark>();
const byGate = new WeakMap<object, HandlerMark>();

/** The method `@RateLimit` put `limits` on, if the extension is one of its. */
export function markOfLimits(limits: object): HandlerMark | undefined {
  return byLimits.get(limits);
}

/** The mark of `method` if it is a `@RateLimit` gate. */
export function markOfMethod(method: unknown): HandlerMark | undefined {
  return typeof method === 'function' ? byGate.get(method) : undefined;
}

interface MetadataReflect {
  getOwnMetadataKeys?(target: object): unknown[];
  getOwnMetadata?(key: unknown, target: object): unknown;
  defineMetadata?(key: unknown, value: unknown, target: object): void;
}

/**
 * `method` behind a gate that runs it only through the decision of the call that reached it
 * (after Nest's guards, interceptors and pipes, once per pass), and throws otherwise: a
 * `@RateLimit` method never runs undecided, whatever wired (or failed to wire) its field.
 */
export function gated(
  method: (...args: unknown[]) => unknown,
  limits: readonly Record<string, unknown>[],
  name: string,
): (...args: unknown[]) => unknown {
  const mark: HandlerMark = Object.freeze({ name, limits });
  const gate = function (this: unknown, ...args: unknown[]): unknown {
    const call = calls.getStore();
    if (call?.mark !== mark) {
      throw new RateLimitConfigError(
        `${name}: a @RateLimit method ran with no rate-limit decision for the call: ` +
          'GraphQLModule options not built with RateLimitService.graphqlOptions() ' +
          '(or the method was called directly)',
      );
    }
    // the method runs outside the call: what it calls (another @RateLimit method) is not decided;
    // an Observable it returns is the work itself, run once Nest subscribes: it is subscribed
    // here, so that the slot is held until it completes or errors (Nest would take its last value)
    return call.decide(() =>
      calls.exit(() => {
        const result = method.apply(this, args);
        return isObservable(result) ? lastValueFrom(result) : Promise.resolve(result);
      }),
    );
  };
  // what Nest's decorators put on the method before this one (guards, roles) stays readable
  const reflect = Reflect as unknown as MetadataReflect;
  for (const key of reflect.getOwnMetadataKeys?.(method) ?? []) {
    reflect.defineMetadata?.(key, reflect.getOwnMetadata?.(key, method), gate);
  }
  Object.defineProperty(gate, 'name', { value: method.name });
  byLimits.set(limits, mark);
  byGate.set(gate, mark);
  return gate;
}

/** A `@RateLimit` method of a resolver instance, and the field Nest serves it as. */
export interface MarkedMethod {
  readonly mark: HandlerMark;
  /** `Type.field`, from Nest's resolver metadata; undefined when it has none. */
  readonly coordinate: string | undefined;
}

interface ReadReflect {
  getMetadata?(key: string, target: object): unknown;
}

/** The `@RateLimit` methods of `instance` (its class's and inherited ones). */
export function markedMethods(instance: object): MarkedMethod[] {
  const found: MarkedMethod[] = [];
  for (let p: unknown = Object.getPrototypeOf(instance); p && p !== Object.prototype;) {
    for (const key of Object.getOwnPropertyNames(p)) {
      // read as a descriptor: a getter is not run
      const method: unknown = Object.getOwnPropertyDescriptor(p, key)?.value;
      const mark = markOfMethod(method);
      if (mark) found.push({ mark, coordinate: fieldOf(instance, method as object, key) });
    }
    p = Object.getPrototypeOf(p);
  }
  return found;
}

/**
 * The field Nest registers `method` for, read as Nest's resolver explorer reads it: a
 * `@ResolveField` names its field and takes its type from `@Resolver(() => Type)`; a `@Query` or
 * `@Mutation` carries both.
 */
export function fieldOf(instance: object, method: object, key: string): string | undefined {
  const read = (k: string, t: object): unknown => (Reflect as ReadReflect).getMetadata?.(k, t);
  const property = read('graphql:resolve_property', method) === true;
  const type = read('graphql:resolver_type', property ? instance.constructor : method);
  const field = read('graphql:resolver_name', method) ?? key;
  return typeof type === 'string' && typeof field === 'string' ? `${type}.${field}` : undefined;
}
