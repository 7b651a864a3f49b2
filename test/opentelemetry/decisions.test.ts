import { context, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { ApolloServer } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { graphql, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { Redis } from 'ioredis';

import {
  createMemoryStore,
  createRedisStore,
  rateLimitDirective,
  type RateLimitDirectiveOptions,
} from '../../src';
import { counterKey } from '../../src/stores/keys';
import {
  DECISION_ATTRIBUTES,
  MIN_IDENTITY_HASH_KEY,
  openTelemetry,
  withLeaseMetrics,
} from '../../src/opentelemetry';
import { freePort, waitFor } from '../support/processes';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * The OpenTelemetry hook, read through the SDK's own in-memory exporters: one span and one
 * counted decision per hit, parented where the field resolves, with a fixed set of attribute
 * keys and no identity anywhere in what is exported.
 */

const SECRET = 'team-7f3a-secret-identity';
/** An identity hash key as the docs ask for one: 32 random bytes in hex. */
const KEY = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);

const readers: PeriodicExportingMetricReader[] = [];
afterAll(async () => {
  await Promise.all(readers.map((r) => r.shutdown()));
  context.disable();
  await closeClients();
});

interface Telemetry {
  readonly spans: InMemorySpanExporter;
  readonly reader: PeriodicExportingMetricReader;
  readonly tracer: Tracer;
  readonly meterProvider: MeterProvider;
  readonly hook: ReturnType<typeof openTelemetry>;
  metrics(): Promise<ResourceMetrics>;
}

function telemetry(options: Parameters<typeof openTelemetry>[0] = {}): Telemetry {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spans)],
  });
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  readers.push(reader);
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    spans,
    reader,
    tracer: tracerProvider.getTracer('test'),
    meterProvider,
    hook: openTelemetry({ tracerProvider, meterProvider, ...options }),
    async metrics() {
      const { resourceMetrics, errors } = await reader.collect();
      expect(errors).toEqual([]);
      return resourceMetrics;
    },
  };
}

/**
 * A schema limited 2 a window, whose resolvers run, as a GraphQL instrumentation runs them, in
 * a span of their own (`resolve Mutation.submit`), so that the decision's parent can be told.
 */
function schemaWith(
  tracer: Tracer,
  options: Omit<RateLimitDirectiveOptions, 'identify'>,
): GraphQLSchema {
  const { typeDefs, transformer } = rateLimitDirective({
    identify: (ctx: { team?: string }) => ctx.team,
    timeoutMs: 5_000, // none of these tests is about a deadline
    ...options,
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        `type Query { ok: Boolean }
         type Mutation { submit(flag: String!): Boolean @rateLimit(action: "submit", window: 60, limit: 2) }`,
      ],
      resolvers: { Mutation: { submit: () => true } },
    }),
  );
  const field = schema.getMutationType()?.getFields().submit;
  const limited = field?.resolve as GraphQLFieldResolver<unknown, unknown>;
  if (field) {
    field.resolve = (source, args, ctx, info) =>
      tracer.startActiveSpan('resolve Mutation.submit', (span) =>
        Promise.resolve(limited(source, args, ctx, info)).finally(() => span.end()),
      );
  }
  return schema;
}

const submit = (schema: GraphQLSchema, team = SECRET) =>
  graphql({ schema, source: 'mutation { submit(flag: "CTF{x}") }', contextValue: { team } });

const decisionSpans = (t: Telemetry): ReadableSpan[] =>
  t.spans.getFinishedSpans().filter((s) => s.name.startsWith('rate_limit '));

/** Every data point of a metric (the decisions counter), as `{ attributes, value }`. */
async function counted(t: Telemetry, name = 'graphql.rate_limit.decisions') {
  const resource = await t.metrics();
  const metric = resource.scopeMetrics
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === name);
  return (metric?.dataPoints ?? []).map((p) => ({ attributes: p.attributes, value: p.value }));
}

