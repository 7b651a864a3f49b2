import { RateLimitConfigError } from '../../../errors';
import { asStrings, type Command, type Endpoint, type StoreConnection } from './adapter';

/*
 * node-redis (the `redis` package, 5 and 6): a client from `createClient` or a cluster from
 * `createCluster`. The store's connection is the client's `duplicate()` (same address, database,
 * credentials, TLS, RESP version, reconnect strategy; a cluster's root nodes and node defaults)
 * with `disableOfflineQueue`: a command for a connection that is not ready is refused at once
 * instead of queued, and on a dropped connection node-redis rejects what it had written, never
 * writing it again. Its command options (a default timeout, a type mapping) and key prefix are
 * not carried over: the store reads replies as Redis sends them and names its own keys. The
 * client given is only read: not connected, not closed, no listener added.
 */

/** What the store reads of a node-redis client (structural: `redis` is not a dependency). */
interface NodeRedisClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly options?: { readonly url?: string; readonly socket?: { host?: string; port?: number } };
  connect(): Promise<unknown>;
  duplicate(overrides: Record<string, unknown>): NodeRedisClient;
  sendCommand(args: string[]): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): unknown;
  disconnect?(): Promise<unknown>;
}

/** A node of a node-redis cluster's slot map. */
interface NodeRedisNode {
  readonly host: string;
  readonly port: number;
  readonly client?: NodeRedisClient | undefined;
}

/** What the store reads of a node-redis cluster. */
interface NodeRedisCluster {
  readonly isOpen: boolean;
  readonly masters: readonly NodeRedisNode[];
  readonly slots: readonly ({ readonly master: NodeRedisNode } | undefined)[];
  /** The options it was made with (not typed by node-redis as public; read for `defaults`). */
  readonly _options?: { readonly defaults?: Record<string, unknown> };
  connect(): Promise<unknown>;
  duplicate(overrides: Record<string, unknown>): NodeRedisCluster;
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: string[]): Promise<unknown>;
  nodeClient(node: NodeRedisNode): NodeRedisClient | Promise<NodeRedisClient>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): unknown;
  disconnect?(): Promise<unknown>;
}

/** Whether `value` is a node-redis client (`createClient`), by what it has. */
export function isNodeRedisClient(value: object): boolean {
  const c = value as Partial<NodeRedisClient>;
  return (
    typeof c.sendCommand === 'function' &&
    typeof c.duplicate === 'function' &&
    typeof c.connect === 'function' &&
    typeof c.isReady === 'boolean' &&
    typeof c.isOpen === 'boolean' &&
    !('status' in value)
  );
}

/** Whether `value` is a node-redis cluster (`createCluster`), by what it has. */
export function isNodeRedisCluster(value: object): boolean {
  const c = value as Partial<NodeRedisCluster>;
  return (
    typeof c.sendCommand === 'function' &&
    typeof c.duplicate === 'function' &&
    typeof c.nodeClient === 'function' &&
    Array.isArray(c.masters) &&
    typeof c.isOpen === 'boolean'
  );
}

const ignore = (): void => undefined;

/**
 * `made` (what `duplicate()` returned), checked for the methods the store calls on it: an object
 * shaped almost like a node-redis client fails here, naming what it lacks, not at its first use.
 */
function checkedDuplicate<T>(made: unknown, kind: string, methods: readonly string[]): T {
  const lacking =
    made !== null && typeof made === 'object'
      ? methods.filter((m) => typeof (made as Record<string, unknown>)[m] !== 'function')
      : methods;
  if (lacking.length > 0) {
    throw new RateLimitConfigError(
      `createRedisStore: \`client\` looks like a node-redis ${kind}, but what its duplicate() ` +
        `returned has no ${lacking.map((m) => `${m}()`).join(', ')}; pass a client made by ` +
        `node-redis' ${kind === 'cluster' ? 'createCluster' : 'createClient'} (redis 5 or 6)`,
    );
  }
  return made as T;
}

/** The methods the store calls on its own connection (the duplicate). */
const CLIENT_METHODS = ['connect', 'sendCommand', 'on', 'once', 'off'] as const;
const CLUSTER_METHODS = ['connect', 'sendCommand', 'nodeClient', 'on'] as const;

/** What the store's connection is opened with, on top of the client's options. */
const OWN = { disableOfflineQueue: true, commandOptions: undefined, keyPrefix: undefined };

/** Closes a node-redis client or cluster: gracefully when it can, else at once. */
async function shut(c: NodeRedisClient | NodeRedisCluster, gracefully: boolean): Promise<void> {
  if (gracefully && (c.close || c.quit)) {
    await (c.close ? c.close() : c.quit?.())?.catch(ignore);
    return;
  }
  if (c.destroy) c.destroy();
  else await c.disconnect?.().catch(ignore);
}

