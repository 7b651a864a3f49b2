/*
 * How the reference server and the benchmarks reach Redis: the options of their ioredis clients
 * and the `host:port` addresses of a Cluster's nodes (`REDIS_CLUSTER_NODES`). Benchmarks and the
 * test kit read them from the server's build, so each is written once.
 */

/**
 * Options of the application's own ioredis client (its health PING, its wait to connect): a call
 * made while Redis is unreachable fails at once instead of waiting in the offline queue, and a
 * command in flight when the connection dropped is not sent again. The store does not depend on
 * them: it opens its own connection from this client (`duplicate()`) with the options it needs.
 */
export const CLIENT_OPTIONS = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  lazyConnect: true,
} as const;

/** The same for a Cluster: each node's connection is opened with `redisOptions`. */
export const CLUSTER_OPTIONS = {
  lazyConnect: true,
  redisOptions: { autoResendUnfulfilledCommands: false },
} as const;

/** One node of a Redis Cluster. */
export interface NodeAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * `host:port` (an IPv6 host in brackets, `[::1]:7000`), the port a whole number from 1 to 65535;
 * throws "must be host:port ..." naming what it got otherwise.
 */
export function hostPort(value: string): NodeAddress {
  const match = /^(.+):(\d{1,5})$/.exec(value.trim());
  const port = Number(match?.[2]);
  if (!match?.[1] || port < 1 || port > 65_535) {
    throw new Error(`must be host:port with a port from 1 to 65535, got ${JSON.stringify(value)}`);
  }
  return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port };
}

/** `host:port,host:port`, as `REDIS_CLUSTER_NODES` takes it. */
export function clusterNodes(value: string): NodeAddress[] {
  return value.split(',').map((node) => {
    try {
      return hostPort(node);
    } catch {
      throw new Error(
        `must be host:port,host:port with ports from 1 to 65535, got ${JSON.stringify(node)}`,
      );
    }
  });
}
