import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';

import { errorCodes, postGraphQL, SUBMIT } from '../support/http';
import { startProcess, type Child } from '../support/processes';
import { redisUrl, uniquePrefix } from '../support/redis';

/*
 * The Docker image's run-time stage, without Docker: its `npm ci` (read from the Dockerfile) into
 * a directory of its own, the files it copies, then the server started from there against Redis.
 * The set of packages that stage installs is enough to serve, and holds no devDependency.
 */

const run = promisify(execFile);
const repo = join(__dirname, '..', '..');
const dockerfile = readFileSync(join(repo, 'server', 'Dockerfile'), 'utf8');
const runtimeStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));

let dir: string;
let server: Child | undefined;
let url: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'garl-image-'));
  const copies = [...runtimeStage.matchAll(/^COPY (--from=build )?(.+) (\S+)$/gm)];
  const install = /^RUN (npm ci [^&\n]*)/m.exec(runtimeStage)?.[1];
  if (!install || copies.length === 0) throw new Error('no npm ci or COPY in the run-time stage');
  for (const [, fromBuild, sources = '', target = ''] of copies) {
    for (const source of sources.split(' ')) {
      // the build stage's output is this checkout's build (`npm test` builds first)
      const from = join(repo, fromBuild ? source.replace(/^\/app\//, '') : source);
      const to = target.endsWith('/') ? join(dir, target, basename(source)) : join(dir, target);
      cpSync(from, to, { recursive: true });
    }
  }
  const [command, ...args] = install.trim().split(/\s+/);
  await run(command ?? 'npm', [...args, '--prefer-offline'], { cwd: dir, timeout: 90_000 });
  server = startProcess(process.execPath, [join(dir, 'server', 'dist', 'main.js')], {
    cwd: dir,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: redisUrl(),
      RATE_LIMIT_PREFIX: uniquePrefix(),
    },
  });
  [, url = ''] = await server.waitForOutput(/"url":"([^"]+)"/);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('installed from the lock less the devDependencies, the server limits submissions on Redis', async () => {
  const codes = [];
  for (let i = 0; i < 4; i++) {
    const response = await postGraphQL(url, SUBMIT, 'demo-token-alpha', { c: 'warmup', f: 'x' });
    codes.push(errorCodes(response)[0] ?? response.body.data?.submitFlag);
  }
  expect(codes).toEqual([
    { correct: false },
    { correct: false },
    { correct: false },
    'RATE_LIMITED',
  ]);
});

const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  name: string;
  devDependencies: Record<string, string>;
};
const workspace = JSON.parse(readFileSync(join(repo, 'server', 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};

const KINDS = ['dependencies', 'optionalDependencies', 'peerDependencies'] as const;
type DependencyKind = (typeof KINDS)[number];

test('the run-time install holds none of the devDependencies', () => {
  const devOnly = Object.keys(manifest.devDependencies).filter((n) => !workspace.dependencies[n]);
  expect(devOnly).toEqual(expect.arrayContaining(['typescript', 'jest', 'graphql-yoga']));
  // a package the run-time dependencies ask for themselves (graphql-armor: @envelop/core) is
  // theirs, not ours: what must not be there is a devDependency nothing at run time asks for
  const installed = JSON.parse(
    readFileSync(join(dir, 'node_modules', '.package-lock.json'), 'utf8'),
  ) as { packages: Record<string, Partial<Record<DependencyKind, Record<string, string>>>> };
  const needed = new Set(
    Object.values(installed.packages).flatMap((p) =>
      KINDS.flatMap((kind) => Object.keys(p[kind] ?? {})),
    ),
  );
  const stray = devOnly.filter(
    (name) => existsSync(join(dir, 'node_modules', name)) && !needed.has(name),
  );
  expect(stray).toEqual([]);
});

test("the server workspace asks for the same versions as the library's devDependencies", () => {
  for (const [name, range] of Object.entries(workspace.dependencies)) {
    if (name === manifest.name) continue;
    expect([name, manifest.devDependencies[name]]).toEqual([name, range]);
  }
});

test('the server imports the library by its package name, linked to this checkout', () => {
  expect(workspace.dependencies[manifest.name]).toBe('file:..');
});
