import { RateLimitConfigError } from '../../errors';
import { checkPrefix } from '../keys';
import { showValue } from '../../show-value';
import { OWN_CONNECTION, type RedisStoreClient } from '../redis/clients';
import { upstashRestConnection } from '../redis/clients/upstash-rest';
import { createRedisStore } from '../redis/redis-store';
import type { ClosableStore, RateLimitStore } from '../store';

/** Options of {@link createUpstashStore}. */
export interface UpstashStoreOptions {
  /** The database's REST URL (`UPSTASH_REDIS_REST_URL`), `https://<name>.upstash.io`. */
  readonly url: string;
  /** Its REST token (`UPSTASH_REDIS_REST_TOKEN`); never part of an error message. */
  readonly token: string;
  /** The `fetch` to call Upstash with. @default globalThis.fetch */
  readonly fetch?: typeof globalThis.fetch | undefined;
  /** Prepended to every key; must not contain `{` or `}`. @default 'rl:' */
  readonly prefix?: string | undefined;
  /** Most hits decided by one script call, hence one HTTP call. @default 128 */
  readonly maxBatch?: number | undefined;
  /** As the Redis store's `blockCache`. @default true */
  readonly blockCache?: boolean | undefined;
  /**
   * Each HTTP call is aborted after this long, and its hits fail as a store error (the
   * directive's `onStoreError`), never sent again: a call whose answer was lost may have been
   * counted. Give it the directive's `timeoutMs`. A NOSCRIPT reply is followed by EVAL only
   * while the batch's oldest hit is younger than this. @default 250
   */
  readonly timeoutMs?: number | undefined;
  /**
   * As the Redis store's `setupWaitMs`: a hit made while the store loads its scripts (when it
   * is made) waits for that, at most this long from when it began, before its own deadline
   * starts. @default 5000
   */
  readonly setupWaitMs?: number | undefined;
}

const DEFAULT_TIMEOUT_MS = 250;

function fail(message: string): never {
  throw new RateLimitConfigError(`createUpstashStore: ${message}`);
}

/**
 * A store on Upstash Redis over its REST API, for hosts without TCP (Cloudflare Workers, Vercel
 * Edge). It is the Redis store (`createRedisStore`) driven through a REST adapter
 * (src/stores/redis/clients/upstash-rest.ts): the same scripts, batches and guarantees. Each
 * decision is atomic on the database's primary, on the Redis server's clock; the hits of one
 * turn of the event loop are one HTTP call (one EVALSHA; EVAL only after a NOSCRIPT reply);
 * a call whose answer was lost is a store error, never resent. See docs/upstash.md.
 */
