import fc from 'fast-check';
import type { Cluster, Redis } from 'ioredis';

import type { RateLimitRule, RateLimitStore } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { keySlot } from '../../src/stores/redis/cluster-slots';
import { releaseTogether } from '../support/barrier';
import { startCluster, type TestCluster } from '../support/cluster';
import { openedRedisStore } from '../support/stores';
import { scriptCalls, uniquePrefix, waitFor } from '../support/redis';

/*
 * On a Redis Cluster the store sends one script call per master a batch touches, whatever the
 * identities: the call is routed by one key and reaches the others undeclared. These tests move
 * slots between masters, so they run on a cluster of their own, and read the slot map afresh.
 */

let cluster: TestCluster;
/** A plain connection to each master, by `host:port`. */
let masters: Map<string, Redis>;

beforeAll(async () => {
  cluster = await startCluster();
  masters = new Map();
  for (const { host, port } of cluster.nodes) {
    masters.set(`${host}:${port}`, await cluster.node(`${host}:${port}`));
  }
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

const rule: RateLimitRule = {
  action: 'batch',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: 3,
  cost: 1,
};
const log: RateLimitRule = { ...rule, algorithm: 'SLIDING_WINDOW', limit: 5 };

/** The master serving `slot`, as `client` (one of the masters) sees it. */
async function ownerSeenBy(client: Redis, slot: number): Promise<string | undefined> {
  const ranges = await client.cluster('SLOTS');
  const master = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2];
  return master && `${master[0]}:${master[1]}`;
}

/** The master serving `slot` now, as the first master says. */
async function ownerOf(slot: number): Promise<string> {
  const owner = await ownerSeenBy(masters.values().next().value as Redis, slot);
  if (!owner) throw new Error(`no master serves slot ${slot}`);
  return owner;
}

const node = (address: string): Redis => {
  const found = masters.get(address);
  if (!found) throw new Error(`no connection to ${address}`);
  return found;
};

/** Script calls each master has run so far (EVALSHA and EVAL), by address. */
async function callsByMaster(): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const [address, client] of masters) counts.set(address, await scriptCalls(client));
  return counts;
}

async function callsDuring(work: () => Promise<unknown>): Promise<Map<string, number>> {
  const before = await callsByMaster();
  await work();
  const after = await callsByMaster();
  return new Map([...after].map(([a, n]) => [a, n - (before.get(a) ?? 0)]));
}

/** `count` identities `${base}${n}` whose counter of `of` lives on a master that `where` takes. */
async function pick(
  prefix: string,
  base: string,
  count: number,
  where: (master: string) => boolean,
  of: RateLimitRule = rule,
): Promise<string[]> {
  const found: string[] = [];
  for (let n = 0; found.length < count; n++) {
    if (n > 200 * count) throw new Error(`no identities ${base}* where asked`);
    if (where(await ownerOf(keySlot(counterKey(prefix, `${base}${n}`, of))))) {
      found.push(`${base}${n}`);
    }
  }
  return found;
}

const held = async (prefix: string, identity: string, of: RateLimitRule = rule) => {
  const key = counterKey(prefix, identity, of);
  const client = node(await ownerOf(keySlot(key)));
  return of.algorithm === 'SLIDING_WINDOW' ? client.zcard(key) : Number(await client.get(key));
};

/** A store on a client of its own, with every master's script loaded (one warm-up hit each). */
async function warmStore(prefix: string): Promise<{ client: Cluster; hit: RateLimitStore['hit'] }> {
  const client = await cluster.connect();
  const store = await openedRedisStore({ client, prefix, blockCache: false });
  for (const address of masters.keys()) {
    const [id] = await pick(prefix, 'warm-', 1, (m) => m === address);
    await store.hit(id as string, [rule]);
  }
  return { client, hit: (identity, rules, costs) => store.hit(identity, rules, costs) };
}

