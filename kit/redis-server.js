// @ts-check
'use strict';

const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const { Redis } = require('ioredis');

const { freeClusterPorts, freePort, startProcess, waitFor } = require('./processes');

/**
 * A private `redis-server` process.
 * @typedef {object} RedisProcess
 * @property {string} url
 * @property {string} host
 * @property {number} port
 * @property {import('./processes').Child} child
 * @property {() => Promise<void>} stop
 */

/**
 * Starts `redis-server` from PATH on 127.0.0.1, persisting nothing; resolves once it accepts
 * connections.
 * @param {number} [port] @default a free one
 * @param {{ args?: readonly string[], dir?: string }} [options] extra server arguments
 *   (@default none) and its working folder (@default the system's temp folder)
 * @returns {Promise<RedisProcess>}
 */
async function startRedisServer(port, { args = [], dir = tmpdir() } = {}) {
  const p = port ?? (await freePort());
  const child = startProcess('redis-server', [
    '--port',
    String(p),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--protected-mode',
    'no',
    ...args,
  ]);
  await child.waitForOutput(/Ready to accept connections/);
  return {
    url: `redis://127.0.0.1:${p}`,
    host: '127.0.0.1',
    port: p,
    child,
    stop: () => child.stop(),
  };
}

/**
 * A Redis Cluster of local masters.
 * @typedef {object} LocalCluster
 * @property {{ host: string, port: number }[]} nodes
 * @property {() => Promise<void>} stop ends every node by pid and removes its folder
 */

/**
 * Starts `masters` `redis-server --cluster-enabled yes` on free ports (each with a free bus
 * port), joins them with `redis-cli --cluster create` and waits for `cluster_state:ok` on each.
 * Node files go to a throwaway folder.
 * @param {{ masters?: number, nodeTimeoutMs?: number }} [options] @default 3 masters,
 *   cluster-node-timeout 2000 ms
 * @returns {Promise<LocalCluster>}
 */
async function startLocalCluster({ masters = 3, nodeTimeoutMs = 2_000 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'garl-cluster-'));
  const ports = await freeClusterPorts(masters);
  /** @type {RedisProcess[]} */
  const servers = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      const args = ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`];
      args.push('--cluster-node-timeout', String(nodeTimeoutMs));
      servers.push(await startRedisServer(port, { args, dir }));
    }
    const create = startProcess('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    const timer = setTimeout(() => void create.stop(), 20_000);
    const { code } = await create.exited;
    clearTimeout(timer);
    await create.stop();
    if (code !== 0) throw new Error(`redis-cli --cluster create failed:\n${create.output()}`);
    await Promise.all(
      ports.map(async (port) => {
        const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
        try {
          await node.connect();
          await waitFor(`cluster_state:ok on ${port}`, async () =>
            String(await node.cluster('INFO')).includes('cluster_state:ok'),
          );
        } finally {
          node.disconnect();
        }
      }),
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: ports.map((port) => ({ host: '127.0.0.1', port })), stop };
}

/**
 * Every key under `prefix` on one node, found with SCAN (never KEYS on a shared Redis).
 * @param {import('ioredis').Redis} client
 * @param {string} prefix
 * @returns {Promise<string[]>}
 */
async function keysUnder(client, prefix) {
  /** @type {string[]} */
  const found = [];
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  return found;
}

/**
 * Deletes every key under `prefix`, on each master of a cluster; never FLUSHALL, as the Redis
 * may not be ours.
 * @param {import('ioredis').Redis | import('ioredis').Cluster} client
 * @param {string} prefix
 * @returns {Promise<void>}
 */
async function deleteKeysUnder(client, prefix) {
  const nodes = client.isCluster
    ? /** @type {import('ioredis').Cluster} */ (client).nodes('master')
    : [/** @type {import('ioredis').Redis} */ (client)];
  for (const node of nodes) {
    const keys = await keysUnder(node, prefix);
    // one key per UNLINK: on a cluster node the keys found may sit in different slots
    for (let i = 0; i < keys.length; i += 500) {
      await Promise.all(keys.slice(i, i + 500).map((key) => node.unlink(key)));
    }
  }
}

module.exports = { deleteKeysUnder, keysUnder, startLocalCluster, startRedisServer };
