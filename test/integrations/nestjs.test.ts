import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { releaseTogether } from '../support/barrier';
import { errorCodes, httpClient, postGraphQL, type GraphQLResponse } from '../support/http';
import type { Child } from '../support/processes';
import { recipeProject, type RecipeProject } from '../support/recipes';
import { redisUrl } from '../support/redis';

/*
 * docs/nestjs.md's application, examples/nestjs.ts, run as a user runs it (its own processes,
 * the package imported by name) against Redis: `@RateLimit` is decided after the guards, so the
 * identity is the one AuthGuard sets and a call a guard refuses counts nothing.
 */

const repo = join(__dirname, '..', '..');
const SUBMIT = 'mutation ($c: String!) { submitFlag(challenge: $c, flag: "CTF{no}") }';

test.each(['nestjs.ts', 'nestjs-schema-first.ts'])(
  'docs/nestjs.md shows examples/%s byte for byte',
  (file) => {
    const page = readFileSync(join(repo, 'docs', 'nestjs.md'), 'utf8');
    const source = readFileSync(join(repo, 'examples', file), 'utf8');
    expect(page).toContain(`\`\`\`ts\n${source}\`\`\`\n`);
  },
);

test('examples/nestjs-schema-first.ts as pasted: the team its guard set is counted', async () => {
  const project = recipeProject();
  const server = project.start('nestjs-schema-first.ts', { REDIS_URL: redisUrl(), PORT: '0' });
  try {
    const [, url = ''] = await server.waitForOutput(/Ready at (\S+)/, 30_000);
    const team = `team-${randomUUID()}`;
    const query = 'mutation { submitFlag(flag: "CTF{no}") }';
    const responses = [await postGraphQL(url, query)];
    for (let i = 0; i < 4; i++) responses.push(await postGraphQL(url, query, team));
    expect(responses.map((r) => r.body.data?.submitFlag ?? errorCodes(r)[0])).toEqual([
      'UNAUTHENTICATED',
      false,
      false,
      false,
      'RATE_LIMITED',
    ]);
  } finally {
    await server.stop();
    project.remove();
  }
}, 60_000);

describe('examples/nestjs.ts as pasted, two processes on one Redis', () => {
  let project: RecipeProject;
  let servers: Child[];
  let urls: string[];

  beforeAll(async () => {
    project = recipeProject();
    servers = [0, 1].map(() => project.start('nestjs.ts', { REDIS_URL: redisUrl(), PORT: '0' }));
    urls = await Promise.all(
      servers.map(async (s) => (await s.waitForOutput(/Ready at (\S+)/, 30_000))[1] ?? ''),
    );
    // a first hit loads the script into Redis: not what the bursts below measure
    for (const url of urls) await postGraphQL(url, SUBMIT, `warm-${randomUUID()}`, { c: 'intro' });
  }, 60_000);
  afterAll(async () => {
    await Promise.all((servers ?? []).map((s) => s.stop()));
    project?.remove();
  });

  /** What each response was: the resolver's answer, else its first error code. */
  const outcomes = (responses: readonly GraphQLResponse[]): unknown[] =>
    responses.map((r) => r.body.data?.submitFlag ?? errorCodes(r)[0]);

  /** `count` submissions of one team released together, spread over `targets`. */
  async function together(count: number, team: string, targets: string[]): Promise<unknown[]> {
    const clients = Array.from({ length: count }, () => httpClient());
    try {
      const responses = await releaseTogether(count, async (i) => {
        const url = targets[i % targets.length] ?? '';
        return () => (clients[i] ?? httpClient()).post(url, SUBMIT, team, { c: 'intro' });
      });
      return outcomes(responses);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  }

  test.each([
    ['one process', 1],
    ['two processes', 2],
  ])('20 simultaneous submissions of one team on %s: exactly 3 pass', async (_, processes) => {
    const results = await together(20, `team-${randomUUID()}`, urls.slice(0, processes));
    expect(results.filter((r) => r === false)).toHaveLength(3);
    expect(results.filter((r) => r !== false)).toEqual(Array<string>(17).fill('RATE_LIMITED'));
  });

  test('the team counted is the one AuthGuard set, with the RateLimit headers', async () => {
    const [url = ''] = urls;
    const [a, b] = [`team-${randomUUID()}`, `team-${randomUUID()}`];
    const first = [];
    for (let i = 0; i < 4; i++) first.push(await postGraphQL(url, SUBMIT, a, { c: 'intro' }));
    expect(outcomes(first)).toEqual([false, false, false, 'RATE_LIMITED']);
    expect(first[0]?.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60');
    expect(first[3]?.headers.get('retry-after')).toMatch(/^\d+$/);
    // another team's token is another counter
    expect(outcomes([await postGraphQL(url, SUBMIT, b, { c: 'intro' })])).toEqual([false]);
  });

  test('calls a guard refuses count nothing', async () => {
    const [url = ''] = urls;
    const team = `team-${randomUUID()}`;
    const refused = [];
    for (let i = 0; i < 5; i++) refused.push(await postGraphQL(url, SUBMIT, team, { c: 'locked' }));
    for (let i = 0; i < 5; i++)
      refused.push(await postGraphQL(url, SUBMIT, undefined, { c: 'intro' }));
    expect(outcomes(refused)).toEqual([
      ...Array<string>(5).fill('FORBIDDEN'),
      ...Array<string>(5).fill('UNAUTHENTICATED'),
    ]);
    expect(refused.every((r) => r.headers.get('ratelimit') === null)).toBe(true);
    const after = [];
    for (let i = 0; i < 4; i++) after.push(await postGraphQL(url, SUBMIT, team, { c: 'intro' }));
    expect(outcomes(after)).toEqual([false, false, false, 'RATE_LIMITED']);
  });
});