export function createUpstashStore(options: UpstashStoreOptions): ClosableStore {
  if (options === null || typeof options !== 'object') {
    fail(`options must be an object with url and token, got ${showValue(options)}`);
  }
  const { url, token } = options;
  const badUrl = `url must be the database's REST URL (https://...), got`;
  if (typeof url !== 'string' || !/^https?:\/\/[^/]/i.test(url)) {
    fail(`${badUrl} ${typeof url === 'string' ? showValue(withoutUserInfo(url)) : typeof url}`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    fail(`${badUrl} ${showValue(withoutUserInfo(url))}`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    // the token authenticates; a password in the URL would reach whatever prints the URL
    fail(
      `url must not carry a user name or password (the token authenticates), got ${showValue(withoutUserInfo(url))}`,
    );
  }
  if (typeof token !== 'string' || token.length === 0) {
    // the token itself is never shown
    fail(
      `token must be a non-empty string, got ${typeof token === 'string' ? 'an empty string' : typeof token}`,
    );
  }
  const given = options.fetch ?? globalThis.fetch;
  if (typeof given !== 'function') {
    fail(`fetch must be a function (no global fetch here), got ${showValue(options.fetch)}`);
  }
  // called on its own, as a runtime's global fetch may not be (Workers: "Illegal invocation")
  const fetch: typeof globalThis.fetch =
    options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    fail(`timeoutMs must be a positive number of milliseconds, got ${showValue(timeoutMs)}`);
  }
  const { maxBatch, blockCache, setupWaitMs } = options;
  if (maxBatch !== undefined && (!Number.isSafeInteger(maxBatch) || maxBatch < 1)) {
    fail(`maxBatch must be a whole number >= 1, got ${showValue(maxBatch)}`);
  }
  if (blockCache !== undefined && typeof blockCache !== 'boolean') {
    fail(`blockCache must be a boolean, got ${showValue(blockCache)}`);
  }
  if (
    setupWaitMs !== undefined &&
    (typeof setupWaitMs !== 'number' || !Number.isFinite(setupWaitMs) || setupWaitMs < 0)
  ) {
    fail(`setupWaitMs must be a number of milliseconds >= 0, got ${showValue(setupWaitMs)}`);
  }
  const prefix = options.prefix ?? 'rl:';
  checkPrefix(prefix);
  let made: { store: RateLimitStore; ready: () => Promise<void> } | undefined;
  let closed = false;
  // Made on its first use, not here: a Worker's module scope may not start a timer or a fetch
  // (workerd refuses both outside a request), and the set-up (scripts loaded) does both.
  const make = (): { store: RateLimitStore; ready: () => Promise<void> } => {
    if (closed) throw new Error('The rate limit store is closed');
    if (made) return made;
    const connection = upstashRestConnection({ url, token, fetch, timeoutMs });
    const client = { [OWN_CONNECTION]: () => connection } as unknown as RedisStoreClient;
    const store = createRedisStore({
      client,
      prefix,
      maxBatch,
      blockCache,
      // there is no connection to wait for: this bounds only EVAL after a NOSCRIPT reply
      connectWaitMs: timeoutMs,
      setupWaitMs,
    });
    made = {
      store: withoutKeysInErrors(store, prefix),
      // the server answers (a bad token or URL is an error here, not a wait), then the set-up
      // (scripts loaded) is done
      ready: async () => {
        await connection.send(['TIME']);
        await store.ready();
      },
    };
    return made;
  };
  const lazy: Record<string, unknown> = {};
  for (const name of [...CALLS, 'release', 'renew'] as const) {
    lazy[name] = async (...args: unknown[]): Promise<unknown> => {
      const call = Reflect.get(make().store, name) as (...a: unknown[]) => Promise<unknown>;
      return Reflect.apply(call, made?.store, args);
    };
  }
  // asked before each hit: the first one makes the store, whose set-up it then waits for
  lazy.settingUp = (): Promise<void> | undefined => make().store.settingUp?.();
  return {
    ...(lazy as unknown as RateLimitStore),
    ready: async () => make().ready(),
    close: async () => {
      closed = true;
      await made?.store.close?.();
    },
  };
}

/**
 * `url` as an error may show it: whatever precedes its last `@` after the scheme (a user name
 * and password, however malformed) taken out.
 */
function withoutUserInfo(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? '';
  const at = url.lastIndexOf('@');
  return at < scheme.length ? url : `${scheme}[user info]${url.slice(at)}`;
}

/** The store's calls that name an identity first; their errors are scrubbed of it. */
const CALLS = [
  'hit',
  'peek',
  'reset',
  'take',
  'refund',
  'refundAndPeek',
  'admitOperation',
  'settleOperation',
] as const;

/**
 * `store` with each error of a call scrubbed of the identities it was given and of every key
 * under `prefix` (the scripts name the key they could not count on: a key holds an identity).
 */
function withoutKeysInErrors<S extends RateLimitStore>(store: S, prefix: string): S {
  const keys = new RegExp(`${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\S*`, 'g');
  const scrubbed: Record<string, unknown> = { ...(store as RateLimitStore) };
  for (const name of CALLS) {
    const call: unknown = Reflect.get(store, name);
    if (typeof call !== 'function') continue;
    scrubbed[name] = (...args: unknown[]) =>
      (Reflect.apply(call, store, args) as Promise<unknown>).catch((error: unknown) => {
        const identities = ([] as unknown[]).concat(args[0]).map(String);
        const clean = (text: string): string => {
          let out = prefix.length > 0 ? text.replace(keys, '[key]') : text;
          for (const identity of identities) {
            if (identity.length >= 3) out = out.split(identity).join('[identity]');
          }
          return out;
        };
        if (error instanceof Error) {
          error.message = clean(error.message);
          if (error.stack !== undefined) error.stack = clean(error.stack);
        }
        throw error;
      });
  }
  return scrubbed as unknown as S;
}
