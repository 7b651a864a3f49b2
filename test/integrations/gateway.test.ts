import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { composeServices } from '@apollo/composition';
import { parse } from 'graphql';

import { releaseTogether } from '../support/barrier';
import { errorCodes, httpClient, postGraphQL, type GraphQLResponse } from '../support/http';
import { within, type Child } from '../support/processes';
import { recipeProject, type RecipeProject } from '../support/recipes';
import { redisUrl } from '../support/redis';

/*
 * docs/gateways.md's Hive Gateway recipe as a user runs it: the Federation recipe's subgraph
 * (examples/federation.ts) in one process, its supergraph composed by
 * examples/compose-supergraph.mts, and examples/hive-gateway.ts in front of it, budgeting every
 * operation with envelopPlugin on Redis.
 */

const repo = join(__dirname, '..', '..');
const PAGE = readFileSync(join(repo, 'docs', 'gateways.md'), 'utf8');

test.each(['compose-supergraph.mts', 'hive-gateway.ts'])(
  'docs/gateways.md shows examples/%s byte for byte',
  (file) => {
    const source = readFileSync(join(repo, 'examples', file), 'utf8');
    expect(PAGE).toContain(`\`\`\`ts\n${source}\`\`\`\n`);
  },
);

test("docs/getting-started.md's Node 20 pins for the gateway are the lock file's", () => {
  const guide = readFileSync(join(repo, 'docs', 'getting-started.md'), 'utf8');
  const row = guide.split('\n').find((line) => line.startsWith('| GraphQL Yoga, Hive Gateway'));
  const gatewayRow = guide.split('\n').find((line) => line.startsWith('| Hive Gateway '));
  const pins = [...`${row}${gatewayRow}`.matchAll(/`"([^"]+)": ("[^"]+"|\{[^`]*\})`/g)].map(
    ([, name, pin]) => [name as string, JSON.parse(pin as string) as unknown] as const,
  );
  const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
    overrides: Record<string, unknown>;
  };
  expect(pins.map(([name]) => name)).toEqual(
    expect.arrayContaining(['@graphql-tools/executor', '@graphql-tools/batch-execute']),
  );
  for (const [name, pin] of pins) expect(manifest.overrides[name]).toEqual(pin);
});

const BUDGET = 1_000; // examples/hive-gateway.ts
// 100 lists of two challenges: its estimate is what it costs, so nothing is refunded and a
// pass cannot free points for a later one
const EXPENSIVE = `{ ${Array.from({ length: 100 }, (_, i) => `c${i}: challenges(first: 2) { id }`).join(' ')} }`;

let project: RecipeProject;
let subgraph: Child;
let gateway: Child;
let url: string;
let dir: string;

beforeAll(async () => {
  project = recipeProject();
  dir = mkdtempSync(join(tmpdir(), 'garl-gateway-'));
  subgraph = project.start('federation.ts', { REDIS_URL: redisUrl(), PORT: '0' });
  const [, subgraphUrl = ''] = await subgraph.waitForOutput(/Ready at (\S+)/);
  const supergraph = join(dir, 'supergraph.graphql');
  const compose = project.start('compose-supergraph.mts', {
    SUBGRAPH_URL: subgraphUrl,
    SUPERGRAPH: supergraph,
  });
  expect(await within(compose.exited, 30_000, 'composition')).toEqual({ code: 0, signal: null });
  gateway = project.start('hive-gateway.ts', {
    REDIS_URL: redisUrl(),
    PORT: '0',
    SUPERGRAPH: supergraph,
  });
  [, url = ''] = await gateway.waitForOutput(/Ready at (\S+)/);
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await subgraph?.stop();
  project?.remove();
  rmSync(dir, { recursive: true, force: true });
});

test('exactly floor(budget / estimate) of 10 simultaneous operations pass the gateway', async () => {
  const team = `gateway-${randomUUID()}`;
  // another team's operation first: the gateway's store opens its connection and loads its
  // script before the burst, which a loaded machine could otherwise run past the store's bound
  const warmUp = httpClient();
  try {
    await warmUp.post(url, EXPENSIVE, `gateway-warm-up-${randomUUID()}`);
  } finally {
    await warmUp.close();
  }
  const clients = Array.from({ length: 10 }, () => httpClient());
  let responses: GraphQLResponse[];
  try {
    responses = await releaseTogether(10, async (i) => {
      const client = clients[i] ?? httpClient();
      return () => client.post(url, EXPENSIVE, team);
    });
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  const passed = responses.filter((r) => r.body.data);
  const cost = passed[0]?.body.extensions?.cost as {
    requestedQueryCost: number;
    actualQueryCost: number;
  };
  // priced from the supergraph's @listSize: 100 lists of 2, not of the default 10
  expect(cost.requestedQueryCost).toBe(200);
  expect(cost.actualQueryCost).toBe(cost.requestedQueryCost);
  expect(passed).toHaveLength(Math.floor(BUDGET / cost.requestedQueryCost));
  const refused = responses.filter((r) => !r.body.data);
  expect(refused.flatMap(errorCodes)).toEqual(refused.map(() => 'RATE_LIMITED'));
  expect(refused[0]?.headers.get('retry-after')).toMatch(/^\d+$/);
});

test("the subgraph's field limit and the gateway's budget both reach the client", async () => {
  const team = `gateway-${randomUUID()}`;
  const submit = 'mutation { submitFlag(flag: "CTF{no}") }';
  const responses = [];
  for (let i = 0; i < 4; i++) responses.push(await postGraphQL(url, submit, team));
  expect(responses.map((r) => r.body.data?.submitFlag ?? errorCodes(r)[0])).toEqual([
    false,
    false,
    false,
    'RATE_LIMITED',
  ]);
  const [first, , , blocked] = responses;
  // the budget's policy beside the subgraph's, each once
  expect(first?.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60, "budget";q=1000;w=60');
  // the most constrained: 2 submissions left, not the budget's 990 points
  expect(first?.headers.get('ratelimit')).toMatch(/^"submit";r=2;t=\d+$/);
  expect(blocked?.headers.get('ratelimit')).toMatch(/^"submit";r=0;t=\d+$/);
  expect(blocked?.headers.get('retry-after')).toMatch(/^\d+$/);
});

test('the gateway starts without a word on a supergraph that carries @cost and @listSize', () => {
  expect(gateway.output()).not.toContain('GRAPHQL_RATE_LIMIT_UNPRICED_SCHEMA');
});

test('on a supergraph composed from a federation v2.3 subgraph, it warns before it is ready', async () => {
  const unpriced = join(dir, 'v2.3.graphql');
  const sdl = `
    extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])
    directive @listSize(slicingArguments: [String!]) on FIELD_DEFINITION
    type Query { challenges(first: Int = 10): [ID!]! @listSize(slicingArguments: ["first"]) }`;
  const composed = composeServices([
    { name: 'challenges', typeDefs: parse(sdl), url: 'http://challenges.invalid/' },
  ]);
  writeFileSync(unpriced, composed.supergraphSdl ?? '');
  const v23 = project.start('hive-gateway.ts', {
    REDIS_URL: redisUrl(),
    PORT: '0',
    SUPERGRAPH: unpriced,
  });
  try {
    await v23.waitForOutput(/Ready at/);
    const output = v23.output();
    expect(output.indexOf('GRAPHQL_RATE_LIMIT_UNPRICED_SCHEMA')).toBeGreaterThanOrEqual(0);
    expect(output.indexOf('GRAPHQL_RATE_LIMIT_UNPRICED_SCHEMA')).toBeLessThan(
      output.indexOf('Ready at'),
    );
  } finally {
    await v23.stop();
  }
});

// last: it ends the gateway
test('SIGTERM closes the gateway and its Redis client, and the process exits 0', async () => {
  gateway.process.kill('SIGTERM');
  expect(await within(gateway.exited, 10_000, 'the gateway to exit')).toEqual({
    code: 0,
    signal: null,
  });
});