test('one span and one counted decision per hit, by outcome, parented by the resolver', async () => {
  const t = telemetry();
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  const schema = schemaWith(t.tracer, { store, onDecision: t.hook });

  const results = await Promise.all([1, 2, 3].map(() => submit(schema)));
  expect(results.filter((r) => r.errors === undefined)).toHaveLength(2);

  const spans = decisionSpans(t);
  expect(spans).toHaveLength(3);
  const resolvers = t.spans.getFinishedSpans().filter((s) => s.name === 'resolve Mutation.submit');
  expect(resolvers).toHaveLength(3);
  for (const span of spans) {
    expect(resolvers.map((r) => r.spanContext().spanId)).toContain(span.parentSpanContext?.spanId);
    expect(span.status.code).toBe(0); // a block is an answer, not an error
  }
  const outcomes = spans.map((s) => s.attributes[DECISION_ATTRIBUTES.outcome]).sort();
  expect(outcomes).toEqual(['allowed', 'allowed', 'blocked']);
  const blocked = spans.find((s) => s.attributes[DECISION_ATTRIBUTES.outcome] === 'blocked');
  expect(blocked?.attributes).toMatchObject({
    [DECISION_ATTRIBUTES.action]: 'submit',
    [DECISION_ATTRIBUTES.algorithm]: 'FIXED_WINDOW',
    [DECISION_ATTRIBUTES.decidedBy]: 'store',
    [DECISION_ATTRIBUTES.field]: 'Mutation.submit',
    [DECISION_ATTRIBUTES.limit]: 2,
    [DECISION_ATTRIBUTES.window]: 60,
    [DECISION_ATTRIBUTES.cost]: 1,
    [DECISION_ATTRIBUTES.remaining]: 0,
  });
  expect(blocked?.attributes[DECISION_ATTRIBUTES.retryAfter]).toBeGreaterThanOrEqual(1);

  const points = await counted(t);
  const byOutcome = Object.fromEntries(
    points.map((p) => [p.attributes[DECISION_ATTRIBUTES.outcome], p.value]),
  );
  expect(byOutcome).toEqual({ allowed: 2, blocked: 1 });
  await store.close?.();
});

test('the attribute keys are a fixed set, and no identity is in any exported byte', async () => {
  const t = telemetry();
  const schema = schemaWith(t.tracer, { store: createMemoryStore(), onDecision: t.hook });
  await Promise.all([1, 2, 3].map(() => submit(schema)));

  const spanKeys = new Set(decisionSpans(t).flatMap((s) => Object.keys(s.attributes)));
  expect([...spanKeys].sort()).toEqual(
    [
      DECISION_ATTRIBUTES.outcome,
      DECISION_ATTRIBUTES.action,
      DECISION_ATTRIBUTES.algorithm,
      DECISION_ATTRIBUTES.decidedBy,
      DECISION_ATTRIBUTES.field,
      DECISION_ATTRIBUTES.limit,
      DECISION_ATTRIBUTES.window,
      DECISION_ATTRIBUTES.cost,
      DECISION_ATTRIBUTES.retryAfter,
      DECISION_ATTRIBUTES.remaining,
      DECISION_ATTRIBUTES.reason, // the blocked one's: RATE
    ].sort(),
  );
  const points = await counted(t);
  const labelKeys = new Set(points.flatMap((p) => Object.keys(p.attributes)));
  expect([...labelKeys].sort()).toEqual(
    [
      DECISION_ATTRIBUTES.outcome,
      DECISION_ATTRIBUTES.action,
      DECISION_ATTRIBUTES.algorithm,
      DECISION_ATTRIBUTES.decidedBy,
      DECISION_ATTRIBUTES.field,
    ].sort(),
  );

  const exported = JSON.stringify([
    t.spans.getFinishedSpans().map((s) => ({
      name: s.name,
      attributes: s.attributes,
      events: s.events,
      status: s.status,
      links: s.links,
      resource: s.resource.attributes,
    })),
    await t.metrics(),
  ]);
  expect(exported).toContain('Mutation.submit'); // what is read is the export, not nothing
  expect(exported).not.toContain(SECRET);
  expect(exported).not.toContain('CTF{x}');
});

