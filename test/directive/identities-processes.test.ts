import { fire, IDENTITIES_SDL } from '../support/identities';
import { stopAll } from '../support/processes';
import { redisUrl, uniquePrefix } from '../support/redis';
import { startLimitedServer, type ServerProcess } from '../support/servers';

/*
 * Limits on arguments, named sources and the whole site, with several identities on one field,
 * shared exactly by two processes on one Redis.
 */

let servers: ServerProcess[] = [];

beforeAll(async () => {
  const env = { REDIS_URL: redisUrl(), RATE_LIMIT_PREFIX: uniquePrefix() };
  servers = await Promise.all([
    startLimitedServer(IDENTITIES_SDL, env),
    startLimitedServer(IDENTITIES_SDL, env),
  ]);
}, 30_000);
afterAll(stopAll);

const passed = (results: { data?: Record<string, unknown> | null }[], field: string): number =>
  results.filter((r) => r.data?.[field] === true).length;

test('per argument: exactly 3 of 40 simultaneous logins for one email, from 40 IPs over two processes', async () => {
  const results = await fire(
    servers,
    40,
    () => 'mutation { login(email: "a@example.com") }',
    (i) => ({ 'x-ip': `10.1.0.${i}` }),
  );
  expect(passed(results, 'login')).toBe(3);
});

test('per source: exactly 5 of 40 simultaneous logins from one IP, for 40 emails over two processes', async () => {
  const results = await fire(
    servers,
    40,
    (i) => `mutation { login(email: "u${i}@example.com") }`,
    () => ({ 'x-ip': '10.2.0.1' }),
  );
  expect(passed(results, 'login')).toBe(5);
});

test('site-wide: exactly 2 per user and 7 in all; blocked per-user hits burn none of the site', async () => {
  // 3 users x 10 hits: each user passes 2 (6 in all), the site keeps 1
  const first = await fire(
    servers,
    30,
    () => 'mutation { sendInvite }',
    (i) => ({ 'x-team': `user-${i % 3}` }),
  );
  expect(passed(first, 'sendInvite')).toBe(6);
  const second = await fire(
    servers,
    10,
    () => 'mutation { sendInvite }',
    (i) => ({ 'x-team': `late-${i}` }),
  );
  expect(passed(second, 'sendInvite')).toBe(1);
});
