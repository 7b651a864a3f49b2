import type { Logger } from '@nestjs/common';

import type { DecisionEvent } from '../decision-events';
import type { RateLimitStore } from '../stores/store';

/*
 * What a Nest application hears of its store: it starts serving once the store is set up (or
 * once the store's own allowance for that has passed, when Redis is not there), and an outage
 * is one log line when it begins and one when it ends, however many calls it refuses: the
 * refusals themselves (RATE_LIMIT_UNAVAILABLE) are answers, not errors to log one by one.
 */

/** How long the application waits for its store's set-up before it serves; the Redis store's `setupWaitMs`. */
export const SETUP_WAIT_MS = 5_000;

/**
 * Resolves once `store` is ready, or after {@link SETUP_WAIT_MS} with one warning: the
 * application then serves, and its limited fields fail closed until the store can decide.
 */
export async function setUpBeforeServing(store: RateLimitStore, logger: Logger): Promise<void> {
  if (!store.ready) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), SETUP_WAIT_MS);
  });
  const outcome = await Promise.race([
    store.ready().then(
      () => 'ready' as const,
      (error: unknown) => error,
    ),
    late,
  ]).finally(() => clearTimeout(timer));
  if (outcome === 'ready') return;
  const why = outcome === 'late' ? `not set up within ${SETUP_WAIT_MS} ms` : String(outcome);
  logger.warn(`Rate limit store ${why}; limited fields fail closed until it can decide`);
}

/**
 * An `onDecision` that logs the first store failure of an outage and the first decision the
 * store makes after it, then calls `then` (the application's own `onDecision`) with every event.
 */
export function outageLog(
  logger: Logger,
  then: ((event: DecisionEvent) => void) | undefined,
): (event: DecisionEvent) => void {
  let down = false;
  return (event) => {
    if (event.error && !down) {
      down = true;
      logger.error(
        `Rate limit store failing (${event.error.message}); limited fields answer per ` +
          'onStoreError (RATE_LIMIT_UNAVAILABLE by default) until it decides again',
      );
    } else if (!event.error && event.decidedBy === 'store' && down) {
      down = false;
      logger.log('Rate limit store deciding again');
    }
    then?.(event);
  };
}
