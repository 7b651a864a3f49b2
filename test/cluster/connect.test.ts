import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';

import { createRedisStore, type RateLimitRule } from '../../src';
import { counterKey } from '../../src/keys';
import { startCluster, type TestCluster } from '../support/cluster';
import { uniquePrefix, waitFor } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';

/*
 * ioredis opens a Cluster node's connection on the first command for that node, and queues
 * commands meanwhile. A hit queued for a frozen master, refused by the timeout, must not be
 * counted when the master wakes up and the queue is sent.
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
  const probe = new Redis(Number(node.options.port), node.options.host ?? '127.0.0.1');
  const pid = Number(/process_id:(\d+)/.exec(await probe.info('server'))?.[1]);
  probe.disconnect();

  const ctx = { team: { id: victim } };
  // frozen for well under the cluster's node timeout (2 s), so the cluster stays up
  process.kill(pid, 'SIGSTOP');
  const schema = limitedSchema(
    'type Query { a: Int } type Mutation { exact: Boolean @rateLimit(action: "exact", window: 60, limit: 5) }',
    { Mutation: { exact: () => true } },
    { store: createRedisStore({ client, prefix, connectWaitMs: 100 }), timeoutMs: 200 },
  );
  try {
    const refused = await Promise.all(
      Array.from({ length: 10 }, () => run(schema, 'mutation { exact }', ctx)),
    );
    expect(refused.map(codes)).toEqual(Array(10).fill(['RATE_LIMIT_UNAVAILABLE']));
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  await waitFor(`the connection to ${address}`, () => node.status === 'ready', 5_000);
  // none of the ten refused hits was counted: the victim has its whole limit of 5
  const after = await Promise.all(
    Array.from({ length: 6 }, () => run(schema, 'mutation { exact }', ctx)),
  );
  expect(after.filter((x) => x.data?.exact === true)).toHaveLength(5);
}, 30_000);
