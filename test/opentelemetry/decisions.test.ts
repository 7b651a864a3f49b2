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
import { DECISION_ATTRIBUTES, openTelemetry } from '../../src/opentelemetry';
import { freePort } from '../support/processes';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * The OpenTelemetry hook, read through the SDK's own in-memory exporters: one span and one
 * counted decision per hit, parented where the field resolves, with a fixed set of attribute
 * keys and no identity anywhere in what is exported.
 */

const SECRET = 'team-7f3a-secret-identity';
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

/** Every data point of the decisions counter, as `{ attributes, value }`. */
async function counted(t: Telemetry) {
  const resource = await t.metrics();
  const metric = resource.scopeMetrics
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === 'graphql.rate_limit.decisions');
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
  const t = telemetry({ identityHashKey: 'k1' });
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
  expect(span?.attributes[DECISION_ATTRIBUTES.errorType]).toEqual(expect.any(String));
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

test('bad options fail at construction, naming the option', () => {
  expect(() => openTelemetry({ identityHashKey: '' })).toThrow(/identityHashKey/);
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
