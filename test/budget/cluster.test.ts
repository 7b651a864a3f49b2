import { type RateLimitRule, type RateLimitStore } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { RATE_ALGORITHMS } from '../support/algorithms';
import { startCluster, type TestCluster } from '../support/cluster';
import { uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * A budget's take and refund on a real three-master Redis Cluster: one identity is one hash
 * tag, so each take is one script call on one master, and its refund finds it there.
 */

let cluster: TestCluster;
let store: RateLimitStore;
const prefix = uniquePrefix();

beforeAll(async () => {
  cluster = await startCluster();
  store = await openedRedisStore({ client: await cluster.connect(), prefix });
}, 60_000);
afterAll(() => cluster?.stop());

const budget = (algorithm: RateLimitRule['algorithm']): RateLimitRule => ({
  action: 'budget',
  algorithm,
  windowSeconds: 86_400,
  limit: 100,
  cost: 1,
});

test.each(RATE_ALGORITHMS)(
  '%s: teams on every master get back exactly what they did not use',
  async (algorithm) => {
    const rule = budget(algorithm);
    const teams = Array.from({ length: 12 }, (_, i) => `team-${algorithm}-${i}`);
    const masters = await Promise.all(
      teams.map((t) => cluster.masterOf(counterKey(prefix, t, rule))),
    );
    expect(new Set(masters).size).toBe(3);
    await Promise.all(
      teams.map(async (team, i) => {
        const taken = await store.take!(team, rule, 50);
        expect(taken.allowed).toBe(true);
        await expect(store.refund!(team, rule, taken.receipt!, 30 + i)).resolves.toBe(true);
      }),
    );
    const left = await Promise.all(
      teams.map(async (t) => (await store.peek!(t, [rule]))[0]?.remaining),
    );
    expect(left).toEqual(teams.map((_, i) => 80 + i));
  },
);
