import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5';
import ts from 'typescript';

import { createRedisStore } from '../../src';

/*
 * The published declarations name no server package: the Apollo and envelop plugins' types are
 * spelled out, so a consumer of one server compiles without the other installed (the package
 * test compiles a consumer that has @apollo/server but no envelop or Yoga package). Only the
 * framework subpaths (./nestjs, ./mercurius, ./opentelemetry) name their framework, and nothing
 * else reaches them.
 */

const dist = join(__dirname, '..', '..', 'dist');
/** What each published folder's declarations may import: the root only graphql. */
const ALLOWED: Record<string, readonly string[]> = {
  '.': ['graphql'],
  nestjs: ['graphql', '@nestjs/common'],
  mercurius: ['graphql', 'fastify', 'mercurius'],
  opentelemetry: ['graphql', '@opentelemetry/api'],
  upstash: ['graphql'],
};
/** The framework subpaths: nothing outside their folder may reach into them. */
const SUBPATHS = ['nestjs', 'mercurius', 'opentelemetry', 'upstash'];

function files(dir: string, ending: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return files(path, ending);
    return entry.name.endsWith(ending) ? [path] : [];
  });
}

/** The published folder a file belongs to: a framework subpath, else the root (`.`). */
const folderOf = (file: string): string => {
  const [top = '.'] = relative(dist, file).split('/');
  return SUBPATHS.includes(top) ? top : '.';
};

test('the published .d.ts files import only graphql, each other and their framework', () => {
  const declarations = files(dist, '.d.ts');
  expect(declarations.map((f) => relative(dist, f))).toEqual(
    expect.arrayContaining([
      'index.d.ts',
      'plugins/envelop.d.ts',
      'plugins/apollo.d.ts',
      'nestjs/index.d.ts',
      'mercurius/index.d.ts',
    ]),
  );
  const foreign = declarations.flatMap((file) => {
    const allowed = ALLOWED[folderOf(file)] ?? [];
    return [...readFileSync(file, 'utf8').matchAll(/(?:from |import\()'([^'.][^']*)'/g)]
      .map((m) => m[1] as string)
      .filter((name) => !allowed.includes(name))
      .map((name) => `${relative(dist, file)} imports ${name}`);
  });
  expect(foreign).toEqual([]);
});

test("createRedisStore's `client` takes each client family's own types", () => {
  // compiled, not run: a family whose type the published one refused would fail the build
  const stores = [
    () => createRedisStore({ client: new Redis() }),
    () => createRedisStore({ client: new Cluster([]) }),
    () => createRedisStore({ client: new Valkey() }),
    () => createRedisStore({ client: new ValkeyCluster([]) }),
    () => createRedisStore({ client: createClient() }),
    () => createRedisStore({ client: createCluster({ rootNodes: [] }) }),
    () => createRedisStore({ client: createClient5() }),
    () => createRedisStore({ client: createCluster5({ rootNodes: [] }) }),
  ];
  expect(stores).toHaveLength(8);
});

test('nothing outside a framework subpath reaches into it, in types or at run time', () => {
  const reaching = [...files(dist, '.d.ts'), ...files(dist, '.js')]
    .filter((file) => folderOf(file) === '.')
    .flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:from |import\(|require\()["']([^"']+)["']/g)]
        .map((m) => m[1] as string)
        .filter((name) =>
          /(^|\/)(nestjs|mercurius|opentelemetry)(\/|$)|^@nestjs\/|^@opentelemetry\/|^fastify$/.test(
            name,
          ),
        )
        .map((name) => `${relative(dist, file)} imports ${name}`),
    );
  expect(reaching).toEqual([]);
});

/** The names a module of dist exports, types included, as a consumer's compiler sees them. */
function exportedNames(file: string): string[] {
  const program = ts.createProgram([join(dist, file)], { noEmit: true, noLib: true, types: [] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(join(dist, file));
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`dist/${file} is no module`);
  return checker.getExportsOfModule(module).map((symbol) => symbol.name);
}

const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  exports: Record<string, { types?: string; default?: string } | string>;
};

test('the root exports 50 names or fewer, and the cost estimator is not among them', () => {
  const names = exportedNames('index.d.ts');
  expect(names.length).toBeLessThanOrEqual(50);
  expect(names).toEqual(expect.arrayContaining(['rateLimitDirective', 'createRedisStore']));
  expect(
    names.filter((n) => /cost(Estimator|TypeDefs|QueryError)|estimateCost|actualCost/i.test(n)),
  ).toEqual([]);
});

test('./cost is an export with its types: the cost estimator', () => {
  expect(manifest.exports['./cost']).toEqual({
    types: './dist/cost/index.d.ts',
    default: './dist/cost/index.js',
  });
  expect(exportedNames(join('cost', 'index.d.ts'))).toEqual(
    expect.arrayContaining([
      'createCostEstimator',
      'estimateCost',
      'actualCost',
      'costTypeDefs',
      'CostQueryError',
      'COST_DEFAULTS',
      'checkCostDirectives',
    ]),
  );
});

test.each([
  ['./nestjs', ['RateLimitModule', 'RateLimitService', 'RateLimit']],
  ['./mercurius', ['mercuriusRateLimit']],
  ['./opentelemetry', ['openTelemetry', 'DECISION_ATTRIBUTES']],
  ['./upstash', ['createUpstashStore']],
])('%s is an export with its types', (subpath, names) => {
  const folder = subpath.slice(2);
  expect(manifest.exports[subpath]).toEqual({
    types: `./dist/${folder}/index.d.ts`,
    default: `./dist/${folder}/index.js`,
  });
  expect(exportedNames(join(folder, 'index.d.ts'))).toEqual(expect.arrayContaining(names));
});
