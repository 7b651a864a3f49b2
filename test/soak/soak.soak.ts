import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { expressMiddleware } from '@as-integrations/express5';
import { makeExecutableSchema } from '@graphql-tools/schema';
import express from 'express';
import type { Redis } from 'ioredis';
import { Agent, request } from 'undici';

import {
  createRedisStore,
  rateLimitDirective,
  type Decision,
  type DecisionEvent,
  type RateLimitStore,
} from '../../src';
import { sleep, within } from '../support/processes';
import { closeClients, connectRedis, keysUnder, uniquePrefix } from '../support/redis';
import {
  check,
  throughLimit,
  type CheckOptions,
  type CheckResult,
  type ModelLimit,
  type TimedDecision,
} from '../support/model';

/*
 * A bounded soak: one in-process Apollo Server on a real Redis, driven at full speed from this
 * process for SOAK_SECONDS (default 20) across many teams and fields of every algorithm, then
 * every decision the server made is checked against the reference model (support/model.ts),
 * every request against its answer, and every key under the run's prefix for a TTL.
 * Run with `npm run test:soak` (jest --config jest.soak.config.js); not part of `npm test`.
 */

const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 20);
if (!Number.isFinite(SOAK_SECONDS) || SOAK_SECONDS <= 0) {
  throw new Error(`SOAK_SECONDS must be a positive number, got ${process.env.SOAK_SECONDS}`);
}
const DURATION_MS = SOAK_SECONDS * 1000;
/** A second bound on the load, besides time. */
const MAX_REQUESTS = Math.ceil(SOAK_SECONDS * 50_000);
const TEAMS = 20;
const AGENTS = 8;
const CONNECTIONS_PER_AGENT = 8;
const IN_FLIGHT = AGENTS * CONNECTIONS_PER_AGENT;
const REQUEST_TIMEOUT_MS = 15_000;
/** Generous, so that a busy event loop never turns a decided hit into a store error. */
const STORE_TIMEOUT_MS = 5_000;
const STEP_TIMEOUT_MS = 20_000;
/** Setup, analysis and teardown on top of the load itself. */
const HOOK_TIMEOUT_MS = DURATION_MS + 80_000;

interface Field {
  readonly name: string;
  /** Its limits, in directive order. */
  readonly limits: readonly ModelLimit[];
}

const FIELDS: readonly Field[] = [
  { name: 'fixed', limits: [{ algorithm: 'FIXED_WINDOW', windowMs: 2000, limit: 5, cost: 1 }] },
  { name: 'sliding', limits: [{ algorithm: 'SLIDING_WINDOW', windowMs: 2000, limit: 5, cost: 1 }] },
  { name: 'bucket', limits: [{ algorithm: 'TOKEN_BUCKET', windowMs: 2000, limit: 5, cost: 1 }] },
  {
    name: 'combo',
    limits: [
      { algorithm: 'FIXED_WINDOW', windowMs: 1000, limit: 3, cost: 1 },
      { algorithm: 'SLIDING_WINDOW', windowMs: 4000, limit: 8, cost: 1 },
    ],
  },
];

const SDL = `type Query { ok: Boolean }
type Mutation {
  ${FIELDS.map(
    (f) =>
      `${f.name}: Boolean ` +
      f.limits
        .map(
          (l, i) =>
            `@rateLimit(action: "${f.name}-${i}", window: ${l.windowMs / 1000}, ` +
            `limit: ${l.limit}, algorithm: ${l.algorithm}, cost: ${l.cost})`,
        )
        .join(' '),
  ).join('\n  ')}
}`;

interface Context {
  readonly team: { readonly id: string | undefined };
}

/** One request as the client saw it. */
interface Answer {
  readonly team: string;
  readonly field: string;
  /** 'PASS', 'RATE_LIMITED', or what else came back. */
  readonly outcome: string;
  readonly latencyMs: number;
}

/** One decision as the server recorded it in `onDecision`. */
interface Recorded extends TimedDecision {
  /** Date.now() inside onDecision. */
  readonly at: number;
  readonly latencyMs: number;
  readonly field: string;
  readonly identity: string;
  readonly remaining: number | undefined;
  readonly resetMs: number | undefined;
  readonly error: string | undefined;
}

interface TtlSnapshot {
  readonly when: string;
  readonly keys: number;
  /** Keys with PTTL -1: no expiry. A key may expire between SCAN and PTTL (-2); that is fine. */
  readonly withoutTtl: string[];
}

interface SoakResult {
  readonly sent: number;
  readonly answers: Answer[];
  readonly networkErrors: string[];
  readonly decisions: Recorded[];
  readonly ttl: TtlSnapshot[];
  readonly elapsedMs: number;
}

