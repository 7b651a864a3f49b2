import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';

import { postGraphQL } from '../support/http';
import { startProcess, within } from '../support/processes';
import { redisUrl, uniquePrefix } from '../support/redis';

/*
 * The package as users get it: `npm pack` from a clean checkout (no dist/: the tarball holds what
 * `prepack` builds), installed into a throwaway project beside its peer dependencies,
 * type-checked from TypeScript, required from CommonJS, imported from an ES module, and run
 * against Redis; and the README's example, compiled and run against that install.
 */

const run = promisify(execFile);
const repo = join(__dirname, '..', '..');
const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version: string }>;
};
const pinned = (name: string): string =>
  `${name}@${lock.packages[`node_modules/${name}`]?.version}`;

/** What a fresh clone does not have: the build and the installed packages (linked in instead). */
const NOT_IN_A_CLONE = new Set(['node_modules', 'dist', 'coverage', '.git']);

let checkout: string;
let dir: string;
let files: string[];

beforeAll(async () => {
  checkout = mkdtempSync(join(tmpdir(), 'garl-checkout-'));
  cpSync(repo, checkout, {
    recursive: true,
    filter: (source) => !NOT_IN_A_CLONE.has(relative(repo, source)),
  });
  symlinkSync(join(repo, 'node_modules'), join(checkout, 'node_modules'), 'dir');
  dir = mkdtempSync(join(tmpdir(), 'garl-consumer-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: checkout,
    timeout: 120_000,
  });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  if (!packed) throw new Error(`npm pack printed nothing usable: ${stdout}`);
  files = packed.files.map((f) => f.path);
  cpSync(join(__dirname, '..', 'fixtures', 'consumer'), dir, { recursive: true });
  cpSync(join(repo, 'examples', 'quick-start.ts'), join(dir, 'quick-start.ts'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  const peers = [
    '@apollo/server',
    'graphql',
    '@graphql-tools/utils',
    '@graphql-tools/schema',
    'ioredis',
    '@types/node',
  ];
  await run(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      join(dir, packed.filename),
      ...peers.map(pinned),
    ],
    { cwd: dir, timeout: 150_000 },
  );
}, 240_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (checkout) {
    // the link first, so that nothing can reach through it into the repository's packages
    rmSync(join(checkout, 'node_modules'), { force: true });
    rmSync(checkout, { recursive: true, force: true });
  }
});

test('packed from a clean checkout, the tarball holds the build that prepack made', () => {
  expect(files).toEqual(
    expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'lua/hit.lua']),
  );
  // the reference server is a workspace of its own (server/), never part of the package
  expect(files.filter((f) => /(^|\/)server\//.test(f))).toEqual([]);
});

test('the tarball ships the library, its types and its scripts, and nothing else', () => {
  expect(files).toEqual(
    expect.arrayContaining([
      'dist/index.js',
      'dist/index.d.ts',
      'lua/hit.lua',
      'lua/refund.lua',
      'lua/library.lua',
      'lua/lease.lua',
      'lua/lib/algorithms.lua',
      'lua/lib/batch.lua',
      'lua/lib/fixed-window.lua',
      'lua/lib/sliding-window.lua',
      'lua/lib/token-bucket.lua',
      'lua/lib/concurrency.lua',
      'lua/lib/clock.lua',
      'lua/lib/bucket-time.lua',
      'lua/lib/sliding-member.lua',
      'package.json',
      'README.md',
      'LICENSE',
    ]),
  );
  const unexpected = files.filter(
    (f) =>
      !/^(dist\/[\w/-]+\.(js|d\.ts)|lua\/(lib\/)?[\w-]+\.lua|package\.json|README\.md|LICENSE)$/.test(
        f,
      ),
  );
  expect(unexpected).toEqual([]);
});

test('a strict TypeScript consumer type-checks against the published types', async () => {
  await run(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], {
    cwd: dir,
  });
});

test('from CommonJS, against Redis: three pass, the fourth is RATE_LIMITED', async () => {
  const { stdout } = await run(process.execPath, [join(dir, 'out', 'example.js')], {
    cwd: dir,
    env: { ...process.env, REDIS_URL: redisUrl(), PREFIX: uniquePrefix() },
    timeout: 20_000,
  });
  expect(JSON.parse(stdout)).toEqual({
    codes: ['OK', 'OK', 'OK', 'RATE_LIMITED'],
    blocked: true,
    decisions: 4,
  });
});

