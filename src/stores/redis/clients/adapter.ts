/*
 * What the Redis store needs of a client library, and nothing more: the batching, the scripts
 * (EVALSHA, EVAL on NOSCRIPT), the version check and every guarantee about when a hit may be sent
 * are written once above this seam (src/stores/redis/), and each client family (ioredis and its
 * fork iovalkey; node-redis) is one small adapter below it that opens the store's own connection
 * from the client it is given and never changes that client.
 *
 * An adapter opens nothing when it is made (the store opens its connection once the application
 * has opened its client, or on the first hit), and promises:
 * - `send` writes the command at once or rejects at once: it never leaves a command in a client
 *   queue to be written later (no offline queue), and the client never writes a command again on
 *   its own after its connection dropped (a command whose reply was lost may have run);
 * - a connection that is not ready says so (`isReady`), so that the store holds its hits itself,
 *   each at most `connectWaitMs`;
 * - on a Cluster, `send` goes to the master that the client's slot map names for `key`, and the
 *   client follows MOVED and ASK replies (Redis answers them before running anything).
 */

/** A command as the store sends it: name, then arguments. */
export type Command = readonly (string | number)[];

/** One server the store sends to: a single Redis, or a master of a Cluster. */
export interface Endpoint {
  /** `host:port`, as the slot map and error messages name it. */
  readonly address: string;
  /** Whether a command sent now is written at once. */
  readonly isReady: () => boolean;
  /** Starts opening the connection when no one has (a client or a node opened on demand). */
  readonly open: () => void;
  /** Calls `listener` once, when the endpoint is next ready; the function returned cancels. */
  readonly onceReady: (listener: () => void) => () => void;
  /** Sends `command` to this server alone. */
  readonly send: (command: Command) => Promise<unknown>;
}

/** The store's own connection, made from a client of some family. */
export interface StoreConnection {
  /** The client family, for messages: `'ioredis'` (with iovalkey) or `'node-redis'`. */
  readonly family: string;
  /** Whether this is a Redis Cluster (hits are then grouped by master). */
  readonly isCluster: boolean;
  /** Whether a command sent now is written at once (a Cluster: its slot map is known). */
  readonly isReady: () => boolean;
  /** A word on what the connection is doing, for messages (`connecting`, `ready`, ...). */
  readonly status: () => string;
  /** Starts opening the connection when no one has. */
  readonly open: () => void;
  /** Calls `listener` once, when the connection is next ready; the function returned cancels. */
  readonly onceReady: (listener: () => void) => () => void;
  /** Sends `command`; on a Cluster to the master serving `key`. */
  readonly send: (command: Command, key?: string) => Promise<unknown>;
  /** On a Cluster: the address of the master serving `slot` in the client's slot map, if any. */
  readonly masterOf: (slot: number) => string | undefined;
  /** On a Cluster: the master at `address` (as {@link masterOf} names it), if the client knows it. */
  readonly master: (address: string) => Endpoint | undefined;
  /** Every master (one Redis: itself). Empty while a Cluster's slot map is unknown. */
  readonly masters: () => readonly Endpoint[];
  /**
   * Where the client this connection was made from stands: not opened yet (a lazily connected
   * client), opened by the application, or closed by it.
   */
  readonly source: () => 'unopened' | 'open' | 'closed';
  /** Closes this connection (never the client it was made from). */
  readonly close: () => Promise<void>;
}

/** Each argument as a string, for clients that send nothing else. */
export function asStrings(command: Command): string[] {
  const out = new Array<string>(command.length);
  for (let i = 0; i < command.length; i++) out[i] = String(command[i]);
  return out;
}
