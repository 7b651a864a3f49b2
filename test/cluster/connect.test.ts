import calculateSlot from 'cluster-key-slot';
import { randomUUID } from 'node:crypto';

import { Cluster as ValkeyCluster } from 'iovalkey';
import { Cluster, Redis } from 'ioredis';

import { createRedisStore, type RateLimitRule } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { startCluster, type TestCluster } from '../support/cluster';
import { uniquePrefix, waitFor } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';

/*
 * The store runs on a Cluster of its own, duplicated from the one it is given, which it never
 * changes. ioredis opens a Cluster node's connection on the first command for that node, and
 * queues commands meanwhile. A hit refused while waiting for a frozen master must not be counted
 * when the master wakes up.
 */

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

const rule: RateLimitRule = {
  action: 'exact',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: 5,
  cost: 1,
};

test('a hit refused while waiting for a frozen master is never counted afterwards', async () => {
  const client = await cluster.connect();
  // a master this client has not opened a connection to yet (the store opens it: it is made
  // once the master is frozen)
  const node = client.nodes('master').find((n) => n.status === 'wait');
  if (!node) throw new Error('every master is connected already: no lazy connection to test');
  const address = `${node.options.host}:${node.options.port}`;
  const prefix = uniquePrefix();
  let victim = '';
  for (let i = 0; !victim; i++) {
    const slot = calculateSlot(counterKey(prefix, `victim-${i}`, rule));
    if (client.slots[slot]?.[0] === address) victim = `victim-${i}`;
  }
  const admin = new Redis(Number(node.options.port), node.options.host ?? '127.0.0.1');
  const pid = Number(/process_id:(\d+)/.exec(await admin.info('server'))?.[1]);
  admin.disconnect();

  const ctx = { team: { id: victim } };
  // frozen for well under the cluster's node timeout (2 s), so the cluster stays up
  process.kill(pid, 'SIGSTOP');
  const schema = limitedSchema(
    'type Query { a: Int } type Mutation { exact: Boolean @rateLimit(action: "exact", window: 60, limit: 5) }',
    { Mutation: { exact: () => true } },
    // no set-up wait either: the master must thaw well within the cluster's node timeout
    {
      store: createRedisStore({ client, prefix, connectWaitMs: 100, setupWaitMs: 0 }),
      timeoutMs: 200,
    },
  );
  try {
    const refused = await Promise.all(
      Array.from({ length: 10 }, () => run(schema, 'mutation { exact }', ctx)),
    );
    expect(refused.map(codes)).toEqual(Array(10).fill(['RATE_LIMIT_UNAVAILABLE']));
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  // the store's own connection to the master, which it opened while the master was frozen
  let probe = '';
  for (let i = 0; !probe; i++) {
    const slot = calculateSlot(counterKey(prefix, `probe-${i}`, rule));
    if (client.slots[slot]?.[0] === address) probe = `probe-${i}`;
  }
  await waitFor(
    `the store's connection to ${address}`,
    async () =>
      codes(await run(schema, 'mutation { exact }', { team: { id: probe } })).length === 0,
    5_000,
  );
  // none of the ten refused hits was counted: the victim has its whole limit of 5
  const after = await Promise.all(
    Array.from({ length: 6 }, () => run(schema, 'mutation { exact }', ctx)),
  );
  expect(after.filter((x) => x.data?.exact === true)).toHaveLength(5);
}, 30_000);

/** What a test can see of a Cluster client and its nodes, to compare before and after. */
function shapeOf(client: Cluster): unknown {
  const of = (target: Cluster | Redis) => ({
    options: { ...target.options },
    own: Object.getOwnPropertyNames(target).sort(),
    events: target.eventNames().map((name) => [name, target.listenerCount(name)]),
    // the same functions, from the prototype: none was replaced
    methods: ['sendCommand', 'evalsha', 'eval', 'defineCommand'].map((name) => [
      Reflect.get(target, name),
      Object.hasOwn(target, name),
    ]),
  });
  return { cluster: of(client), nodes: client.nodes().map(of) };
}

/** Connections named `name` open on every master. */
async function named(name: string): Promise<number> {
  let count = 0;
  for (const { host, port } of cluster.nodes) {
    const admin = await cluster.node(`${host}:${port}`);
    const list = String(await admin.client('LIST')).split('\n');
    count += list.filter((line) => line.includes(` name=${name} `)).length;
  }
  return count;
}

test('the store never changes the Cluster it is given, and closes only what it opened', async () => {
  const name = `owner-${randomUUID()}`;
  const client = new Cluster([...cluster.nodes], {
    lazyConnect: true,
    redisOptions: { connectionName: name },
  });
  await client.connect();
  await Promise.all(client.nodes('master').map((node) => node.ping()));
  const before = shapeOf(client);
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  const ids = Array.from({ length: 30 }, (_, i) => `owner-${i}`);
  const decisions = await Promise.all(ids.map((id) => store.hit(id, [rule])));
  expect(decisions.every((d) => d.allowed)).toBe(true);
  await store.reset?.('owner-0', [rule]);
  expect(shapeOf(client)).toEqual(before);
  // the store's nodes carry the client's redisOptions: a connection of each to each master
  expect(await named(name)).toBe(2 * cluster.nodes.length);
  await store.close?.();
  await waitFor(
    "the store's connections to close",
    async () => (await named(name)) === cluster.nodes.length,
  );
  expect(client.status).toBe('ready');
  expect(await client.set(`owner-${randomUUID()}`, '1')).toBe('OK');
  await expect(store.hit('owner-1', [rule])).rejects.toThrow(/closed/);
  await client.quit();
});

test("an iovalkey Cluster's redisOptions reach the store's nodes, though its duplicate() does not merge them", async () => {
  const name = `valkey-${randomUUID()}`;
  const client = new ValkeyCluster([...cluster.nodes], {
    lazyConnect: true,
    redisOptions: { connectionName: name },
  });
  await client.connect();
  await Promise.all(client.nodes('master').map((node) => node.ping()));
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  try {
    // not about deadlines: the hits start on a store that is set up
    await store.ready?.();
    const ids = Array.from({ length: 30 }, (_, i) => `valkey-${i}`);
    const decisions = await Promise.all(ids.map((id) => store.hit(id, [rule])));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // a connection of the client's and one of the store's to each master, both named
    expect(await named(name)).toBe(2 * cluster.nodes.length);
  } finally {
    await store.close?.();
    await client.quit();
  }
});

test('a frozen Cluster client, never connected, passes and the store decides on its own Cluster', async () => {
  const client = new Cluster([...cluster.nodes], { lazyConnect: true });
  Object.freeze(client.options);
  Object.freeze(client);
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  try {
    // the store opens its connection on its first call, as the client would have: a busy machine
    // may take longer than connectWaitMs for that, failing the call, unsent
    await waitFor('the store to connect', async () =>
      Array.isArray(await store.peek?.('frozen', [rule])),
    );
    const decisions = await Promise.all(
      Array.from({ length: 6 }, () => store.hit('frozen', [rule])),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(client.status).toBe('wait');
  } finally {
    await store.close?.();
  }
});