test('the slot of a key is the one Redis computes, whatever its characters', async () => {
  const client = node(masters.keys().next().value as string);
  const keys = fc.sample(
    fc.oneof(
      fc.string({ unit: 'grapheme' }),
      fc.string({ unit: 'binary' }),
      fc.string({ unit: fc.constantFrom('{', '}', 'a', 'é', '😀', '\ud800') }),
    ),
    { numRuns: 500, seed: 42 },
  );
  keys.push('', '{', '{}', '{}}', '}{a}', '{a}{b}', 'rl:{team-1}:submit:f60');
  for (const key of keys)
    expect([key, keySlot(key)]).toEqual([key, await client.cluster('KEYSLOT', key)]);
});

test('one script call per master touched, however many identities, and each gets exactly its limit', async () => {
  const prefix = uniquePrefix();
  const { hit } = await warmStore(prefix);
  const addresses = [...masters.keys()];
  const [skipped] = addresses;
  // 40 identities on two of the three masters, 5 hits each, all made in one turn
  const ids = await pick(prefix, 'team-', 40, (m) => m !== skipped);
  let results: { id: string; allowed: boolean }[] = [];
  const calls = await callsDuring(async () => {
    results = await Promise.all(
      Array.from({ length: 5 }, () => ids).flatMap((round) =>
        round.map(async (id) => ({ id, allowed: (await hit(id, [rule, log])).allowed })),
      ),
    );
  });
  expect(Object.fromEntries(calls)).toEqual(
    Object.fromEntries(addresses.map((a) => [a, a === skipped ? 0 : 1])),
  );
  for (const id of ids) {
    expect(results.filter((r) => r.id === id && r.allowed)).toHaveLength(3);
    expect(await held(prefix, id)).toBe(3);
    expect(await held(prefix, id, log)).toBe(3);
  }
});

test('hits made later in the same pass of the event loop join the batch of their master', async () => {
  const prefix = uniquePrefix();
  const { hit } = await warmStore(prefix);
  const [master] = [...masters.keys()] as [string];
  const [a, b] = await pick(prefix, 'team-', 2, (m) => m === master);
  const calls = await callsDuring(() =>
    Promise.all([
      hit(a as string, [rule]),
      // as a reply read in the same pass would release it: after the first hit's microtasks
      new Promise((resolve) => process.nextTick(() => resolve(hit(b as string, [rule])))),
    ]),
  );
  expect(calls.get(master)).toBe(1);
});

test('simultaneous hits from several processes’ worth of connections: exactly the limit per identity', async () => {
  const prefix = uniquePrefix();
  const ids = Array.from({ length: 60 }, (_, i) => `team-${i}`);
  const results = await releaseTogether(6, async (worker) => {
    const store = await openedRedisStore({ client: await cluster.connect(), prefix });
    return () =>
      Promise.all(
        ids.flatMap((id) =>
          Array.from({ length: 2 }, async () => ({
            id,
            allowed: (await store.hit(id, [rule])).allowed,
            worker,
          })),
        ),
      );
  });
  const hits = results.flat();
  expect(hits).toHaveLength(6 * 60 * 2);
  for (const id of ids) {
    expect(hits.filter((h) => h.id === id && h.allowed)).toHaveLength(3);
    expect(await held(prefix, id)).toBe(3);
  }
});

test('two identities on one master: one atomic call, no part taken and refunded', async () => {
  const prefix = uniquePrefix();
  const byIp: RateLimitRule = { ...rule, action: 'login-ip', limit: 5, by: 'ip' };
  const { hit } = await warmStore(prefix);
  const [email] = await pick(prefix, 'user-', 1, () => true);
  const master = await ownerOf(keySlot(counterKey(prefix, email as string, rule)));
  const [ip] = await pick(prefix, '10.0.0.', 1, (m) => m === master, byIp);
  const hits = Array.from({ length: 6 }, () => [email as string, ip as string]);
  let allowed: boolean[] = [];
  const calls = await callsDuring(async () => {
    allowed = (await Promise.all(hits.map((ids) => hit(ids, [rule, byIp])))).map((d) => d.allowed);
  });
  expect(allowed.filter(Boolean)).toHaveLength(3);
  // one call decided all six, the blocked ones included: none took a unit to refund
  expect(calls.get(master)).toBe(1);
  expect([...calls.values()].reduce((a, b) => a + b, 0)).toBe(1);
  expect(await held(prefix, ip as string, byIp)).toBe(3);
});

