import { createHash } from 'node:crypto';

import type { Command, StoreConnection } from './clients/adapter';

/*
 * How the store runs its Lua scripts on any client: EVALSHA, and EVAL only after Redis answered
 * NOSCRIPT (a restarted server, SCRIPT FLUSH, a failover, a node added later, a script evicted
 * from Redis' cache). NOSCRIPT means nothing ran, so sending the call again counts nothing twice;
 * it is sent again only while `mayReload` allows (its hits' callers may have given up since).
 */

/** A script and its SHA-1, as EVALSHA names it. */
export interface Script {
  readonly source: string;
  readonly sha: string;
}

/** `source` with its SHA-1, computed once. */
export function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/** Whether `error` is Redis' NOSCRIPT reply. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
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
): Promise<unknown> {
  const key = Number(args[0]) > 0 ? String(args[1]) : undefined;
  return connection.send(['EVALSHA', run.sha, ...args], key).catch((error: unknown) => {
    if (!isNoScript(error) || !mayReload()) throw error;
    return connection.send(['EVAL', run.source, ...args], key);
  });
}
