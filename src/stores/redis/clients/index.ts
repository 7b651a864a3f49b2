import { RateLimitConfigError } from '../../../errors';
import type { StoreConnection } from './adapter';
import { ioredisConnection, isIoredis } from './ioredis';
import {
  isNodeRedisClient,
  isNodeRedisCluster,
  nodeRedisClusterConnection,
  nodeRedisConnection,
} from './node-redis';

/*
 * The clients `createRedisStore` accepts, told apart by what they are (their methods and
 * properties), never by an option. Their types are spelled out structurally, so that the
 * published declarations need none of the client packages: an application compiles with the one
 * it uses installed, and no other.
 */

/** An ioredis (5, 6) or iovalkey client: a `Redis` or a `Cluster`. */
export interface IoredisClientLike {
  readonly status: string;
  readonly isCluster: boolean;
  defineCommand(...args: never[]): unknown;
  duplicate(...args: never[]): unknown;
  call(...args: never[]): unknown;
}

/** A node-redis (`redis` 5, 6) client, from `createClient`. */
export interface NodeRedisClientLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  connect(...args: never[]): unknown;
  duplicate(...args: never[]): unknown;
  sendCommand(...args: never[]): unknown;
}

/** A node-redis (`redis` 5, 6) cluster, from `createCluster`. */
export interface NodeRedisClusterLike {
  readonly isOpen: boolean;
  readonly masters: readonly unknown[];
  duplicate(...args: never[]): unknown;
  nodeClient(...args: never[]): unknown;
  sendCommand(...args: never[]): unknown;
}

/** A Redis client the store can run on. */
export type RedisStoreClient = IoredisClientLike | NodeRedisClientLike | NodeRedisClusterLike;

/**
 * Set by a store of this package that makes its connection itself rather than from a client
 * (the Upstash REST store: src/stores/upstash/): a function that answers that connection.
 */
export const OWN_CONNECTION: unique symbol = Symbol('graphql-atomic-rate-limit.connection');

/** Names what `value` is, for an error message. */
function shown(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? String(value);
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== 'Object' ? `a ${name}` : 'an object';
}

/**
 * The store's own connection, made from `client` by the adapter of its family; a
 * RateLimitConfigError naming what was given when it is none of them.
 */
export function openStoreConnection(client: unknown): StoreConnection {
  if (client !== null && typeof client === 'object') {
    const made = (client as { [OWN_CONNECTION]?: unknown })[OWN_CONNECTION];
    if (typeof made === 'function') return (made as () => StoreConnection)();
    if (isIoredis(client)) return ioredisConnection(client);
    if (isNodeRedisCluster(client)) return nodeRedisClusterConnection(client);
    if (isNodeRedisClient(client)) return nodeRedisConnection(client);
  }
  throw new RateLimitConfigError(
    'createRedisStore: `client` must be an ioredis or iovalkey Redis or Cluster, or a node-redis ' +
      `client (createClient) or cluster (createCluster); got ${shown(client)}`,
  );
}
