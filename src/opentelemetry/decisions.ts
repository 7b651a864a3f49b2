import {
  context,
  metrics,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  type TracerProvider,
} from '@opentelemetry/api';

import type { DecisionEvent } from '../decision-events';
import { RateLimitConfigError } from '../errors';

/** How one decision ended, as spans and metrics tell it. */
export type Outcome = 'allowed' | 'blocked' | 'error' | 'dry_run';

/**
 * The attribute keys of a decision's span; the metrics carry the first five (and `error.type`),
 * whose values come from the schema and the library, never from a request, so that their
 * cardinality is bounded by the schema. No identity, document or argument is ever one of them.
 */
export const DECISION_ATTRIBUTES = {
  outcome: 'graphql.rate_limit.outcome',
  action: 'graphql.rate_limit.action',
  algorithm: 'graphql.rate_limit.algorithm',
  decidedBy: 'graphql.rate_limit.decided_by',
  field: 'graphql.rate_limit.field',
  limit: 'graphql.rate_limit.limit',
  window: 'graphql.rate_limit.window',
  cost: 'graphql.rate_limit.cost',
  remaining: 'graphql.rate_limit.remaining',
  retryAfter: 'graphql.rate_limit.retry_after',
  identityHash: 'graphql.rate_limit.identity.hash',
  reason: 'graphql.rate_limit.reason',
  errorType: 'error.type',
} as const;

/** One of {@link DECISION_ATTRIBUTES}' keys. */
export type DecisionAttribute = (typeof DECISION_ATTRIBUTES)[keyof typeof DECISION_ATTRIBUTES];

/** Options of {@link openTelemetry}. */
export interface OpenTelemetryOptions {
  /** Where spans go. @default the global tracer provider of `@opentelemetry/api` */
  readonly tracerProvider?: TracerProvider | undefined;
  /**
   * Where metrics go. Read at the first decision, so a global provider registered before the
   * server takes requests is the one used. @default the global meter provider
   */
  readonly meterProvider?: MeterProvider | undefined;
  /**
   * Opt-in: a key under which each span also carries `graphql.rate_limit.identity.hash`, the
   * first 16 hex digits of HMAC-SHA256(key, identity), to tell one caller's decisions apart
   * without naming the caller. Never on metrics. Needs `node:crypto`. It must be a long random
   * secret (at least {@link MIN_IDENTITY_HASH_KEY} characters; `openssl rand -hex 32`): identities
   * are few and guessable (team ids, user ids), so whoever knows the key can hash every candidate
   * and read who each span is. @default undefined (no hash)
   */
  readonly identityHashKey?: string | undefined;
  /** Another hook that receives every event after it is recorded. @default undefined */
  readonly onDecision?: ((event: DecisionEvent) => void) | undefined;
}

/** The shortest `identityHashKey` accepted: 32 characters, as 16 random bytes in hex. */
export const MIN_IDENTITY_HASH_KEY = 32;

const SCOPE = 'graphql-atomic-rate-limit';

/** The package's meter of `provider`, else of the global meter provider (read now). */
export function meterOf(provider: MeterProvider | undefined): Meter {
  return (provider ?? metrics.getMeterProvider()).getMeter(SCOPE);
}
const A = DECISION_ATTRIBUTES;

