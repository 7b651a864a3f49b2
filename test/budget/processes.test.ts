import { randomUUID } from 'node:crypto';

import { rateLimitDirective } from '../../src';
import { fire } from '../support/identities';
import { stopAll } from '../support/processes';
import { closeClients, connectRedis, redisUrl, uniquePrefix } from '../support/redis';
import { startBudgetServer, type ServerProcess } from '../support/servers';
import { openedRedisStore } from '../support/stores';

/*
 * One operation cost budget shared by three GraphQL Yoga processes on one Redis, under
 * operations released at one instant: the estimates admitted never sum beyond the budget, and
 * the budget ends holding exactly what the admitted operations cost. A TOKEN_BUCKET of 100 a
 * day refills a point per 864 s: nothing comes back on its own during a test.
 */

const BUDGET = { limit: 100, window: 86_400 };
let servers: ServerProcess[] = [];
let peek: ReturnType<typeof rateLimitDirective>['peek'];

beforeAll(async () => {
  const prefix = uniquePrefix();
  const env = { REDIS_URL: redisUrl(), RATE_LIMIT_PREFIX: prefix };
  servers = await Promise.all([0, 1, 2].map(() => startBudgetServer(BUDGET, env)));
  const store = await openedRedisStore({ client: await connectRedis(), prefix });
  ({ peek } = rateLimitDirective({ store, budget: BUDGET }));
}, 30_000);
afterAll(async () => {
  await stopAll();
  await closeClients();
});

interface Answer {
  data?: { items?: unknown[] } | null;
  errors?: { extensions?: Record<string, unknown> }[];
  extensions?: { cost?: { requestedQueryCost: number; actualQueryCost: number | null } };
}

async function run(n: number, query: (i: number) => string) {
  const team = `team-${randomUUID()}`;
  const answers = (await fire(servers, n, query, () => ({ 'x-team': team }))) as Answer[];
  const admitted = answers.filter((a) => a.data?.items);
  const refused = answers.filter((a) => !a.data?.items);
  for (const a of refused) {
    expect(a.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', action: 'budget' });
  }
  const left = (await peek({ identity: team, action: 'budget' }))[0]?.remaining as number;
  const requested = (a: Answer) => a.extensions?.cost?.requestedQueryCost as number;
  return { admitted, refused, left, requested };
}

test('equal operations: exactly limit / cost of them pass, from three processes at once', async () => {
  const { admitted, left } = await run(45, () => '{ items(first: 7) { id } }');
  expect(admitted).toHaveLength(14);
  expect(left).toBe(2);
});

test('mixed estimates: what is admitted never sums beyond the budget, and the budget holds exactly that', async () => {
  const sizes = [3, 7, 11, 17, 29];
  const { admitted, refused, left, requested } = await run(
    60,
    (i) => `{ items(first: ${sizes[i % sizes.length]}) { id } }`,
  );
  const spent = admitted.reduce((sum, a) => sum + requested(a), 0);
  expect(refused.length).toBeGreaterThan(0);
  expect(spent).toBeLessThanOrEqual(BUDGET.limit);
  expect(spent + left).toBe(BUDGET.limit);
});

test('refunds under concurrency: the budget ends holding exactly the actual costs', async () => {
  // each is priced at 20 and returns 2 items: 18 points come back once it has run
  const { admitted, left } = await run(40, () => '{ items(first: 20, returned: 2) { id } }');
  expect(admitted.length).toBeGreaterThanOrEqual(5);
  for (const a of admitted) {
    expect(a.extensions?.cost).toMatchObject({ requestedQueryCost: 20, actualQueryCost: 2 });
  }
  expect(BUDGET.limit - left).toBe(2 * admitted.length);
});