test('an opt-in identity hash tells callers apart on spans, never on metrics', async () => {
  const t = telemetry({ identityHashKey: KEY });
  const schema = schemaWith(t.tracer, { store: createMemoryStore(), onDecision: t.hook });
  await submit(schema, 'team-a');
  await submit(schema, 'team-a');
  await submit(schema, 'team-b');
  const hashes = decisionSpans(t).map((s) => s.attributes[DECISION_ATTRIBUTES.identityHash]);
  expect(hashes[0]).toMatch(/^[0-9a-f]{16}$/);
  expect(hashes[1]).toBe(hashes[0]);
  expect(hashes[2]).not.toBe(hashes[0]);
  const points = await counted(t);
  expect(points.flatMap((p) => Object.keys(p.attributes))).not.toContain(
    DECISION_ATTRIBUTES.identityHash,
  );
  expect(JSON.stringify(decisionSpans(t).map((s) => s.attributes))).not.toContain('team-a');
});

test('a store on a closed port gives outcome error, a span error naming only the error', async () => {
  const t = telemetry();
  const port = await freePort();
  const client = new Redis({ port, maxRetriesPerRequest: 0, disconnectTimeout: 0 });
  client.on('error', () => undefined);
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  const schema = schemaWith(t.tracer, { store, onDecision: t.hook, timeoutMs: 300 });

  const result = await submit(schema);
  expect(result.errors?.[0]?.extensions?.code).toBe('RATE_LIMIT_UNAVAILABLE');
  const [span] = decisionSpans(t);
  expect(span?.attributes[DECISION_ATTRIBUTES.outcome]).toBe('error');
  // the failure's kind, not the class every error shares
  expect(span?.attributes[DECISION_ATTRIBUTES.errorType]).toMatch(/^(StoreTimeoutError|[A-Z_]+)$/);
  expect(span?.status.message).toBe(span?.attributes[DECISION_ATTRIBUTES.errorType]);
  expect(span?.attributes).not.toHaveProperty(DECISION_ATTRIBUTES.remaining);
  expect(span?.status.code).toBe(2);
  const points = await counted(t);
  expect(points.map((p) => p.attributes[DECISION_ATTRIBUTES.outcome])).toEqual(['error']);
  await store.close?.();
  client.disconnect();
});

test("a budget's take is a decision of field 'budget'", async () => {
  const t = telemetry();
  const { typeDefs, transformer, plugin } = rateLimitDirective({
    store: createMemoryStore(),
    identify: (ctx: { team?: string }) => ctx.team,
    budget: { limit: 100, window: 60 },
    onDecision: t.hook,
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        'type Query { items: [Item!]! @listSize(assumedSize: 5) } type Item { id: ID! }',
      ],
      resolvers: { Query: { items: () => [{ id: '1' }] } },
    }),
  );
  const server = new ApolloServer({ schema, plugins: [plugin] });
  await server.start();
  try {
    const response = await server.executeOperation(
      { query: '{ items { id } }' },
      { contextValue: { team: SECRET } },
    );
    expect(response.body.kind).toBe('single');
    const [span] = decisionSpans(t);
    expect(span?.attributes).toMatchObject({
      [DECISION_ATTRIBUTES.field]: 'budget',
      [DECISION_ATTRIBUTES.outcome]: 'allowed',
      [DECISION_ATTRIBUTES.action]: 'budget',
    });
    expect(JSON.stringify(span?.attributes)).not.toContain(SECRET);
  } finally {
    await server.stop();
  }
});

test("a Redis error's kind is its reply code", async () => {
  const t = telemetry();
  const prefix = uniquePrefix();
  const admin = await connectRedis();
  const store = await openedRedisStore({ client: await connectRedis(), prefix, blockCache: false });
  const schema = schemaWith(t.tracer, { store, onDecision: t.hook });
  // a key of another type where the counter goes: Redis answers WRONGTYPE
  const rule = {
    action: 'submit',
    algorithm: 'FIXED_WINDOW',
    windowSeconds: 60,
    limit: 2,
    cost: 1,
  } as const;
  await admin.hset(counterKey(prefix, SECRET, rule), 'x', '1');
  const result = await submit(schema);
  expect(result.errors?.[0]?.extensions?.code).toBe('RATE_LIMIT_UNAVAILABLE');
  const [span] = decisionSpans(t);
  expect(span?.attributes[DECISION_ATTRIBUTES.errorType]).toBe('WRONGTYPE');
  const points = await counted(t);
  expect(points.map((p) => p.attributes[DECISION_ATTRIBUTES.errorType])).toEqual(['WRONGTYPE']);
  await store.close?.();
});

