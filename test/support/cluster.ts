import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';

import { startLocalCluster } from '../../kit/redis-server';
import { clusterNodes, hostPort } from '../../server/src/redis-client';

/** A Redis Cluster the tests may use: from REDIS_CLUSTER_NODES, or three local masters. */
export interface TestCluster {
  readonly nodes: readonly { host: string; port: number }[];
  /** `host:port,host:port,...`, as the reference server's REDIS_CLUSTER_NODES takes it. */
  readonly spec: string;
  connect(): Promise<Cluster>;
  /**
   * `host:port` of the master serving `key`'s slot. The slots are read once: the tests move
   * none.
   */
  masterOf(key: string): Promise<string>;
  /** A plain connection to one node, `host:port` (closed on `stop`). */
  node(address: string): Promise<Redis>;
  stop(): Promise<void>;
}

/**
 * A cluster for one test file: REDIS_CLUSTER_NODES when set, else three local masters started
 * by the kit (ended by pid, their folder removed, on `stop`).
 */
export async function startCluster(): Promise<TestCluster> {
  const given = process.env.REDIS_CLUSTER_NODES;
  const local = given ? undefined : await startLocalCluster();
  const nodes = local?.nodes ?? clusterNodes(given ?? '');
  const clients: (Cluster | Redis)[] = [];
  const connect = async (): Promise<Cluster> => {
    const cluster = new Cluster(nodes, { lazyConnect: true });
    clients.push(cluster);
    await cluster.connect();
    return cluster;
  };
  let slots: ReturnType<Cluster['cluster']> | undefined;
  return {
    nodes,
    spec: given ?? nodes.map((n) => `${n.host}:${n.port}`).join(','),
    connect,
    masterOf: async (key) => {
      slots ??= connect().then((c) => c.cluster('SLOTS'));
      const slot = calculateSlot(key);
      const range = (await slots).find(([from, to]) => slot >= from && slot <= to);
      const master = range?.[2];
      if (!master) throw new Error(`no master serves slot ${slot}`);
      return `${master[0]}:${master[1]}`;
    },
    node: async (address) => {
      const { host, port } = hostPort(address);
      const client = new Redis(port, host, { lazyConnect: true });
      clients.push(client);
      await client.connect();
      return client;
    },
    stop: async () => {
      await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
      await local?.stop();
    },
  };
}