/** Moves the empty `slot` to the master `to`, on every node, and waits until all agree. */
async function moveSlot(slot: number, to: string): Promise<void> {
  const from = await ownerOf(slot);
  expect(await node(from).cluster('COUNTKEYSINSLOT', slot)).toBe(0);
  const id = String(await node(to).cluster('MYID'));
  // the new owner first, then the old one, then the others, as Redis' resharding does
  const order = [to, from, ...[...masters.keys()].filter((a) => a !== to && a !== from)];
  for (const address of order) await node(address).cluster('SETSLOT', slot, 'NODE', id);
  await waitFor(`slot ${slot} on ${to} everywhere`, async () => {
    for (const client of masters.values()) {
      if ((await ownerSeenBy(client, slot)) !== to) return false;
    }
    return true;
  });
}

test.each([
  ['a key of the slot that stayed', false],
  ['the key of the moved slot', true],
])(
  'a slot moved after the client read the map, the batch routed by %s: every hit counted once',
  async (_, movedFirst) => {
    const prefix = uniquePrefix();
    const { client, hit } = await warmStore(prefix);
    const addresses = [...masters.keys()];
    const [from, to] = addresses as [string, string];
    const [moved, stayed] = [
      ...(await pick(prefix, 'moved-', 1, (m) => m === from)),
      ...(await pick(prefix, 'stayed-', 1, (m) => m === from)),
    ] as [string, string];
    const slot = keySlot(counterKey(prefix, moved, rule));
    expect(keySlot(counterKey(prefix, stayed, rule))).not.toBe(slot);
    await moveSlot(slot, to);
    // the client, and the store's connection made from it before the move, place the slot on
    // the old master
    expect(client.slots[slot]?.[0]).toBe(from);

    // ten hits on each, in one turn: one batch for the old master, the first hit's key routes it
    const order = movedFirst ? [moved, stayed] : [stayed, moved];
    const decisions = await Promise.all(
      Array.from({ length: 10 }, () => order).flatMap((pair) =>
        pair.map(async (id) => ({ id, allowed: (await hit(id, [rule])).allowed })),
      ),
    );
    for (const id of order) {
      expect(decisions.filter((d) => d.id === id && d.allowed)).toHaveLength(3);
      expect(await held(prefix, id)).toBe(3);
    }
    expect(await node(to).exists(counterKey(prefix, moved, rule))).toBe(1);
    // the resent hits corrected the store's map: a hit on the moved slot now goes straight there
    const next = await callsDuring(() => hit(moved, [rule]));
    expect([next.get(from), next.get(to)]).toEqual([0, 1]);
  },
);

test('a hit whose key another master serves is sent again on its own, never counted twice', async () => {
  const prefix = uniquePrefix();
  const { hit } = await warmStore(prefix);
  const [from, to] = [...masters.keys()] as [string, string];
  const [moved] = await pick(prefix, 'moved-', 1, (m) => m === from);
  const slot = keySlot(counterKey(prefix, moved as string, rule));
  await moveSlot(slot, to);
  const others = await pick(prefix, 'other-', 5, (m) => m === from);
  // one batch of six hits routed by a key the old master still serves: one not counted there,
  // then sent again on its own, to the slot's new master (through a MOVED)
  let decisions: boolean[] = [];
  const calls = await callsDuring(async () => {
    decisions = (await Promise.all([...others, moved as string].map((id) => hit(id, [rule])))).map(
      (d) => d.allowed,
    );
  });
  expect(decisions).toEqual(Array(6).fill(true));
  // the old master answers the resent hit MOVED before running it, which is not a call
  expect(calls.get(from)).toBe(1);
  expect(calls.get(to)).toBe(1);
  expect(await held(prefix, moved as string)).toBe(1);
  // the resent hit corrected the store's map: the next goes straight to the new master
  const next = await callsDuring(() => hit(moved as string, [rule]));
  expect([next.get(from), next.get(to)]).toEqual([0, 1]);
  for (const id of others) expect(await held(prefix, id)).toBe(1);
});

