import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';

import { Miniflare } from 'miniflare';

import { startUpstashBridge, type UpstashBridge } from '../../kit/upstash-bridge';
import { bundleWorker } from '../../kit/worker-bundle';
import { redisUrl } from '../support/redis';

/*
 * examples/cloudflare-worker.ts as its users ship it: bundled with wrangler's settings from the
 * built package (run `npm run build:library` first), run in workerd through miniflare, without
 * `nodejs_compat`, against the REST bridge in front of the run's Redis.
 */

/** Cloudflare's limit for a Worker on the free plan, after compression. */
const FREE_PLAN_BYTES = 3 * 1024 * 1024;

/** A `node:` module imported or required by a bundle. */
const NODE_IMPORT = /\bfrom\s*["']node:|\bimport\s*\(\s*["']node:|\brequire\(\s*["']node:/;

let bridge: UpstashBridge;
let script: string;
const workers: Miniflare[] = [];

async function startWorker(): Promise<Miniflare> {
  const worker = new Miniflare({
    modules: true,
    script,
    compatibilityDate: '2025-04-01',
    bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token },
  });
  workers.push(worker);
  await worker.ready;
  return worker;
}

/** The value of `field`, else the code of the first error. */
async function ask(worker: Miniflare, identity: string, query: string, field: string) {
  const response = await worker.dispatchFetch('http://worker/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': identity },
    body: JSON.stringify({ query }),
  });
  const body = (await response.json()) as {
    data?: Record<string, unknown> | null;
    errors?: { extensions?: { code?: string } }[];
  };
  return body.data?.[field] ?? body.errors?.[0]?.extensions?.code;
}

beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: redisUrl(), token: `t-${randomUUID()}` });
  script = await bundleWorker('cloudflare-worker.ts');
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.dispose()));
  await bridge?.close();
});

test('the worker bundle imports no node: module and fits the free plan', async () => {
  // minified: no comments (graphql-js' JSDoc shows `import assert from 'node:assert'`)
  const minified = await bundleWorker('cloudflare-worker.ts', { minify: true });
  expect(minified).not.toMatch(NODE_IMPORT);
  const gzipped = gzipSync(minified).length;
  expect(gzipped).toBeLessThan(FREE_PLAN_BYTES);
  // so that the report can quote it
  console.log(`worker bundle: ${minified.length} bytes minified, ${gzipped} gzip`);
});

test('the Vercel Edge function bundles with edge-light conditions and imports no node: module', async () => {
  const edge = await bundleWorker('vercel-edge.ts', { runtime: 'edge-light', minify: true });
  expect(edge).not.toMatch(NODE_IMPORT);
  expect(edge).toMatch(/runtime:\s*"edge"/);
});

test('in workerd without nodejs_compat the worker decides: 10 of 12 one after the other', async () => {
  const worker = await startWorker();
  const identity = `id-${randomUUID()}`;
  const outcomes: unknown[] = [];
  for (let i = 0; i < 12; i++)
    outcomes.push(await ask(worker, identity, '{ search(q: "x") }', 'search'));
  expect(outcomes.filter((o) => o !== 'RATE_LIMITED')).toEqual(Array(10).fill(['x']));
  expect(outcomes.slice(10)).toEqual(['RATE_LIMITED', 'RATE_LIMITED']);
}, 60_000);