async function ttlSnapshot(client: Redis, prefix: string, when: string): Promise<TtlSnapshot> {
  const keys = await keysUnder(client, prefix);
  const withoutTtl: string[] = [];
  for (let i = 0; i < keys.length; i += 500) {
    const batch = keys.slice(i, i + 500);
    const pipeline = client.pipeline();
    for (const key of batch) pipeline.pttl(key);
    const replies = (await pipeline.exec()) ?? [];
    replies.forEach(([error, pttl], j) => {
      if (error || pttl === -1)
        withoutTtl.push(`${batch[j]} (${error ? String(error) : 'PTTL -1'})`);
    });
  }
  return { when, keys: keys.length, withoutTtl };
}

function outcomeOf(field: string, status: number, body: unknown): string {
  if (status !== 200) return `HTTP ${status}`;
  const { data, errors } = (body ?? {}) as {
    data?: Record<string, unknown> | null;
    errors?: { extensions?: Record<string, unknown> }[];
  };
  if (!errors || errors.length === 0) return data?.[field] === true ? 'PASS' : 'NO DATA';
  const ext = errors[0]?.extensions ?? {};
  if (errors.length !== 1) return `${errors.length} errors`;
  if (ext.code !== 'RATE_LIMITED') return String(ext.code);
  if (data?.[field] !== null) return 'RATE_LIMITED with data';
  const { retryAfter } = ext;
  if (typeof retryAfter !== 'number' || !Number.isInteger(retryAfter) || retryAfter < 1) {
    return `RATE_LIMITED with retryAfter ${String(retryAfter)}`;
  }
  return 'RATE_LIMITED';
}

async function soak(): Promise<SoakResult> {
  const prefix = uniquePrefix();
  const client = await connectRedis();
  const decisions: Recorded[] = [];
  // The clock is read right before each store call and right after its reply, so the script
  // ran in between. Read around the call itself, not derived from latencyMs and a stamp taken
  // later in onDecision: a GC pause or a descheduled thread between those two would shift such
  // an interval past the moment the script ran. The bounds are found again in onDecision
  // through the Decision object the directive passes on unchanged.
  const bounds = new WeakMap<Decision, { sent: number; received: number }>();
  const redisStore = createRedisStore({ client, prefix });
  const store: RateLimitStore = {
    async hit(identity, rules) {
      const sent = Date.now();
      const decision = await redisStore.hit(identity, rules);
      bounds.set(decision, { sent, received: Date.now() });
      return decision;
    },
  };
  const onDecision = (e: DecisionEvent): void => {
    const at = Date.now();
    const known = e.decision && bounds.get(e.decision);
    decisions.push({
      at,
      latencyMs: e.latencyMs,
      sent: known?.sent ?? Number.NEGATIVE_INFINITY,
      received: known?.received ?? at,
      allowed: e.allowed,
      limits: e.decision?.limits ?? [],
      field: e.field.replace(/^Mutation\./, ''),
      identity: e.identity,
      remaining: e.remaining,
      resetMs: e.resetMs,
      error: e.error ? String(e.error) : known ? undefined : 'no bounds for this decision',
    });
  };
  const { typeDefs, transformer } = rateLimitDirective<Context>({
    store,
    timeoutMs: STORE_TIMEOUT_MS,
    onDecision,
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [typeDefs, SDL],
      resolvers: { Mutation: Object.fromEntries(FIELDS.map((f) => [f.name, () => true])) },
    }),
  );

  const app = express();
  const httpServer: Server = createServer(app);
  const apollo = new ApolloServer<Context>({
    schema,
    plugins: [ApolloServerPluginDrainHttpServer({ httpServer })],
    includeStacktraceInErrorResponses: false,
  });
  const agents = Array.from(
    { length: AGENTS },
    () =>
      new Agent({
        connections: CONNECTIONS_PER_AGENT,
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
      }),
  );
  try {
    await within(apollo.start(), STEP_TIMEOUT_MS, 'Apollo start');
    app.use(
      '/graphql',
      express.json(),
      expressMiddleware(apollo, {
        context: async ({ req }) => {
          const team = req.headers['x-team'];
          return { team: { id: typeof team === 'string' ? team : undefined } };
        },
      }),
    );
    await within(
      new Promise<void>((resolve, reject) => {
        httpServer.once('error', reject);
        httpServer.listen(0, '127.0.0.1', () => resolve());
      }),
      STEP_TIMEOUT_MS,
      'HTTP listen',
    );
    const { port } = httpServer.address() as AddressInfo;
    const url = `http://127.0.0.1:${port}/graphql`;
    const bodies = FIELDS.map((f) => JSON.stringify({ query: `mutation { ${f.name} }` }));

    const answers: Answer[] = [];
    const networkErrors: string[] = [];
    let sent = 0;
    const started = Date.now();
    const deadline = started + DURATION_MS;

    const worker = async (w: number): Promise<void> => {
      const dispatcher = agents[w % AGENTS] as Agent;
      while (Date.now() < deadline && sent < MAX_REQUESTS) {
        const n = sent++;
        const team = `team-${n % TEAMS}`;
        const f = Math.floor(n / TEAMS) % FIELDS.length;
        const field = (FIELDS[f] as Field).name;
        const t0 = performance.now();
        try {
          const response = await request(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-team': team },
            body: bodies[f] as string,
            dispatcher,
          });
          const body = await response.body.json();
          answers.push({
            team,
            field,
            outcome: outcomeOf(field, response.statusCode, body),
            latencyMs: performance.now() - t0,
          });
        } catch (error) {
          networkErrors.push(`${team} ${field}: ${String(error)}`);
        }
      }
    };

    const midway = (async (): Promise<TtlSnapshot> => {
      await sleep(DURATION_MS / 2);
      return ttlSnapshot(client, prefix, 'midway, under load');
    })();
    midway.catch(() => undefined); // awaited below; never an unhandled rejection if the load fails
    await within(
      Promise.all(Array.from({ length: IN_FLIGHT }, (_, w) => worker(w))),
      DURATION_MS + REQUEST_TIMEOUT_MS + 5_000,
      'the load',
    );
    const elapsedMs = Date.now() - started;
    const ttl = [
      await within(midway, STEP_TIMEOUT_MS, 'the midway TTL scan'),
      await within(ttlSnapshot(client, prefix, 'at the end'), STEP_TIMEOUT_MS, 'the TTL scan'),
    ];
    return { sent, answers, networkErrors, decisions, ttl, elapsedMs };
  } finally {
    await within(
      Promise.all(agents.map((a) => a.close())),
      STEP_TIMEOUT_MS,
      'closing the agents',
    ).catch(() => Promise.all(agents.map((a) => a.destroy())));
    // the drain plugin closes the HTTP server; close it here too if Apollo never got that far
    await within(apollo.stop(), STEP_TIMEOUT_MS, 'Apollo stop').catch(() => undefined);
    if (httpServer.listening) {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    }
  }
}