/** The store's own connection from a node-redis client. */
export function nodeRedisConnection(source: object): StoreConnection {
  const given = source as NodeRedisClient;
  const own = checkedDuplicate<NodeRedisClient>(given.duplicate(OWN), 'client', CLIENT_METHODS);
  // errors reach the store through its commands; unheard, node-redis would throw them
  own.on('error', ignore);
  let closed = false;
  let sawSourceOpen = given.isOpen;
  const address = addressOf(given.options);
  const open = (): void => {
    if (!closed && !own.isOpen) own.connect().catch(ignore);
  };
  const self: Endpoint = {
    address,
    isReady: () => own.isReady,
    open,
    onceReady: (listener) => {
      own.once('ready', listener);
      return () => own.off('ready', listener);
    },
    send: (command: Command) => own.sendCommand(asStrings(command)),
  };
  return {
    family: 'node-redis',
    isCluster: false,
    isReady: self.isReady,
    status: () => (closed ? 'closed' : own.isReady ? 'ready' : own.isOpen ? 'connecting' : 'wait'),
    open,
    onceReady: self.onceReady,
    send: self.send,
    masterOf: () => undefined,
    master: () => undefined,
    masters: () => [self],
    source: () => sourceOf(given, (sawSourceOpen ||= given.isOpen)),
    close: async () => {
      if (closed) return;
      closed = true;
      await shut(own, own.isReady);
    },
  };
}

/** The store's own connection from a node-redis cluster. */
export function nodeRedisClusterConnection(source: object): StoreConnection {
  const given = source as NodeRedisCluster;
  // the nodes' clients take `defaults`, which replaces the cluster's own: it is merged here
  const made = given.duplicate({
    commandOptions: undefined,
    keyPrefix: undefined,
    defaults: { ...given._options?.defaults, ...OWN },
  });
  const own = checkedDuplicate<NodeRedisCluster>(made, 'cluster', CLUSTER_METHODS);
  own.on('error', ignore);
  own.on('node-error', ignore);
  let closed = false;
  let connecting = false;
  let ready = false;
  let sawSourceOpen = given.isOpen;
  const waiting: (() => void)[] = [];
  const open = (): void => {
    if (closed || connecting || ready) return;
    connecting = true;
    own.connect().then(
      () => {
        connecting = false;
        ready = !closed;
        if (ready) for (const listener of waiting.splice(0)) listener();
      },
      () => {
        connecting = false;
      },
    );
  };

  const endpoints = new WeakMap<NodeRedisNode, Endpoint>();
  const endpoint = (node: NodeRedisNode): Endpoint => {
    let known = endpoints.get(node);
    if (known) return known;
    const client = (): Promise<NodeRedisClient> => Promise.resolve(own.nodeClient(node));
    known = {
      address: `${node.host}:${node.port}`,
      isReady: () => node.client?.isReady === true,
      open: () => void client().catch(ignore),
      onceReady: (listener) => {
        let cancelled = false;
        let cancel = (): void => {
          cancelled = true;
        };
        client().then((c) => {
          if (cancelled) return;
          if (c.isReady) {
            listener();
            return;
          }
          c.once('ready', listener);
          cancel = () => c.off('ready', listener);
        }, ignore);
        return () => cancel();
      },
      send: (command) => client().then((c) => c.sendCommand(asStrings(command))),
    };
    endpoints.set(node, known);
    return known;
  };

  return {
    family: 'node-redis',
    isCluster: true,
    isReady: () => ready && own.isOpen,
    status: () => (closed ? 'closed' : ready ? 'ready' : connecting ? 'connecting' : 'wait'),
    open,
    onceReady: (listener) => {
      if (ready) {
        listener();
        return ignore;
      }
      waiting.push(listener);
      return () => {
        const at = waiting.indexOf(listener);
        if (at >= 0) waiting.splice(at, 1);
      };
    },
    send: (command, key) => own.sendCommand(key, false, asStrings(command)),
    masterOf: (slot) => {
      const node = own.slots[slot]?.master;
      return node && endpoint(node).address;
    },
    master: (address) => own.masters.map(endpoint).find((e) => e.address === address),
    masters: () => own.masters.map(endpoint),
    source: () => sourceOf(given, (sawSourceOpen ||= given.isOpen)),
    close: async () => {
      if (closed) return;
      closed = true;
      ready = false;
      await shut(own, own.isOpen && !connecting);
    },
  };
}

/** Where a node-redis client or cluster stands; `sawOpen` once it has ever been open. */
function sourceOf(
  given: { readonly isOpen: boolean },
  sawOpen: boolean,
): 'unopened' | 'open' | 'closed' {
  if (given.isOpen) return 'open';
  return sawOpen ? 'closed' : 'unopened';
}

/** `host:port` of a node-redis client's options (`url` or `socket`). */
function addressOf(options: NodeRedisClient['options']): string {
  const socket = options?.socket;
  if (socket?.host !== undefined || socket?.port !== undefined) {
    return `${socket.host ?? 'localhost'}:${socket.port ?? 6379}`;
  }
  if (options?.url) {
    try {
      const url = new URL(options.url);
      return `${url.hostname || 'localhost'}:${url.port || 6379}`;
    } catch {
      return options.url;
    }
  }
  return 'localhost:6379';
}