test('a hit on two identities found split over two masters is decided in parts, each counted once', async () => {
  const prefix = uniquePrefix();
  const byIp: RateLimitRule = { ...rule, action: 'login-ip', limit: 5, by: 'ip' };
  const { client, hit } = await warmStore(prefix);
  const [from, to] = [...masters.keys()] as [string, string];
  const [email] = await pick(prefix, 'user-', 1, (m) => m === from);
  const [ip] = await pick(prefix, '10.0.0.', 1, (m) => m === from, byIp);
  const slot = keySlot(counterKey(prefix, email as string, rule));
  await moveSlot(slot, to);
  expect(client.slots[slot]?.[0]).toBe(from);
  // the client sees both on one master: one call, which finds the email's key gone
  const decisions = await Promise.all(
    Array.from({ length: 5 }, () => hit([email as string, ip as string], [rule, byIp])),
  );
  expect(decisions.filter((d) => d.allowed)).toHaveLength(3);
  expect(await held(prefix, email as string)).toBe(3);
  expect(await held(prefix, ip as string, byIp)).toBe(3);
});

test('a hit found on the wrong master after its caller may have given up is not sent again', async () => {
  const prefix = uniquePrefix();
  const client = await cluster.connect();
  const store = await openedRedisStore({ client, prefix, blockCache: false, connectWaitMs: 50 });
  const [from, to] = [...masters.keys()] as [string, string];
  const [moved] = await pick(prefix, 'moved-', 1, (m) => m === from);
  const [stayed] = await pick(prefix, 'stayed-', 1, (m) => m === from);
  // the script on the old master is loaded, and the client's map read, before the slot moves
  await store.hit(stayed as string, [rule]);
  await moveSlot(keySlot(counterKey(prefix, moved as string, rule)), to);
  // the batch's reply comes back well after connectWaitMs
  await node(from).client('PAUSE', 300, 'WRITE');
  const [first, late] = await Promise.allSettled([
    store.hit(stayed as string, [rule]),
    store.hit(moved as string, [rule]),
  ]);
  expect(first).toMatchObject({ status: 'fulfilled', value: { allowed: true } });
  expect(late).toMatchObject({ status: 'rejected', reason: { message: /Another node serves/ } });
  expect(await held(prefix, stayed as string)).toBe(2);
  expect(await held(prefix, moved as string)).toBe(0);
});

/*
 * The one piece of "reaches Redis while its caller waits, or never" that the store cannot keep
 * without reaching inside ioredis: ioredis follows a MOVED reply by sending the command to the
 * slot's new master when the reply arrives, however late, and offers no public way to refuse
 * that send. (The store used to replace `sendCommand` on the client and its nodes for this.)
 * This test pins the outcome down, as README documents it: unknown to the caller, counted once.
 */
test('a MOVED answered after connectWaitMs is still followed by ioredis: counted once, late', async () => {
  const prefix = uniquePrefix();
  const client = await cluster.connect();
  const store = await openedRedisStore({ client, prefix, blockCache: false, connectWaitMs: 50 });
  const [from, to] = [...masters.keys()] as [string, string];
  const [moved] = await pick(prefix, 'late-moved-', 1, (m) => m === from);
  await moveSlot(keySlot(counterKey(prefix, moved as string, rule)), to);
  // the old master is frozen when the call reaches it, and answers MOVED 300 ms later (well
  // under the cluster's node timeout, so the cluster stays up)
  const pid = Number(/process_id:(\d+)/.exec(await node(from).info('server'))?.[1]);
  process.kill(pid, 'SIGSTOP');
  setTimeout(() => process.kill(pid, 'SIGCONT'), 300);
  // the hit is handed over at once, to a connection that is ready; its MOVED comes after
  // connectWaitMs, and ioredis sends it on to the new master then
  const decision = await store.hit(moved as string, [rule]);
  expect(decision.allowed).toBe(true);
  expect(await held(prefix, moved as string)).toBe(1);
  await store.close?.();
});
