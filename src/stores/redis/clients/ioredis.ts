import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';

import type { Endpoint, StoreConnection } from './adapter';

/*
 * ioredis (5, 6) and iovalkey, the Valkey project's fork of it, which keeps its API: a `Redis` or
 * a `Cluster`. The store's connection is the client's `duplicate()` (same address, `db`,
 * credentials, `tls`; a Cluster's nodes, `redisOptions` and `natMap`), opened with the options
 * that keep the client from queueing or resending: no offline queue, no resend of in-flight
 * commands after a reconnection, no retry after a failover, a CLUSTERDOWN or a TRYAGAIN, no
 * auto-pipelining, no key prefix (the store names its keys itself). The client given is never
 * changed. The types are ioredis', for reading only: iovalkey's have the same shape.
 */

const SINGLE: RedisOptions = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  enableAutoPipelining: false,
  keyPrefix: '',
};

const CLUSTER: ClusterOptions = {
  enableOfflineQueue: false,
  enableAutoPipelining: false,
  retryDelayOnFailover: 0,
  retryDelayOnClusterDown: 0,
  retryDelayOnTryAgain: 0,
  keyPrefix: '',
};

/** What each node of the store's Cluster is opened with, on top of the client's `redisOptions`. */
const NODE: RedisOptions = { autoResendUnfulfilledCommands: false, keyPrefix: '' };

/** Whether `value` is an ioredis or iovalkey `Redis` or `Cluster`, by what it has. */
export function isIoredis(value: object): boolean {
  const c = value as Partial<Redis>;
  return (
    typeof c.defineCommand === 'function' &&
    typeof c.duplicate === 'function' &&
    typeof c.call === 'function' &&
    typeof c.status === 'string' &&
    typeof c.isCluster === 'boolean'
  );
}

const ignore = (): void => undefined;

/**
 * Where the application's client stands. Closed: its status is `end`, or it was disconnected
 * while reconnecting (ioredis then clears its reconnection and stays `reconnecting` for ever;
 * `manuallyClosing` is how it knows, read here though ioredis does not publish it).
 */
function sourceOf(given: Redis | Cluster): 'unopened' | 'open' | 'closed' {
  const { status } = given;
  if (status === 'wait') return 'unopened';
  const closing = (given as unknown as { manuallyClosing?: boolean }).manuallyClosing === true;
  return status === 'end' || (closing && status !== 'ready') ? 'closed' : 'open';
}

const addressOf = (node: Redis): string =>
  `${node.options.host ?? 'localhost'}:${node.options.port ?? 6379}`;

function endpointOf(node: Redis): Endpoint {
  return {
    address: addressOf(node),
    isReady: () => node.status === 'ready',
    open: () => {
      if (node.status === 'wait') node.connect().catch(ignore);
    },
    onceReady: (listener) => {
      node.once('ready', listener);
      return () => node.off('ready', listener);
    },
    send: ([name, ...args]) => node.call(String(name), ...args),
  };
}

/** The store's own connection from an ioredis or iovalkey client. */
export function ioredisConnection(source: object): StoreConnection {
  const given = source as Redis | Cluster;
  const own: Redis | Cluster = given.isCluster
    ? (given as Cluster).duplicate([], {
        ...CLUSTER,
        lazyConnect: true,
        // merged here: not every ioredis merges the `redisOptions` given to `duplicate`
        redisOptions: { ...(given as Cluster).options.redisOptions, ...NODE },
      })
    : (given as Redis).duplicate({ ...SINGLE, lazyConnect: true });
  // errors reach the store through its commands; unheard, ioredis would print each one
  own.on('error', ignore);
  const cluster = own.isCluster ? (own as Cluster) : undefined;
  if (cluster) {
    // ioredis opens a node's connection on its first command: the store opens its masters' once
    // the Cluster is ready, so that the first hits for each need not wait. Not before: the
    // Cluster's ready check goes to a node that is either ready or not yet opened.
    const openNode = (node: Redis): void => {
      if (!node.options.readOnly && node.status === 'wait') node.connect().catch(ignore);
    };
    cluster.on('ready', () => cluster.nodes('master').forEach(openNode));
    cluster.on('+node', (node: Redis) => {
      if (cluster.status === 'ready') openNode(node);
    });
  }
  const self = cluster ? undefined : endpointOf(own as Redis);
  const endpoints = new WeakMap<Redis, Endpoint>();
  const endpoint = (node: Redis): Endpoint => {
    let known = endpoints.get(node);
    if (!known) endpoints.set(node, (known = endpointOf(node)));
    return known;
  };
  let closed = false;
  return {
    family: 'ioredis',
    isCluster: cluster !== undefined,
    isReady: () => own.status === 'ready',
    status: () => own.status,
    open: () => {
      if (own.status === 'wait') own.connect().catch(ignore);
    },
    onceReady: (listener) => {
      own.once('ready', listener);
      return () => own.off('ready', listener);
    },
    send: ([name, ...args]) => own.call(String(name), ...args),
    masterOf: (slot) => cluster?.slots[slot]?.[0],
    master: (address) => {
      const node = cluster?.nodes('master').find((n) => addressOf(n) === address);
      return node && endpoint(node);
    },
    masters: () => (cluster ? cluster.nodes('master').map(endpoint) : [self as Endpoint]),
    source: () => sourceOf(given),
    close: async () => {
      if (closed) return;
      closed = true;
      if (own.status === 'ready') await own.quit().catch(() => own.disconnect());
      else own.disconnect();
    },
  };
}
