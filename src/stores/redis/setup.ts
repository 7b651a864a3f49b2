import { afterThisPass, unref } from '../../runtime';
import { warn, WARNING_CODES } from '../../warnings';
import { luaLibrary, luaScript } from './lua-loader';
import type { Endpoint, StoreConnection } from './clients/adapter';
import type { Functions } from './eval-script';
import { compareVersions, parseRedisVersion, type ServerVersion } from './server-version';
import { afterFreeTime, setupWait } from './setup-wait';

/*
 * A store's set-up, made before its hits need it and never inside a hit's deadline: once its
 * connection is ready (on a Cluster, every master's), it reads each server's version and loads
 * the store's Lua there, a Redis Functions library (FUNCTION LOAD REPLACE, Redis 7.0+) or, where
 * there are no functions or the server refuses them, the scripts (SCRIPT LOAD), so that no hit
 * pays a NOSCRIPT round trip or the loading. It runs when the store is made (once its client is
 * opened) and again each time the connection is ready anew (a reconnection, a failover, a node
 * added). `ready()` resolves once it is done.
 *
 * A hit that arrives while a set-up is under way (the store was just made, or its connection is
 * ready anew) waits for it before its own deadline starts (`settingUp`, which the directive's
 * decider asks before each call), as long as it progresses: at most the store's allowance
 * (`setupWaitMs`) from when it began or last made a step (a connection ready, a version read,
 * the Lua loaded); so a fresh store's first burst is decided like any other, on a busy host too. A set-up that cannot
 * progress holds no one: once an attempt failed (until it is tried again), once the allowance
 * has run out, and while a dropped connection is not ready again, hits go on and meet their own
 * deadline (`connectWaitMs`, the directive's `timeoutMs`), failing closed as before. A library
 * or script missing later (FUNCTION FLUSH, SCRIPT FLUSH, a restart) is loaded again by the call
 * that found it missing; until the library is loaded on every master a call is EVALSHA of the
 * script (src/stores/redis/eval-script.ts).
 *
 * The library is used only where calls of it can run: once loaded, one FCALL of its `_ready`
 * function (it touches nothing) must answer, else (an ACL user who may FUNCTION LOAD but not
 * FCALL) the node runs the scripts, which such a user may run, rather than refuse every hit
 * NOPERM. A library of another text under the package's library name (the name holds the SHA-1 of
 * the text, so it is none of ours) is neither replaced nor called: the node runs the scripts,
 * and a process warning (GRAPHQL_RATE_LIMIT_FOREIGN_LIBRARY) says so once.
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
  /**
   * While a set-up is under way and progressing (less than `waitMs` of free time since it
   * began or last made a step, setup-wait.ts): a promise that resolves (never rejects) once it is done, an attempt failed,
   * or it made no step for `waitMs`. Otherwise undefined: a hit need not wait. A store made from a client
   * not opened yet begins its set-up here, on its first hit.
   */
  readonly pending: (waitMs: number) => Promise<void> | undefined;
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
  const { name, source, ready } = luaLibrary();
  let usable = false;
  let stopped = false;
  let done: Promise<readonly ServerVersion[]> | undefined;
  // resolved by the set-up that succeeds: the first one, and again after each new connection
  let signal = deferred<readonly ServerVersion[]>();
  let timer: NodeJS.Timeout | undefined;
  // hits made during a set-up wait for it while it progresses (setup-wait.ts); none wait before
  // the store was opened, nor after a drop until the connection is ready again (an outage)
  const hits = setupWait();
  let begun = false;
  let failed = false;
  /** Whether a set-up attempt is under way (not yet answered). */
  let settingUp = false;
  const begin = (): void => {
    begun = true;
    hits.begin();
  };
  const progress = hits.step;

  /** What `node` holds under the library's name: nothing, this very text, or another. */
  const held = async (node: Endpoint): Promise<'none' | 'ours' | 'foreign'> => {
    const found = await node.send(['FUNCTION', 'LIST', 'LIBRARYNAME', name, 'WITHCODE']);
    // LIBRARYNAME is a pattern: only the library of exactly this name is ours to judge
    const library = (Array.isArray(found) ? found : [])
      .map(fields)
      .find((f) => f.get('library_name') === name);
    if (library === undefined) return 'none';
    return library.get('library_code') === source ? 'ours' : 'foreign';
  };

  // never REPLACE: a library of this name that is not this text is someone else's
  const load = async (node: Endpoint): Promise<void> => {
    try {
      await node.send(['FUNCTION', 'LOAD', source]);
    } catch (error) {
      // another process loaded it first, or someone else's library has the name
      const holds = await held(node).catch(() => 'none' as const);
      if (holds === 'ours') return;
      if (holds === 'foreign') foreign(node);
      throw error;
    }
  };

  /** Whether this user may call the library's functions on `node` (an ACL may deny FCALL). */
  const callable = (node: Endpoint): Promise<boolean> =>
    node.send(['FCALL', ready, 0]).then(
      (answer) => Number(answer) === 1,
      () => false,
    );

  const once = async (): Promise<readonly ServerVersion[]> => {
    await readyEndpoint(connection);
    progress();
    const nodes = connection.masters();
    if (nodes.length === 0) throw new Error('no Cluster node known yet');
    const servers = await Promise.all(
      nodes.map(async (node) => {
        await readyEndpoint(node);
        progress();
        const version = parseRedisVersion(String(await node.send(['INFO', 'server'])));
        if (!version) throw new Error(`INFO server of ${node.address} has no redis_version`);
        progress();
        let functions = compareVersions(version, FUNCTIONS) >= 0;
        // loading compiles the library, about 2 ms of the server's time: only where it is missing
        if (functions) {
          functions = await held(node)
            .then(async (holds) => {
              if (holds === 'foreign') return foreign(node);
              if (holds === 'none') await load(node);
              return callable(node);
            })
            .catch(() => false);
          progress();
        }
        if (!functions) {
          await node.send(['SCRIPT', 'LOAD', luaScript('hit')]);
          await node.send(['SCRIPT', 'LOAD', luaScript('refund')]);
          await node.send(['SCRIPT', 'LOAD', luaScript('lease')]);
          await node.send(['SCRIPT', 'LOAD', luaScript('operation')]);
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
    failed = false;
    settingUp = true;
    void attempt
      .finally(() => {
        if (done === attempt) settingUp = false;
      })
      .catch(() => undefined);
    attempt.then(
      (found) => {
        hits.end();
        signal.resolve(found);
      },
      () => {
        if (done === attempt) done = undefined;
        failed = true;
        hits.release();
        if (stopped || closed()) return;
        timer = setTimeout(() => void run().catch(() => undefined), RETRY_MS);
        unref(timer);
      },
    );
    return attempt;
  };

  // anew after each time the connection is ready again (the first time included): once it was
  // ready, it is watched until it is not, then listened to again (a client may call a listener
  // of a connection already ready at once)
  const listen = (): void => {
    if (stopped || closed()) return;
    connection.onceReady(() => {
      if (stopped) return;
      // a set-up still under way (begun by `ready()` or a hit before the connection was) goes
      // on now that it is: a second one beside it would load and probe everything twice
      if (!settingUp) {
        done = undefined;
        usable = false;
        if (signal.settled) signal = deferred();
      }
      begin();
      run().catch(() => undefined);
      afterThisPass(watchForDrop);
    });
  };
  const watchForDrop = (): void => {
    const watch = setInterval(() => {
      if (stopped || closed()) clearInterval(watch);
      else if (!connection.isReady()) {
        clearInterval(watch);
        hits.end();
        listen();
      }
    }, WATCH_MS);
    unref(watch);
  };
  // a client the application opened is being set up from now; one it has not is, from the
  // store's first hit (or `ready()`)
  if (connection.isReady() || connection.source() !== 'unopened') begin();
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
    pending: (waitMs) => {
      if (signal.settled || stopped || closed() || failed) return undefined;
      if (!begun) {
        begin();
        connection.open();
      }
      return hits.wait(waitMs);
    },
    versions: () => done ?? signal.promise,
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      hits.end();
    },
  };
}

/** Whether the warning of a foreign library was given (once per process). */
let warnedForeign = false;

/** Warns, once, that `node` holds another library under the package's library name. */
function foreign(node: Endpoint): false {
  if (!warnedForeign) {
    warnedForeign = true;
    warn(
      `Redis at ${node.address} holds a Functions library named ${luaLibrary().name} whose code ` +
        "is not this package's: it is neither replaced nor called, and the rate limit store runs " +
        'its scripts there (EVALSHA) instead. Delete it (FUNCTION DELETE) to use Functions.',
      WARNING_CODES.FOREIGN_LIBRARY,
    );
  }
  return false;
}

/**
 * One library of a FUNCTION LIST reply as field name to value: a flat list of pairs (RESP2) or
 * a map (RESP3), as the client gives it.
 */
function fields(entry: unknown): Map<string, unknown> {
  if (entry instanceof Map) return new Map([...entry].map(([k, v]) => [String(k), v]));
  if (Array.isArray(entry)) {
    const out = new Map<string, unknown>();
    for (let i = 0; i + 1 < entry.length; i += 2) out.set(String(entry[i]), entry[i + 1]);
    return out;
  }
  if (typeof entry === 'object' && entry !== null) return new Map(Object.entries(entry));
  return new Map();
}

/** A set-up waits this long for a connection, then fails and is tried again. */
const CONNECT_MS = 10_000;

/** Resolves once `target` may be sent a command, opening it if no one has. */
function readyEndpoint(target: Pick<Endpoint, 'isReady' | 'open' | 'onceReady'>): Promise<void> {
  if (target.isReady()) return Promise.resolve();
  target.open();
  return new Promise((resolve, reject) => {
    // in the event loop's free time: a stalled process has not read whether it connected
    const stopTimer = afterFreeTime(CONNECT_MS, () => {
      cancel();
      reject(new Error(`Redis was not ready within ${CONNECT_MS} ms`));
    });
    const cancel = target.onceReady(() => {
      stopTimer();
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
