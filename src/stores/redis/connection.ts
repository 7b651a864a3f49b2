import { performance } from 'node:perf_hooks';

import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';

/*
 * A hit must reach Redis while its caller still waits for it, or never: a hit that sat in a
 * queue of ioredis and was sent after the caller had been answered (refused by the timeout, say)
 * would be counted all the same, and take a unit from a request that never ran.
 *
 * So the store never hands a hit to a connection that is not ready: it opens a connection of its
 * own from the client it is given (`duplicate()`, which keeps the client's address, `db`,
 * credentials, `tls`, a Cluster's `redisOptions` and `natMap`), with the options that keep
 * ioredis from queueing or resending: no offline queue, no resend of in-flight commands after a
 * reconnection, no retry after a failover or a CLUSTERDOWN. A hit for a connection being opened
 * (the store's, or that of a Cluster master) waits in the store's own queue, at most
 * `connectWaitMs` from when it was made, and is handed over once the connection is ready, or
 * fails, unsent. Once the store's connection has not been ready for longer than
 * `connectWaitMs`, hits fail at once rather than wait (see `connectionGate`). The client given
 * is never changed: not its options, not its methods, and no command is defined on it.
 *
 * What stays outside the store's reach: a hit written to the socket of a connection that then
 * hangs cannot be called back, and Redis may still count it after its caller gave up; and on a
 * Cluster, ioredis follows a MOVED or ASK reply (and the script's NOSCRIPT reply, on either
 * client) by sending the command again when the reply arrives, however late. Both outcomes are
 * unknown, and documented as such.
 */

/** What the store's own connection is opened with, on top of the client's options. */
const SINGLE: RedisOptions = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  enableAutoPipelining: false,
};

const CLUSTER: ClusterOptions = {
  enableOfflineQueue: false,
  enableAutoPipelining: false,
  retryDelayOnFailover: 0,
  retryDelayOnClusterDown: 0,
  retryDelayOnTryAgain: 0,
};

/** What each node of the store's Cluster is opened with, on top of the client's `redisOptions`. */
const NODE: RedisOptions = { autoResendUnfulfilledCommands: false };

/** How often the store looks whether the client it was made from has been closed, in ms. */
const CLIENT_WATCH_MS = 250;

/** A connection of the store: its own client, or a master of its own Cluster. */
export type Connection = Redis | Cluster;

/** The store's own connection, made from the client it was given. */
export interface OwnConnection {
  readonly connection: Connection;
  /** Lets the connection go (closed once no store uses it); the store's hits fail from then on. */
  close(): Promise<void>;
  /** True once `close` was called, or the client the connection was made from was closed. */
  readonly closed: boolean;
}

/** The connection that the stores made from one client share, and how many of them are open. */
interface Shared {
  readonly connection: Connection;
  users: number;
  ended: boolean;
  end(): Promise<void>;
}

/** By the client it was made from: stores made from one client share one connection of theirs. */
const shared = new WeakMap<Connection, Shared>();

/**
 * The store's own connection, made from `client` (a duplicate: `client` is only read) and shared
 * with the other stores made from it. It is opened now, or, when `client` has not connected yet
 * (`lazyConnect`), once `client` does or on the first hit. It is closed once every store that
 * uses it was closed, or once `client` has been closed (its status `end`), so that closing the
 * client the application gave ends the stores' connection too.
 */
export function openConnection(client: Connection): OwnConnection {
  let line = shared.get(client);
  if (!line || line.ended) {
    line = share(client);
    shared.set(client, line);
  }
  const used = line;
  used.users += 1;
  let closed = false;
  return {
    connection: used.connection,
    get closed() {
      return closed || used.ended;
    },
    async close() {
      if (closed) return;
      closed = true;
      used.users -= 1;
      if (used.users === 0) await used.end();
    },
  };
}

function share(client: Connection): Shared {
  const connection = client.isCluster
    ? (client as Cluster).duplicate([], {
        ...CLUSTER,
        lazyConnect: true,
        // merged here: not every ioredis merges the `redisOptions` given to `duplicate`
        redisOptions: { ...(client as Cluster).options.redisOptions, ...NODE },
      })
    : (client as Redis).duplicate({ ...SINGLE, lazyConnect: true });
  // errors reach the store through its commands; unheard, ioredis would print each one
  connection.on('error', () => undefined);
  if (connection.isCluster) {
    // ioredis opens a node's connection on its first command: the store opens its masters' once
    // the Cluster is ready, so that the first hits for each need not wait. Not before: the
    // Cluster's ready check goes to a node that is either ready or not yet opened.
    const cluster = connection as Cluster;
    cluster.on('ready', () => cluster.nodes('master').forEach(openLazily));
    cluster.on('+node', (node: Redis) => {
      if (cluster.status === 'ready' && !node.options.readOnly) openLazily(node);
    });
  }
  const line: Shared = {
    connection,
    users: 0,
    ended: false,
    async end() {
      if (line.ended) return;
      line.ended = true;
      clearInterval(watch);
      if (connection.status === 'ready') {
        await connection.quit().catch(() => connection.disconnect());
      } else {
        connection.disconnect();
      }
    },
  };
  const follow = (): void => {
    if (client.status === 'end') void line.end();
    else if (client.status !== 'wait') openLazily(connection);
  };
  const watch = setInterval(follow, CLIENT_WATCH_MS);
  watch.unref();
  follow();
  return line;
}

/** Opens `connection` if it waits for its first command to do so (a lazily connected client). */
export function openLazily(connection: Connection): void {
  if (connection.status === 'wait') connection.connect().catch(() => undefined);
}

/**
 * A check for a store's batches: why its hits must fail at once, if they must. A connection that
 * is not ready is given `connectWaitMs`, from when a batch first found it so, to become ready;
 * meanwhile hits wait for it, and after it they fail at once, so that an outage never fills a
 * queue.
 */
export function connectionGate(
  own: OwnConnection,
  connectWaitMs: number,
): () => string | undefined {
  const { connection } = own;
  let unreadySince: number | undefined;
  return () => {
    if (own.closed) return 'The rate limit store is closed';
    if (connection.status === 'ready') {
      unreadySince = undefined;
      return undefined;
    }
    const now = performance.now();
    unreadySince ??= now;
    if (now - unreadySince <= connectWaitMs) return undefined;
    const what = connection.isCluster ? 'Redis Cluster' : 'Redis';
    return (
      `${what} has not been ready for ${Math.round(now - unreadySince)} ms ` +
      `(status: ${connection.status}); the hits are not queued`
    );
  };
}

/**
 * Resolves once `connection` is ready, opening it if it waits to be; rejects when it is not
 * ready within `waitMs`. For the store's rare commands (a reset): hits wait in the batch queue.
 */
export function readyWithin(connection: Connection, waitMs: number): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  openLazily(connection);
  return new Promise((resolve, reject) => {
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      connection.off('ready', onReady);
      reject(new Error(`Redis was not ready within connectWaitMs (${waitMs} ms)`));
    }, waitMs);
    connection.once('ready', onReady);
  });
}
