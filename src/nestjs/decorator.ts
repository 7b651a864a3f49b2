import { Extensions } from '@nestjs/graphql';

import type { RateLimitArgs } from '../rate-limit-rule';
import { RateLimitConfigError } from '../errors';
import { AFTER_GUARDS } from './after-guards';

/**
 * Limits a code-first resolver method (`@Query`, `@Mutation`, `@ResolveField`) like
 * `@rateLimit(...)` on its field, but decided after the method's guards: `identify` sees what a
 * guard set (`req.user`), and a call a guard refuses counts nothing. Give several limits in one
 * call; they are decided together, as the directive's are. Needs `RateLimitModule`.
 */
export function RateLimit(
  ...limits: readonly [RateLimitArgs, ...RateLimitArgs[]]
): MethodDecorator {
  const extensions = Extensions({ [AFTER_GUARDS]: limits.map((l) => ({ ...l })) });
  return (target, key, descriptor) => {
    // Nest keeps the last of two extensions with the same key: a second would drop the first
    const methods = decorated.get(target) ?? new Set();
    if (methods.has(key)) {
      throw new RateLimitConfigError(
        `${target.constructor.name}.${String(key)}: @RateLimit is given twice; ` +
          'pass every limit to one @RateLimit(...)',
      );
    }
    decorated.set(target, methods.add(key));
    extensions(target, key, descriptor);
  };
}

const decorated = new WeakMap<object, Set<string | symbol>>();
