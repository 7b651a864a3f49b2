import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { Cluster, Redis } from 'ioredis';

import { freePort, waitFor } from './processes';
import { startRedisServer, type RedisProcess } from './redis';

const run = promisify(execFile);

/** A Redis Cluster the tests may use: from REDIS_CLUSTER_NODES, or three local masters. */
export interface TestCluster {
  readonly nodes: readonly { host: string; port: number }[];
  /** `host:port,host:port,...`, as the reference server's REDIS_CLUSTER_NODES takes it. */
  readonly spec: string;
  connect(): Promise<Cluster>;
  stop(): Promise<void>;
}

function parseNodes(spec: string): { host: string; port: number }[] {
  return spec.split(',').map((n) => {
    const [host, port] = n.trim().split(':');
    return { host: host || '127.0.0.1', port: Number(port) };
  });
}

/**
 * A cluster for one test file: REDIS_CLUSTER_NODES when set, else three `redis-server
 * --cluster-enabled yes` masters on free ports joined by `redis-cli --cluster create`, in a
 * throwaway folder; `stop` ends them by pid and removes the folder.
 */
export async function startCluster(): Promise<TestCluster> {
  const clients: Cluster[] = [];
  const connect = async (): Promise<Cluster> => {
    const cluster = new Cluster(nodes, { lazyConnect: true });
    clients.push(cluster);
    await cluster.connect();
    return cluster;
  };
  const closeClients = async (): Promise<void> => {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  };

  const given = process.env.REDIS_CLUSTER_NODES;
  let nodes: { host: string; port: number }[];
  if (given) {
    nodes = parseNodes(given);
    return { nodes, spec: given, connect, stop: closeClients };
  }

  const dir = mkdtempSync(join(tmpdir(), 'garl-cluster-'));
  const ports = await Promise.all([freePort(), freePort(), freePort()]);
  const servers: RedisProcess[] = [];
  try {
    servers.push(
      ...(await Promise.all(
        ports.map((port) =>
          startRedisServer(port, [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            '2000',
            '--dir',
            dir,
          ]),
        ),
      )),
    );
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { timeout: 20_000 },
    );
    await Promise.all(
      ports.map(async (port) => {
        const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
        try {
          await probe.connect();
          await waitFor(`cluster_state:ok on ${port}`, async () =>
            String(await probe.cluster('INFO')).includes('cluster_state:ok'),
          );
        } finally {
          probe.disconnect();
        }
      }),
    );
  } catch (error) {
    await Promise.all(servers.map((c) => c.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
  return {
    nodes,
    spec: nodes.map((n) => `${n.host}:${n.port}`).join(','),
    connect,
    stop: async () => {
      await closeClients();
      await Promise.all(servers.map((c) => c.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