/**
 * An `onDecision` hook that records each decision of `rateLimitDirective` (field hits and budget
 * takes) in OpenTelemetry: a span, a child of whatever span is active where the field or the
 * operation is resolved (the resolver's, under `@opentelemetry/instrumentation-graphql` or
 * `@envelop/opentelemetry`), timed from when the store was asked to when it answered; a counter
 * `graphql.rate_limit.decisions` by outcome, action, algorithm, decider and field; and a
 * histogram `graphql.rate_limit.decision.duration` (seconds). A block is an answer, not a span
 * error; a store failure that nothing else decided is (outcome `error`).
 *
 * ```ts
 * rateLimitDirective({ store, onDecision: openTelemetry() });
 * ```
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): (event: DecisionEvent) => void {
  if (typeof options !== 'object' || options === null) {
    throw new RateLimitConfigError('openTelemetry: options must be an object');
  }
  const { identityHashKey, onDecision } = options;
  if (
    identityHashKey !== undefined &&
    (typeof identityHashKey !== 'string' || identityHashKey.length < MIN_IDENTITY_HASH_KEY)
  ) {
    // the key itself is never shown
    throw new RateLimitConfigError(
      `openTelemetry: \`identityHashKey\` must be a random secret of at least ${MIN_IDENTITY_HASH_KEY} characters (openssl rand -hex 32), got ${typeof identityHashKey === 'string' ? `${identityHashKey.length}` : typeof identityHashKey}`,
    );
  }
  if (onDecision !== undefined && typeof onDecision !== 'function') {
    throw new RateLimitConfigError('openTelemetry: `onDecision` must be a function');
  }
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const hash = identityHashKey === undefined ? undefined : identityHasher(identityHashKey);
  let instruments: { decisions: Counter; duration: Histogram } | undefined;
  const instrumentsNow = () => {
    if (instruments) return instruments;
    const meter = meterOf(options.meterProvider);
    return (instruments = {
      decisions: meter.createCounter('graphql.rate_limit.decisions', {
        description: 'Rate-limit decisions (field hits and budget takes), by outcome',
        unit: '{decision}',
      }),
      duration: meter.createHistogram('graphql.rate_limit.decision.duration', {
        description: 'Time from asking the store to its answer',
        unit: 's',
        // the SDK's default buckets start at 5 (seconds here): every decision would fall in the
        // first. A decision takes from a tenth of a millisecond (the block cache, memory) to
        // `timeoutMs` (250 ms by default) and a little past it for a late failure
        advice: {
          explicitBucketBoundaries: [
            0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
          ],
        },
      }),
    });
  };

  return (event) => {
    const outcome = outcomeOf(event);
    const labels: Attributes = {
      [A.outcome]: outcome,
      [A.action]: event.rule.action,
      [A.algorithm]: event.rule.algorithm,
      [A.decidedBy]: event.decidedBy,
      [A.field]: event.field,
    };
    if (event.error) labels[A.errorType] = errorType(event.error);
    const { decisions, duration } = instrumentsNow();
    decisions.add(1, labels);
    duration.record(event.latencyMs / 1000, labels);

    const attributes: Attributes = {
      ...labels,
      [A.limit]: event.rule.limit,
      [A.window]: event.rule.windowSeconds,
      [A.cost]: event.cost ?? event.rule.cost,
      [A.retryAfter]: event.retryAfter,
    };
    if (event.remaining !== undefined) attributes[A.remaining] = event.remaining;
    if (event.reason !== undefined) attributes[A.reason] = event.reason;
    if (hash) attributes[A.identityHash] = hash(event.identity);
    const span = tracer.startSpan(
      `rate_limit ${event.rule.action}`,
      { kind: SpanKind.INTERNAL, attributes, startTime: Date.now() - event.latencyMs },
      context.active(),
    );
    // the error's kind only: a message may carry what a caller sent
    if (outcome === 'error')
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: labels[A.errorType] as string | undefined,
      });
    span.end();
    onDecision?.(event);
  };
}

/** A store failure that nothing else decided is an error, whatever `onStoreError` let through. */
function outcomeOf(event: DecisionEvent): Outcome {
  if (event.error && event.decidedBy === 'store') return 'error';
  if (event.dryRun) return 'dry_run';
  return event.allowed ? 'allowed' : 'blocked';
}

/**
 * A failure's kind, as `error.type` names it with few values: its class when it has one of its
 * own (`StoreTimeoutError`, a client's `ReplyError`), else its code (`ECONNREFUSED`), else the
 * code of a Redis reply its message quotes (`NOPERM`, `WRONGTYPE`), else the code a client
 * is answered, `RATE_LIMIT_UNAVAILABLE`. Never the message: it may carry what a caller sent.
 */
export function errorType(error: Error): string {
  if (typeof error.name === 'string' && error.name !== '' && error.name !== 'Error') {
    return error.name;
  }
  const { code } = error as { code?: unknown };
  if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,39}$/.test(code)) return code;
  return /(?:^|: )([A-Z][A-Z0-9]{2,19}) /.exec(error.message)?.[1] ?? 'RATE_LIMIT_UNAVAILABLE';
}

function identityHasher(key: string): (identity: string) => string {
  // loaded only when asked for: without a hash the module needs nothing of Node
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createHmac } = require('node:crypto') as typeof import('node:crypto');
  return (identity) => createHmac('sha256', key).update(identity).digest('hex').slice(0, 16);
}
