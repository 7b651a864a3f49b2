import { join } from 'node:path';

import type { StoreErrorPolicy } from 'graphql-atomic-rate-limit';

import { clusterNodes, type NodeAddress } from './redis-client';
import { checkRedisUrl } from './redis-url';
import { readTrustProxy, type TrustProxy } from './trust-proxy';

/**
 * `RATE_LIMIT_ON_STORE_ERROR`: the library's policies, or `local`: hits are decided by an
 * in-process memory store while Redis fails (limits hold per process), and refused
 * (`deny`) should that fail too.
 */
export type ServerStoreErrorPolicy = StoreErrorPolicy | 'local';

/** What `npm start` reads from its environment, checked. */
export interface ServerConfig {
  /** `PORT`. @default 4000 */
  readonly port: number;
  /** `HOST`: the address to listen on. @default '127.0.0.1' (this machine only) */
  readonly host: string;
  /** `CTF_DATA`. @default the demo file `data/demo-ctf.json` */
  readonly dataPath: string;
  /**
   * `REDIS_URL`: `redis://` or `rediss://` (TLS), an optional whole database index as its path.
   * @default undefined
   */
  readonly redisUrl: string | undefined;
  /** `REDIS_CLUSTER_NODES=host:port,host:port`; wins over `REDIS_URL`. @default undefined */
  readonly redisClusterNodes: readonly NodeAddress[] | undefined;
  /** `RATE_LIMIT_PREFIX`: key prefix in Redis. @default the store's own */
  readonly prefix: string | undefined;
  /** `RATE_LIMIT_ON_STORE_ERROR`: `deny`, `allow` or `local`. @default 'deny' */
  readonly onStoreError: ServerStoreErrorPolicy;
  /** `RATE_LIMIT_DRY_RUN`: `true` or `false`. @default false */
  readonly dryRun: boolean;
  /** `HTTP_HEADERS_TIMEOUT_MS`: time a client has to send its request headers. @default 10000 */
  readonly headersTimeoutMs: number;
  /** `HTTP_REQUEST_TIMEOUT_MS`: time a client has to send its whole request. @default 30000 */
  readonly requestTimeoutMs: number;
  /**
   * `RATE_LIMIT_TIMEOUT_MS`: how long a hit may wait for the store before the store-error policy
   * answers it. @default 250 (the directive's `timeoutMs`)
   */
  readonly rateLimitTimeoutMs: number;
  /**
   * `TRUST_PROXY`: whose `X-Forwarded-For` names the client (express's `trust proxy`): `false`,
   * a number of proxy hops, or the proxies' addresses. @default false (the socket's address)
   */
  readonly trustProxy: TrustProxy;
  /**
   * `GRAPHQL_INTROSPECTION`: `true` or `false`; when on, one `__schema` or `__type` per
   * operation. @default true
   */
  readonly introspection: boolean;
}

/** The defaults of {@link ServerConfig}, beside the parsing that applies them. */
export const SERVER_DEFAULTS = {
  port: 4000,
  // Loopback: the demo data's tokens are public, so exposing the server is an explicit choice.
  host: '127.0.0.1',
  dataPath: join(__dirname, '..', 'data', 'demo-ctf.json'),
  onStoreError: 'deny',
  dryRun: false,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  rateLimitTimeoutMs: 250,
  trustProxy: false,
  // On, as graphql-http's audits and development tools expect it, but capped to one
  // introspection field per operation (server/src/query-limits.ts).
  introspection: true,
} as const;

/**
 * Reads and checks `env`. A value that is set but not understood throws an Error naming the
 * variable, the accepted values and what it got: a typo must stop the server, not quietly fall
 * back to a default the operator did not choose. Empty counts as unset.
 */
export function readServerConfig(env: NodeJS.ProcessEnv): ServerConfig {
  const set = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const value = set(name);
    if (value === undefined) return fallback;
    if ((allowed as readonly string[]).includes(value)) return value as T;
    throw new Error(
      `${name} must be ${allowed.map((a) => `"${a}"`).join(' or ')}, got ${JSON.stringify(value)}`,
    );
  };
  /** `parse(value)`; its error ("must be ...") is prefixed with the variable's name. */
  const checked = <T>(name: string, parse: (value: string) => T): T | undefined => {
    const value = set(name);
    if (value === undefined) return undefined;
    try {
      return parse(value);
    } catch (error) {
      throw new Error(`${name} ${(error as Error).message}`);
    }
  };
  const whole = (name: string, min: number, max: number, fallback: number): number => {
    const value = set(name);
    if (value === undefined) return fallback;
    const n = /^\d+$/.test(value) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new Error(
        `${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`,
      );
    }
    return n;
  };

  const headersTimeoutMs = whole(
    'HTTP_HEADERS_TIMEOUT_MS',
    1,
    600_000,
    SERVER_DEFAULTS.headersTimeoutMs,
  );
  const requestTimeoutMs = whole(
    'HTTP_REQUEST_TIMEOUT_MS',
    1,
    600_000,
    Math.max(SERVER_DEFAULTS.requestTimeoutMs, headersTimeoutMs),
  );
  if (headersTimeoutMs > requestTimeoutMs) {
    // Node refuses it too, but with a message about its own option names.
    throw new Error(
      `HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    );
  }
  return {
    port: whole('PORT', 0, 65_535, SERVER_DEFAULTS.port),
    host: set('HOST') ?? SERVER_DEFAULTS.host,
    dataPath: set('CTF_DATA') ?? SERVER_DEFAULTS.dataPath,
    redisUrl: checked('REDIS_URL', checkRedisUrl),
    redisClusterNodes: checked('REDIS_CLUSTER_NODES', clusterNodes),
    prefix: set('RATE_LIMIT_PREFIX'),
    onStoreError: oneOf<ServerStoreErrorPolicy>(
      'RATE_LIMIT_ON_STORE_ERROR',
      ['deny', 'allow', 'local'],
      SERVER_DEFAULTS.onStoreError,
    ),
    dryRun:
      oneOf('RATE_LIMIT_DRY_RUN', ['true', 'false'], SERVER_DEFAULTS.dryRun ? 'true' : 'false') ===
      'true',
    headersTimeoutMs,
    requestTimeoutMs,
    rateLimitTimeoutMs: whole(
      'RATE_LIMIT_TIMEOUT_MS',
      1,
      60_000,
      SERVER_DEFAULTS.rateLimitTimeoutMs,
    ),
    trustProxy: checked('TRUST_PROXY', readTrustProxy) ?? SERVER_DEFAULTS.trustProxy,
    introspection:
      oneOf(
        'GRAPHQL_INTROSPECTION',
        ['true', 'false'],
        SERVER_DEFAULTS.introspection ? 'true' : 'false',
      ) === 'true',
  };
}