test('from an ES module, with named imports', async () => {
  const { stdout } = await run(process.execPath, [join(dir, 'esm.mjs')], {
    cwd: dir,
    timeout: 20_000,
  });
  expect(JSON.parse(stdout)).toEqual({ esm: true, error: 'function' });
});

test('the cost estimator is the subpath graphql-atomic-rate-limit/cost, typed and required', async () => {
  const { stdout } = await run(process.execPath, [join(dir, 'out', 'cost.js')], {
    cwd: dir,
    timeout: 20_000,
  });
  // 2 users × (user 1 + avatar 5); a list without its slicing argument cannot be priced
  expect(JSON.parse(stdout)).toEqual({ cost: 12, refused: 'COST_QUERY_PARSE_FAILURE' });
});

test('the cost estimator is not part of the root: a user reaches it by its subpath', async () => {
  const { stdout } = await run(
    process.execPath,
    [
      '-e',
      `const root = require('graphql-atomic-rate-limit');
       const cost = require('graphql-atomic-rate-limit/cost');
       console.log(JSON.stringify({ root: typeof root.createCostEstimator, cost: typeof cost.createCostEstimator }));`,
    ],
    { cwd: dir, timeout: 20_000 },
  );
  expect(JSON.parse(stdout)).toEqual({ root: 'undefined', cost: 'function' });
});

test('./nestjs and ./mercurius resolve from the tarball, their frameworks left uninstalled', async () => {
  const { stdout } = await run(
    process.execPath,
    [
      '-e',
      `const installed = (name) => { try { require.resolve(name); return true; } catch { return false; } };
       const frameworks = ['@nestjs/common', '@nestjs/core', '@nestjs/graphql', 'fastify', 'mercurius'];
       const { mercuriusRateLimit } = require('graphql-atomic-rate-limit/mercurius');
       let nestjs = 'loaded';
       try { require('graphql-atomic-rate-limit/nestjs'); } catch (error) { nestjs = error.message.split('\\n')[0]; }
       console.log(JSON.stringify({
         resolved: ['nestjs', 'mercurius'].map((s) => installed('graphql-atomic-rate-limit/' + s)),
         mercurius: typeof mercuriusRateLimit,
         nestjs,
         installed: frameworks.filter(installed),
       }));`,
    ],
    { cwd: dir, timeout: 20_000 },
  );
  // optional peers: installing the package pulled in no framework, and ./nestjs names the one
  // it wants when it is required without Nest
  expect(JSON.parse(stdout)).toEqual({
    resolved: [true, true],
    mercurius: 'function',
    nestjs: "Cannot find module '@nestjs/core'",
    installed: [],
  });
});

test('the README example as pasted: three submissions pass, the fourth is RATE_LIMITED', async () => {
  const server = startProcess(process.execPath, [join(dir, 'out', 'quick-start.js')], {
    cwd: dir,
    env: { ...process.env, REDIS_URL: redisUrl(), PORT: '0' },
  });
  try {
    const [, url] = await server.waitForOutput(/Ready at (\S+)/);
    // a team of its own, so its counter is this run's alone
    const team = `quick-start-${randomUUID()}`;
    const codes: unknown[] = [];
    for (let i = 0; i < 4; i++) {
      const { body } = await postGraphQL(
        url ?? '',
        'mutation { submitFlag(challengeId: "warmup", flag: "CTF{guess}") { correct } }',
        team,
      );
      codes.push(body.errors?.[0]?.extensions?.code ?? body.data?.submitFlag);
    }
    expect(codes).toEqual([
      { correct: false },
      { correct: false },
      { correct: false },
      'RATE_LIMITED',
    ]);
    // on SIGTERM it closes its Redis client, and nothing keeps the process alive
    server.process.kill('SIGTERM');
    expect(await within(server.exited, 10_000, 'the example to exit')).toEqual({
      code: 0,
      signal: null,
    });
  } finally {
    await server.stop();
  }
});
