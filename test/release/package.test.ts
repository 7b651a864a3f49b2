import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
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
let packedName: string;

beforeAll(async () => {
  checkout = mkdtempSync(join(tmpdir(), 'garl-checkout-'));
  cpSync(repo, checkout, {
    recursive: true,
    filter: (source) => !NOT_IN_A_CLONE.has(relative(repo, source)),
  });
  symlinkSync(join(repo, 'node_modules'), join(checkout, 'node_modules'), 'dir');
  dir = mkdtempSync(join(tmpdir(), 'garl-consumer-'));
  // prepack builds the library: over a minute on a loaded 2-core machine
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: checkout,
    timeout: 300_000,
  });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  if (!packed) throw new Error(`npm pack printed nothing usable: ${stdout}`);
  files = packed.files.map((f) => f.path);
  packedName = packed.filename;
  cpSync(join(__dirname, '..', 'fixtures', 'consumer'), dir, { recursive: true });
  cpSync(join(__dirname, '..', 'fixtures', 'consumer-node10'), join(dir, 'node10'), {
    recursive: true,
  });
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
}, 480_000);

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
  // the reference server is a workspace of its own (server/), never part of the package: only
  // its README, which the shipped pages link to
  expect(files.filter((f) => /(^|\/)server\//.test(f))).toEqual(['server/README.md']);
});

test('the tarball ships the library, its types, its scripts and its manual, and nothing else', () => {
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
      'CHANGELOG.md',
      'LICENSE',
      'docs/reference.md',
      'examples/quick-start.ts',
    ]),
  );
  const unexpected = files.filter(
    (f) =>
      !/^(dist\/[\w/-]+\.(js|d\.ts)|lua\/(lib\/)?[\w-]+\.lua|(docs|examples)\/[\w.-]+|server\/README\.md|package\.json|[A-Z]+\.md|LICENSE)$/.test(
        f,
      ),
  );
  expect(unexpected).toEqual([]);
});

test('every relative link of the shipped pages reaches a shipped file (on a registry page too)', () => {
  const shipped = new Set(files);
  const pages = files.filter((f) => f.endsWith('.md'));
  const broken = pages.flatMap((page) =>
    [...readFileSync(join(repo, page), 'utf8').matchAll(/\]\(([^)\s#]+)(#[^)\s]*)?\)/g)]
      .map(([, target = '']) => target)
      .filter((target) => !/^[a-z]+:/.test(target))
      .map((target) => normalize(join(dirname(page), target)))
      .filter((target) => !shipped.has(target))
      .map((target) => `${page} -> ${target}`),
  );
  expect(broken).toEqual([]);
});

test('a `module: commonjs` consumer (moduleResolution node10) resolves every subpath, strict', async () => {
  await run(
    process.execPath,
    [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'node10')],
    { cwd: dir },
  );
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

/** The commands of the `sh` block under "On Node 20" in docs/getting-started.md, as words. */
function node20Recipe(): string[][] {
  const page = readFileSync(join(repo, 'docs', 'getting-started.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## On Node 20\n'));
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) =>
      [...line.matchAll(/'([^']*)'|(\S+)/g)].map(([, quoted, word]) => quoted ?? word ?? ''),
    );
}

test('the Node 20 recipe, in a fresh app: install, install again, npm ci, no override error and no engine warning', async () => {
  const recipe = node20Recipe();
  expect(recipe.map((words) => words.slice(0, 2).join(' '))).toEqual(['npm pkg', 'npm install']);
  const tarball = join(dir, packedName);
  const app = mkdtempSync(join(tmpdir(), 'garl-node20-'));
  try {
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'node20-app', private: true }));
    const quiet = ['--prefer-offline', '--no-audit', '--no-fund'];
    const steps = [...recipe, ['npm', 'install'], ['npm', 'ci']].map(([, ...args]) =>
      args[0] === 'install' || args[0] === 'ci'
        ? [...args.map((a) => (a === 'graphql-atomic-rate-limit' ? tarball : a)), ...quiet]
        : args,
    );
    const output: string[] = [];
    for (const args of steps) {
      const { stdout, stderr } = await run('npm', args, { cwd: app, timeout: 150_000 });
      output.push(stdout, stderr);
    }
    expect(output.join('\n')).not.toMatch(/EBADENGINE|EOVERRIDE/);
    const { stdout } = await run('npm', ['ls', '@graphql-tools/utils', '--all', '--json'], {
      cwd: app,
    });
    // every copy of @graphql-tools/utils in the tree, wherever a package depends on it
    type Tree = { version?: string; dependencies?: Record<string, Tree> };
    const utils = (tree: Tree): string[] =>
      Object.entries(tree.dependencies ?? {}).flatMap(([name, dependency]) => [
        ...(name === '@graphql-tools/utils' ? [dependency.version ?? '?'] : []),
        ...utils(dependency),
      ]);
    expect([...new Set(utils(JSON.parse(stdout) as Tree))]).toEqual(['12.0.1']);
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
}, 480_000);