/** Checks every team's decisions of `field` against the model of its `index`-th limit. */
function eachTeam(
  byPair: ReadonlyMap<string, Recorded[]>,
  field: Field,
  index: number,
  options: CheckOptions = {},
): CheckResult[] {
  const limit = field.limits[index] as ModelLimit;
  return Array.from({ length: TEAMS }, (_, t) => {
    const team = `team-${t}`;
    const decisions = byPair.get(pairKey(field.name, team)) ?? [];
    const label = `${field.name}[${limit.algorithm} ${limit.limit}/${limit.windowMs}ms] ${team}`;
    return check(limit, throughLimit(decisions, index), { ...options, label });
  });
}

const pairKey = (field: string, team: string): string => `${field}/${team}`;
const fieldNamed = (name: string): Field => FIELDS.find((f) => f.name === name) as Field;
/** The violations `results` found: how many were reported (capped per team) and the first few. */
const violationsOf = (results: CheckResult[]): { reported: number; first: string[] } => {
  const all = results.flatMap((r) => r.violations);
  return { reported: all.length, first: all.slice(0, 8) };
};
const NONE = { reported: 0, first: [] };
const sum = (results: CheckResult[], of: (r: CheckResult) => number | undefined): number =>
  results.reduce((n, r) => n + (of(r) ?? 0), 0);

let result: SoakResult;
let checks: Record<'fixed' | 'sliding' | 'bucket' | 'comboFixed' | 'comboSliding', CheckResult[]>;

beforeAll(async () => {
  try {
    result = await soak();
  } finally {
    await closeClients();
  }
  const byPair = new Map<string, Recorded[]>();
  for (const d of result.decisions) {
    const key = pairKey(d.field, d.identity);
    const list = byPair.get(key) ?? [];
    list.push(d);
    byPair.set(key, list);
  }
  const combo = fieldNamed('combo');
  // hundreds of decisions per team and field: fixed windows are found by their reported ends
  const ends = { fixedWindows: 'reported-ends' } as const;
  checks = {
    fixed: eachTeam(byPair, fieldNamed('fixed'), 0, { ...ends, singleLimit: true }),
    sliding: eachTeam(byPair, fieldNamed('sliding'), 0),
    bucket: eachTeam(byPair, fieldNamed('bucket'), 0),
    comboFixed: eachTeam(byPair, combo, 0, ends),
    comboSliding: eachTeam(byPair, combo, 1),
  };

  const { answers, elapsedMs } = result;
  const passes = answers.filter((a) => a.outcome === 'PASS').length;
  const blocks = answers.filter((a) => a.outcome === 'RATE_LIMITED').length;
  const latencies = answers.map((a) => a.latencyMs).sort((a, b) => a - b);
  const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? 0;
  const max = latencies[latencies.length - 1] ?? 0;
  const fixedAll = [...checks.fixed, ...checks.comboFixed];
  console.log(
    `soak: ${(elapsedMs / 1000).toFixed(1)} s, ${result.sent} requests, ` +
      `${((answers.length * 1000) / elapsedMs).toFixed(0)} req/s, ${passes} passed, ` +
      `${blocks} blocked, latency p99 ${p99.toFixed(1)} ms max ${max.toFixed(1)} ms; ` +
      `${IN_FLIGHT} in flight, ${TEAMS} teams x ${FIELDS.length} fields; fixed windows ` +
      `${sum(fixedAll, (r) => r.windows)} (exact ${sum(fixedAll, (r) => r.exactWindows)}, ` +
      `uncertain ${sum(fixedAll, (r) => r.uncertainWindows)})`,
  );
}, HOOK_TIMEOUT_MS);

