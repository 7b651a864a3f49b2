import { unref } from '../../runtime';
import { openStoreConnection } from './clients';
import type { Endpoint, StoreConnection } from './clients/adapter';

/*
 * A hit must reach Redis while its caller still waits for it, or never: a hit that sat in a
 * queue of ioredis and was sent after the caller had been answered (refused by the timeout, say)
 * would be counted all the same, and take a unit from a request that never ran.
 *
 * So the store never hands a hit to a connection that is not ready: it opens a connection of its
 * own from the client it is given, by the adapter of the client's family (src/stores/redis/
 * clients/: ioredis and iovalkey, node-redis), which duplicates the client with the options that
 * keep it from queueing or resending: no offline queue, no resend of in-flight commands after a
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

/** How often the store looks whether the client it was made from has been closed, in ms. */
const CLIENT_WATCH_MS = 250;

/** The store's own connection, made from the client it was given. */
export interface OwnConnection {
  readonly connection: StoreConnection;
  /** Lets the connection go (closed once no store uses it); the store's hits fail from then on. */
  close(): Promise<void>;
  /** True once `close` was called, or the client the connection was made from was closed. */
  readonly closed: boolean;
  /** True once the connection itself was closed (every store using it closed, or the client). */
  readonly ended: boolean;
}

/** The connection that the stores made from one client share, and how many of them are open. */
interface Shared {
  readonly connection: StoreConnection;
  users: number;
  ended: boolean;
  end(): Promise<void>;
}

/** By the client it was made from: stores made from one client share one connection of theirs. */
const shared = new WeakMap<object, Shared>();

/**
 * The store's own connection, made from `client` (a duplicate: `client` is only read) and shared
 * with the other stores made from it. It is opened now, or, when `client` has not connected yet
 * (`lazyConnect`, a node-redis client not yet `connect()`ed), once `client` does or on the first
 * hit. It is closed once every store that uses it was closed, or once `client` has been closed,
 * so that closing the client the application gave ends the stores' connection too. Throws a
 * RateLimitConfigError when `client` is of no family the store knows.
 */
export function openConnection(client: object): OwnConnection {
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
    get ended() {
      return used.ended;
    },
    async close() {
      if (closed) return;
      closed = true;
      used.users -= 1;
      if (used.users === 0) await used.end();
    },
  };
}

function share(client: object): Shared {
  const connection = openStoreConnection(client);
  const line: Shared = {
    connection,
    users: 0,
    ended: false,
    async end() {
      if (line.ended) return;
      line.ended = true;
      clearInterval(watch);
      await connection.close();
    },
  };
  const follow = (): void => {
    const source = connection.source();
    if (source === 'closed') void line.end();
    else if (source === 'open') connection.open();
  };
  const watch = setInterval(follow, CLIENT_WATCH_MS);
  unref(watch);
  follow();
  return line;
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
    if (connection.isReady()) {
      unreadySince = undefined;
      return undefined;
    }
    const now = performance.now();
    unreadySince ??= now;
    if (now - unreadySince <= connectWaitMs) return undefined;
    const what = connection.isCluster ? 'Redis Cluster' : 'Redis';
    return (
      `${what} has not been ready for ${Math.round(now - unreadySince)} ms ` +
      `(status: ${connection.status()}); the hits are not queued`
    );
  };
}

/**
 * Resolves once `connection` is ready, opening it if it waits to be; rejects when it is not
 * ready within `waitMs`. For the store's rare commands (a reset, the version check): hits wait in
 * the batch queue.
 */
export function readyWithin(
  connection: Pick<StoreConnection | Endpoint, 'isReady' | 'open' | 'onceReady'>,
  waitMs: number,
): Promise<void> {
  if (connection.isReady()) return Promise.resolve();
  connection.open();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cancel();
      reject(new Error(`Redis was not ready within connectWaitMs (${waitMs} ms)`));
    }, waitMs);
    const cancel = connection.onceReady(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