test('CONCURRENCY: a refusal carries its reason, slots held and releases are recorded', async () => {
  const t = telemetry();
  const store = withLeaseMetrics(
    await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
    { meterProvider: t.meterProvider },
  );
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let running = 0;
  const { typeDefs, transformer } = rateLimitDirective({
    store,
    identify: (ctx: { team?: string }) => ctx.team,
    timeoutMs: 5_000,
    onDecision: t.hook,
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        `type Query { work: Boolean @rateLimit(action: "work", window: 5, limit: 2, algorithm: CONCURRENCY) }`,
      ],
      resolvers: {
        Query: {
          work: async () => {
            running += 1;
            await gate;
            return true;
          },
        },
      },
    }),
  );
  const call = () => graphql({ schema, source: '{ work }', contextValue: { team: SECRET } });
  const first = [call(), call()];
  // the gate opens and the store closes even when an expectation fails, so nothing hangs
  try {
    await waitFor('both calls to run', () => running === 2, 5_000);
    const refused = await call();
    expect(refused.errors?.[0]?.extensions?.reason).toBe('CONCURRENCY');
    const sum = async (name: string) =>
      (await counted(t, name)).reduce((total, p) => total + Number(p.value), 0);
    expect(await sum('graphql.rate_limit.slots')).toBe(2);
    expect(await sum('graphql.rate_limit.releases')).toBe(0);
    const blocked = decisionSpans(t).filter(
      (s) => s.attributes[DECISION_ATTRIBUTES.outcome] === 'blocked',
    );
    expect(blocked.map((s) => s.attributes[DECISION_ATTRIBUTES.reason])).toEqual(['CONCURRENCY']);
    expect(blocked[0]?.attributes[DECISION_ATTRIBUTES.algorithm]).toBe('CONCURRENCY');
    open();
    expect((await Promise.all(first)).map((r) => r.errors)).toEqual([undefined, undefined]);
    expect(await sum('graphql.rate_limit.slots')).toBe(0);
    expect(await sum('graphql.rate_limit.releases')).toBe(2);
    const slots = await counted(t, 'graphql.rate_limit.slots');
    expect(slots.map((p) => p.attributes)).toEqual([{ [DECISION_ATTRIBUTES.action]: 'work' }]);
  } finally {
    open();
    await Promise.allSettled(first);
    await store.close?.();
  }
});

test('bad options fail at construction, naming the option', () => {
  expect(() => openTelemetry({ identityHashKey: '' })).toThrow(/identityHashKey/);
  // a short key: whoever guesses it reverses every hash
  const short = 'k'.repeat(MIN_IDENTITY_HASH_KEY - 1);
  expect(() => openTelemetry({ identityHashKey: short })).toThrow(
    /`identityHashKey` must be a random secret of at least 32 characters/,
  );
  expect(() => openTelemetry({ identityHashKey: short })).not.toThrow(new RegExp(short));
  expect(() => openTelemetry({ identityHashKey: KEY })).not.toThrow();
  expect(() => withLeaseMetrics({} as never)).toThrow(/withLeaseMetrics: `store`/);
  expect(() => openTelemetry({ onDecision: 'no' as never })).toThrow(/onDecision/);
});

test('the duration histogram has buckets for decisions: sub-millisecond up to past timeoutMs', async () => {
  const t = telemetry();
  const schema = schemaWith(t.tracer, { store: createMemoryStore(), onDecision: t.hook });
  await submit(schema);
  const metric = (await t.metrics()).scopeMetrics
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === 'graphql.rate_limit.decision.duration');
  expect(metric?.descriptor.unit).toBe('s');
  const [point] = metric?.dataPoints ?? [];
  const boundaries = (point?.value as { buckets?: { boundaries: number[] } } | undefined)?.buckets
    ?.boundaries;
  // the SDK's defaults (0, 5, 10, ... seconds) would put every decision in the first bucket
  expect(boundaries?.[0]).toBeGreaterThan(0);
  expect(boundaries?.[0]).toBeLessThanOrEqual(0.0005);
  expect(boundaries).toContain(0.25); // the default timeoutMs
  expect(boundaries?.filter((b) => b < 0.01).length).toBeGreaterThanOrEqual(4);
});