test('every request sent got an HTTP 200 with its field or one RATE_LIMITED error', () => {
  expect(result.networkErrors.slice(0, 5)).toEqual([]);
  expect(result.answers).toHaveLength(result.sent);
  const odd = result.answers.filter((a) => a.outcome !== 'PASS' && a.outcome !== 'RATE_LIMITED');
  expect(odd.slice(0, 5)).toEqual([]);
});

test('the server decided each request once, as the client saw it, with no store error', () => {
  expect(result.decisions).toHaveLength(result.answers.length);
  expect(result.decisions.filter((d) => d.error !== undefined).slice(0, 5)).toEqual([]);
  type Counts = Record<string, { passed: number; blocked: number }>;
  const tally = (rows: [string, boolean][]): Counts => {
    const counts: Counts = {};
    for (const [key, passed] of rows) {
      const c = (counts[key] ??= { passed: 0, blocked: 0 });
      if (passed) c.passed++;
      else c.blocked++;
    }
    return counts;
  };
  const client = tally(result.answers.map((a) => [pairKey(a.field, a.team), a.outcome === 'PASS']));
  const server = tally(result.decisions.map((d) => [pairKey(d.field, d.identity), d.allowed]));
  expect(Object.keys(server)).toHaveLength(TEAMS * FIELDS.length);
  expect(server).toEqual(client);
});

/*
 * The checks below are sound whatever the load did, but prove little when limits were never
 * reached: this one fails, on its own, when the machine was too slow to keep every limit under
 * pressure (a few hundred requests per second suffice; it reports what it got).
 */
test('the load kept every limit under pressure, so the checks below are not vacuous', () => {
  const blockedBy = (field: string, index: number): boolean =>
    result.decisions.some(
      (d) => d.field === field && !d.allowed && (d.limits[index]?.retryAfterMs ?? 0) > 0,
    );
  const fixedWindows = sum(checks.fixed, (r) => r.windows);
  const fixedExact = sum(checks.fixed, (r) => r.exactWindows);
  const pressure = {
    requestsPerSecond: Math.round((result.answers.length * 1000) / result.elapsedMs),
    everyLimitBlockedSomeHits: FIELDS.every((f) => f.limits.every((_, i) => blockedBy(f.name, i))),
    everyTeamPassedEveryField: Object.values(checks).every((rs) => rs.every((r) => r.passes > 0)),
    fixedWindowsAssertedExact: fixedExact >= TEAMS && fixedExact >= fixedWindows / 2,
    comboFixedWindowsAssertedExact: sum(checks.comboFixed, (r) => r.exactWindows) >= 1,
  };
  expect(pressure).toEqual({
    requestsPerSecond: pressure.requestsPerSecond,
    everyLimitBlockedSomeHits: true,
    everyTeamPassedEveryField: true,
    fixedWindowsAssertedExact: true,
    comboFixedWindowsAssertedExact: true,
  });
});

test('FIXED_WINDOW: at most limit passes per team-window, exactly limit in windows under pressure', () => {
  expect(violationsOf(checks.fixed)).toEqual(NONE);
});

test('SLIDING_WINDOW: no 2 s interval holds more than limit passes; every block was earned', () => {
  expect(violationsOf(checks.sliding)).toEqual(NONE);
});

test('TOKEN_BUCKET: passes in any [a, b] <= limit + rate (b - a); every block was earned', () => {
  expect(violationsOf(checks.bucket)).toEqual(NONE);
});

test('two limits on one field: each holds on the hits that passed both', () => {
  expect(violationsOf([...checks.comboFixed, ...checks.comboSliding])).toEqual(NONE);
});

test('every key under the prefix has a TTL, under load and at the end', () => {
  for (const snapshot of result.ttl) {
    expect(snapshot.keys).toBeGreaterThan(0);
    expect({ when: snapshot.when, withoutTtl: snapshot.withoutTtl.slice(0, 5) }).toEqual({
      when: snapshot.when,
      withoutTtl: [],
    });
  }
});
