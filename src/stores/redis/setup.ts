import { luaLibrary, luaScript } from '../../lua';
import { afterThisPass, unref } from '../../runtime';
import type { Endpoint, StoreConnection } from './clients/adapter';
import type { Functions } from './eval-script';
import { compareVersions, parseRedisVersion, type ServerVersion } from './server-version';

/*
 * A store's set-up, made before its hits need it and never inside a hit's deadline: once its
 * connection is ready (on a Cluster, every master's), it reads each server's version and loads
 * the store's Lua there, a Redis Functions library (FUNCTION LOAD REPLACE, Redis 7.0+) or, where
 * there are no functions or the server refuses them, the scripts (SCRIPT LOAD), so that no hit
 * pays a NOSCRIPT round trip or the loading. It runs when the store is made (once its client is
 * opened) and again each time the connection is ready anew (a reconnection, a failover, a node
 * added). `ready()` resolves once it is done.
 *
 * Hits never wait for it: until the library is loaded on every master a call is EVALSHA of the
 * script (src/stores/redis/eval-script.ts), and a library or script missing later (FUNCTION
 * FLUSH, SCRIPT FLUSH, a restart) is loaded again by the call that found it missing.
 */

/** Functions are Redis 7.0+. */
const FUNCTIONS: readonly [number, number, number] = [7, 0, 0];

/** How often a ready connection is looked at, to set it up anew once it was not ready. */
const WATCH_MS = 250;

/** A failed set-up is tried again after this long. */
const RETRY_MS = 1_000;

/** The store's set-up over its connection. */
export interface Setup extends Functions {
  /** Resolves once the store can decide: connected, versions read, its Lua loaded everywhere. */
  readonly ready: () => Promise<void>;
  /** The version of every master, as the last set-up read them (waits for the first). */
  readonly versions: () => Promise<readonly ServerVersion[]>;
  /** Stops setting up (the store was closed). */
  readonly stop: () => void;
}

/** Each connection's set-up, shared by the stores made from one client (which share it). */
const setups = new WeakMap<StoreConnection, Setup>();

/**
 * The set-up of `connection`, made now (once it is opened) and again after each time it is ready
 * anew, until `ended` (the connection was closed); one per connection, whatever the stores on it.
 */
export function setUp(connection: StoreConnection, ended: () => boolean): Setup {
  let setup = setups.get(connection);
  if (!setup) setups.set(connection, (setup = makeSetup(connection, ended)));
  return setup;
}

function makeSetup(connection: StoreConnection, closed: () => boolean): Setup {
  const { name, source } = luaLibrary();
  let usable = false;
  let stopped = false;
  let done: Promise<readonly ServerVersion[]> | undefined;
  // resolved by the set-up that succeeds: the first one, and again after each new connection
  let signal = deferred<readonly ServerVersion[]>();
  let timer: NodeJS.Timeout | undefined;

  const load = async (node: Endpoint): Promise<void> => {
    await node.send(['FUNCTION', 'LOAD', 'REPLACE', source]);
  };

  /** Whether `node` has this version of the library already (another process loaded it). */
  const loaded = async (node: Endpoint): Promise<boolean> => {
    const found = await node.send(['FUNCTION', 'LIST', 'LIBRARYNAME', name]);
    return Array.isArray(found) && found.length > 0;
  };

  const once = async (): Promise<readonly ServerVersion[]> => {
    await readyEndpoint(connection);
    const nodes = connection.masters();
    if (nodes.length === 0) throw new Error('no Cluster node known yet');
    const servers = await Promise.all(
      nodes.map(async (node) => {
        await readyEndpoint(node);
        const version = parseRedisVersion(String(await node.send(['INFO', 'server'])));
        if (!version) throw new Error(`INFO server of ${node.address} has no redis_version`);
        let functions = compareVersions(version, FUNCTIONS) >= 0;
        // loading compiles the library, about 2 ms of the server's time: only where it is missing
        if (functions) {
          functions = await loaded(node)
            .then((has) => has || load(node).then(() => true))
            .catch(() => false);
        }
        if (!functions) {
          await node.send(['SCRIPT', 'LOAD', luaScript('hit')]);
          await node.send(['SCRIPT', 'LOAD', luaScript('refund')]);
          await node.send(['SCRIPT', 'LOAD', luaScript('lease')]);
        }
        return { server: node.address, version, functions };
      }),
    );
    usable = servers.every((s) => s.functions);
    return servers.map(({ server, version }) => ({ server, version }));
  };

  const run = (): Promise<readonly ServerVersion[]> => {
    if (done) return done;
    const attempt = once();
    done = attempt;
    attempt.then(signal.resolve, () => {
      if (done === attempt) done = undefined;
      if (stopped || closed()) return;
      timer = setTimeout(() => void run().catch(() => undefined), RETRY_MS);
      unref(timer);
    });
    return attempt;
  };

  // anew after each time the connection is ready again (the first time included): once it was
  // ready, it is watched until it is not, then listened to again (a client may call a listener
  // of a connection already ready at once)
  const listen = (): void => {
    if (stopped || closed()) return;
    connection.onceReady(() => {
      if (stopped) return;
      done = undefined;
      usable = false;
      if (signal.settled) signal = deferred();
      run().catch(() => undefined);
      afterThisPass(watchForDrop);
    });
  };
  const watchForDrop = (): void => {
    const watch = setInterval(() => {
      if (stopped || closed()) clearInterval(watch);
      else if (!connection.isReady()) {
        clearInterval(watch);
        listen();
      }
    }, WATCH_MS);
    unref(watch);
  };
  if (connection.isReady()) {
    run().catch(() => undefined);
    watchForDrop();
  } else {
    listen();
  }

  return {
    usable: () => usable,
    load,
    ready: async () => {
      if (closed()) throw new Error('The rate limit store is closed');
      connection.open();
      // a set-up that failed and waits to be tried again is tried now
      if (!done && !signal.settled && !stopped) run().catch(() => undefined);
      await signal.promise;
    },
    versions: () => done ?? signal.promise,
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** A set-up waits this long for a connection, then fails and is tried again. */
const CONNECT_MS = 10_000;

/** Resolves once `target` may be sent a command, opening it if no one has. */
function readyEndpoint(target: Pick<Endpoint, 'isReady' | 'open' | 'onceReady'>): Promise<void> {
  if (target.isReady()) return Promise.resolve();
  target.open();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cancel();
      reject(new Error(`Redis was not ready within ${CONNECT_MS} ms`));
    }, CONNECT_MS);
    unref(timer);
    const cancel = target.onceReady(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

interface Deferred<T> {
  readonly promise: Promise<T>;
  readonly resolve: (value: T) => void;
  readonly settled: boolean;
}

function deferred<T>(): Deferred<T> {
  let settle!: (value: T) => void;
  let settled = false;
  const promise = new Promise<T>((resolve) => (settle = resolve));
  return {
    promise,
    resolve: (value) => {
      settled = true;
      settle(value);
    },
    get settled() {
      return settled;
    },
  };
}
