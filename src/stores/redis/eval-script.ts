import { luaLibrary, luaScript, luaSha } from './lua-loader';
import type { Command, Endpoint, StoreConnection } from './clients/adapter';
import { keySlot } from './cluster-slots';

/*
 * How the store runs its Lua on any client. Where the server has Redis Functions (Redis 7.0+)
 * and the store could load its library (src/stores/redis/setup.ts), a call is FCALL of the
 * library's function: Redis runs only the call, not the whole script. Elsewhere (Redis 6, a
 * server that refuses FUNCTION, or before set-up is done) it is EVALSHA, and EVAL only after
 * Redis answered NOSCRIPT (a restarted server, SCRIPT FLUSH, a failover, a node added later, a
 * script evicted from Redis' cache).
 * NOSCRIPT, like "Function not found" (FUNCTION FLUSH, a restart), means nothing ran, so the
 * call goes again (after loading the library on the node that lacked it) and counts nothing
 * twice; it is sent again only while `mayReload` allows (its hits' callers may have given up
 * since), and once.
 */

/** A script and its SHA-1, as EVALSHA names it, and its function in the library. */
export interface Script {
  readonly source: string;
  readonly sha: string;
  /** Its name as a function of `lua/library.lua` (see src/stores/redis/lua-loader.ts). */
  readonly fn: string;
}

/** The script `lua/<name>.lua`, its SHA-1 (computed at build time), and its function's name. */
export function script(name: 'hit' | 'refund' | 'lease' | 'operation'): Script {
  return { source: luaScript(name), sha: luaSha(name), fn: luaLibrary()[name] };
}

/** Whether `error` is Redis' NOSCRIPT reply. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Whether `error` is Redis' reply to FCALL of a function it does not have. */
export function isNoFunction(error: unknown): boolean {
  return error instanceof Error && /^ERR Function not found/i.test(error.message);
}

/** Where the store's library stands on its server(s), as src/stores/redis/setup.ts keeps it. */
export interface Functions {
  /** True once the library is loaded on every master: calls are FCALL. */
  readonly usable: () => boolean;
  /**
   * Loads the library on `node` (FUNCTION LOAD, never REPLACE); rejects when the node refuses it
   * or holds another library under its name.
   */
  readonly load: (node: Endpoint) => Promise<void>;
}

/**
 * Runs `run` with `args` (numkeys, KEYS, then ARGV) on `connection`: on a Cluster, routed by the
 * first key.
 */
export function evalScript(
  connection: StoreConnection,
  run: Script,
  args: Command,
  mayReload: () => boolean = () => true,
  functions?: Functions,
): Promise<unknown> {
  const key = Number(args[0]) > 0 ? String(args[1]) : undefined;
  if (functions?.usable()) {
    return connection.send(['FCALL', run.fn, ...args], key).catch(async (error: unknown) => {
      if (!isNoFunction(error) || !mayReload()) throw error;
      // a node that refuses the library runs the script instead
      const loaded = await Promise.all(
        nodesOf(connection, key).map((node) => functions.load(node)),
      ).then(
        () => true,
        () => false,
      );
      if (!mayReload()) throw error;
      if (loaded) return connection.send(['FCALL', run.fn, ...args], key);
      return connection.send(['EVAL', run.source, ...args], key);
    });
  }
  return connection.send(['EVALSHA', run.sha, ...args], key).catch((error: unknown) => {
    if (!isNoScript(error) || !mayReload()) throw error;
    return connection.send(['EVAL', run.source, ...args], key);
  });
}

/** The master that serves `key` as the client's slot map places it, or every master. */
function nodesOf(connection: StoreConnection, key: string | undefined): readonly Endpoint[] {
  if (connection.isCluster && key !== undefined) {
    const address = connection.masterOf(keySlot(key));
    const node = address === undefined ? undefined : connection.master(address);
    if (node) return [node];
  }
  return connection.masters();
}
