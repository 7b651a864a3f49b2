import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { composeServices } from '@apollo/composition';
import { parse } from 'graphql';

import { errorCodes, postGraphQL } from '../support/http';
import { stopAll, within, type Child } from '../support/processes';
import { recipeProject, type RecipeProject } from '../support/recipes';
import { redisUrl, startRedisServer } from '../support/redis';

/*
 * The server recipes the README and docs/ show are files of examples/, byte for byte; each runs here as a user
 * runs it (its own process, the package imported by name) against Redis. The client recipes run
 * in test/docs/clients.test.ts.
 */

const repo = join(__dirname, '..', '..');
const RECIPES = [
  'yoga.ts',
  'login.ts',
  'pothos.ts',
  'federation.ts',
  'apollo-client.mts',
  'graphql-request.mts',
  'ai-call.ts',
];

/** The README and the pages of docs/, where the recipes are shown. */
const pages = [
  join(repo, 'README.md'),
  ...readdirSync(join(repo, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(repo, 'docs', f)),
].map((path) => readFileSync(path, 'utf8'));

test.each(RECIPES)('the README or a docs page shows examples/%s byte for byte', (file) => {
  const source = readFileSync(join(repo, 'examples', file), 'utf8');
  const block = `\`\`\`ts\n${source}\`\`\`\n`;
  expect(pages.some((page) => page.includes(block))).toBe(true);
});

describe.each(['yoga.ts', 'pothos.ts', 'federation.ts'])('examples/%s as pasted', (file) => {
  let project: RecipeProject;
  let server: Child;
  let url: string;

  beforeAll(async () => {
    project = recipeProject();
    // the recipes use the default key prefix; each test's team is new, and so are its keys
    server = project.start(file, { REDIS_URL: redisUrl(), PORT: '0' });
    [, url = ''] = await server.waitForOutput(/Ready at (\S+)/);
  });
  afterAll(async () => {
    await server?.stop();
    project?.remove();
  });

  test('three submissions pass, the fourth is RATE_LIMITED with Retry-After', async () => {
    const team = `recipe-${randomUUID()}`;
    const responses = [];
    for (let i = 0; i < 4; i++) {
      responses.push(await postGraphQL(url, 'mutation { submitFlag(flag: "CTF{no}") }', team));
    }
    expect(responses.map((r) => r.body.data?.submitFlag ?? errorCodes(r)[0])).toEqual([
      false,
      false,
      false,
      'RATE_LIMITED',
    ]);
    expect(responses[0]?.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60');
    expect(responses[3]?.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  if (file === 'federation.ts') {
    test('an entity field reached through _entities is limited', async () => {
      const team = `recipe-${randomUUID()}`;
      const { body } = await postGraphQL(
        url,
        'query ($r: [_Any!]!) { _entities(representations: $r) { ... on Challenge { hint } } }',
        team,
        { r: ['a', 'b', 'c'].map((id) => ({ __typename: 'Challenge', id })) },
      );
      expect(body.data?._entities).toEqual([
        { hint: 'Look closer at a' },
        { hint: 'Look closer at b' },
        { hint: null },
      ]);
      expect(body.errors?.map((e) => e.extensions?.code)).toEqual(['RATE_LIMITED']);
    });

    test('composition keeps the @cost and @listSize that federation v2.9 imports', async () => {
      const { body } = await postGraphQL(url, '{ _service { sdl } }');
      const { sdl } = body.data?._service as { sdl: string };
      const composed = composeServices([
        { name: 'challenges', typeDefs: parse(sdl), url: 'http://challenges' },
      ]);
      expect(composed.errors).toBeUndefined();
      // what a gateway's budget prices from: the same sizes and weights as the subgraph's
      expect(composed.supergraphSdl).toContain(
        'challenges(first: Int = 10): [Challenge!]! @listSize(slicingArguments: ["first"])',
      );
      expect(composed.supergraphSdl).toContain('hint: String @cost(weight: 5)');
    });
  }

  // last: it ends the server
  test('SIGTERM closes the Redis client and the process exits 0', async () => {
    server.process.kill('SIGTERM');
    expect(await within(server.exited, 10_000, `${file} to exit`)).toEqual({
      code: 0,
      signal: null,
    });
  });
});

describe('examples/login.ts as pasted', () => {
  let project: RecipeProject;
  let server: Child;
  let url: string;

  beforeAll(async () => {
    project = recipeProject();
    // a Redis of its own: the recipe counts per client address, and every test comes from one
    const redis = await startRedisServer();
    server = project.start('login.ts', { REDIS_URL: redis.url, PORT: '0' });
    [, url = ''] = await server.waitForOutput(/Ready at (\S+)/);
  });
  afterAll(async () => {
    await stopAll();
    project?.remove();
  });

  test('12 spellings of one address get the 5 password checks of one account, no more', async () => {
    const spellings = [
      'ann@example.com',
      'Ann@example.com',
      'ANN@EXAMPLE.COM',
      ' ann@example.com',
      'ann@example.com ',
      'ann@Example.com',
      'aNn@example.COM',
      '\tann@example.com',
      'ann@example.com\n',
      'ANN@example.com',
      'ann@EXAMPLE.com',
      '  Ann@Example.Com  ',
    ];
    const answers = [];
    for (const email of spellings) {
      const r = await postGraphQL(
        url,
        'mutation ($e: String!) { login(email: $e, password: "x") }',
        undefined,
        { e: email },
      );
      answers.push(r.body.data?.login ?? errorCodes(r)[0]);
    }
    expect(answers).toEqual([...Array(5).fill(false), ...Array(7).fill('RATE_LIMITED')]);
    // another account from the same address is counted apart
    const other = await postGraphQL(
      url,
      'mutation { login(email: "bob@example.com", password: "x") }',
    );
    expect(other.body.data).toEqual({ login: false });
  });

  // last: it ends the server
  test('SIGTERM closes the Redis client and the process exits 0', async () => {
    server.process.kill('SIGTERM');
    expect(await within(server.exited, 10_000, 'login.ts to exit')).toEqual({
      code: 0,
      signal: null,
    });
  });
});
