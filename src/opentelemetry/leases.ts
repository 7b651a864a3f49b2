import {
  type Attributes,
  type Counter,
  type MeterProvider,
  type UpDownCounter,
} from '@opentelemetry/api';

import { RateLimitConfigError } from '../errors';
import { isConcurrency } from '../rate-limit-rule';
import type { Lease, RateLimitStore } from '../stores/store';
import { DECISION_ATTRIBUTES, meterOf } from './decisions';

/** Options of {@link withLeaseMetrics}. */
export interface LeaseMetricsOptions {
  /**
   * Where metrics go. Read at the first lease, so a global provider registered before the
   * server takes requests is the one used. @default the global meter provider
   */
  readonly meterProvider?: MeterProvider | undefined;
}

/**
 * `store`, recording the `CONCURRENCY` slots this process holds and gives back: an up-down
 * counter `graphql.rate_limit.slots` (slots held now, by action: up when a hit that passed takes
 * them, down when its call releases them) and a counter `graphql.rate_limit.releases` (by
 * action). A decision is not the place to learn of a release, which comes when the call it
 * guards has ended: the store is, since every release goes through it. `store` itself is left
 * as it is; give the directive the store this returns (and wrap a `fallbackStore` too, to count
 * its slots).
 *
 * ```ts
 * rateLimitDirective({ store: withLeaseMetrics(store), onDecision: openTelemetry() });
 * ```
 */
export function withLeaseMetrics(
  store: RateLimitStore,
  options: LeaseMetricsOptions = {},
): RateLimitStore {
  if (typeof store !== 'object' || store === null || typeof store.hit !== 'function') {
    throw new RateLimitConfigError('withLeaseMetrics: `store` must be a rate limit store');
  }
  if (typeof options !== 'object' || options === null) {
    throw new RateLimitConfigError('withLeaseMetrics: options must be an object');
  }
  let instruments: { slots: UpDownCounter; releases: Counter } | undefined;
  const instrumentsNow = () => {
    if (instruments) return instruments;
    const meter = meterOf(options.meterProvider);
    return (instruments = {
      slots: meter.createUpDownCounter('graphql.rate_limit.slots', {
        description: 'CONCURRENCY slots held by calls running in this process',
        unit: '{slot}',
      }),
      releases: meter.createCounter('graphql.rate_limit.releases', {
        description: 'CONCURRENCY leases released by calls that ended',
        unit: '{release}',
      }),
    });
  };
  /** Each CONCURRENCY limit of `lease` with the slots it holds there. */
  const held = (lease: Lease): { labels: Attributes; slots: number }[] =>
    lease.rules.flatMap((rule, i) =>
      isConcurrency(rule)
        ? [
            {
              labels: { [DECISION_ATTRIBUTES.action]: rule.action },
              slots: lease.costs?.[i] ?? rule.cost,
            },
          ]
        : [],
    );
  // a lease released twice (the store allows it) is counted down once
  const released = new WeakSet<Lease>();

  const hit: RateLimitStore['hit'] = (...args) =>
    store.hit(...args).then((decision) => {
      if (decision.lease) {
        const { slots } = instrumentsNow();
        for (const part of held(decision.lease)) slots.add(part.slots, part.labels);
      }
      return decision;
    });
  const measured: RateLimitStore['release'] =
    store.release &&
    ((lease) => {
      if (!released.has(lease)) {
        released.add(lease);
        const { slots, releases } = instrumentsNow();
        for (const part of held(lease)) {
          slots.add(-part.slots, part.labels);
          releases.add(1, part.labels);
        }
      }
      return (store.release as NonNullable<RateLimitStore['release']>).call(store, lease);
    });
  // every other member as the store has it, called on the store
  return new Proxy(store, {
    get(target, key) {
      if (key === 'hit') return hit;
      if (key === 'release') return measured;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}
