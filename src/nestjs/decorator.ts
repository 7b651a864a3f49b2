import { Extensions } from '@nestjs/graphql';

import type { RateLimitArgs } from '../rate-limit-rule';
import { RateLimitConfigError } from '../errors';
import { AFTER_GUARDS } from './after-guards';
import { gated } from './gate';

/**
 * Limits a code-first resolver method (`@Query`, `@Mutation`, `@ResolveField`) like
 * `@rateLimit(...)` on its field, but decided right before the method runs, after its guards,
 * interceptors and pipes: `identify` sees what a guard set (`req.user`), and a call a guard or a
 * pipe refuses counts nothing; each run (an interceptor's retry too) is a hit. Give several limits
 * in one call; they are decided together, as the directive's are. Needs `RateLimitModule`, and a
 * GraphQLModule built from `RateLimitService.graphqlOptions()`: without them the method throws
 * rather than run undecided. Not for `@Subscription` (refused at start).
 */
export function RateLimit(
  ...limits: readonly [RateLimitArgs, ...RateLimitArgs[]]
): MethodDecorator {
  return (target, key, descriptor) => {
    const name = `${target.constructor.name}.${String(key)}`;
    // Nest keeps the last of two extensions with the same key: a second would drop the first
    const methods = decorated.get(target) ?? new Set();
    if (methods.has(key)) {
      throw new RateLimitConfigError(
        `${name}: @RateLimit is given twice; pass every limit to one @RateLimit(...)`,
      );
    }
    if (typeof descriptor.value !== 'function') {
      throw new RateLimitConfigError(`${name}: @RateLimit goes on a resolver method`);
    }
    decorated.set(target, methods.add(key));
    // one array per method: the transform tells by it which method a field's limits came from
    const marked = limits.map((l) => ({ ...l }));
    const method = descriptor.value as unknown as (...args: unknown[]) => unknown;
    descriptor.value = gated(method, marked, name) as typeof descriptor.value;
    Extensions({ [AFTER_GUARDS]: marked })(target, key, descriptor);
  };
}

const decorated = new WeakMap<object, Set<string | symbol>>();
