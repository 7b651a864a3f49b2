import { ALGORITHMS, type RateLimitAlgorithm } from '../../rate-limit-rule';
import { asError, RateLimitConfigError } from '../../errors';
import type { Endpoint, StoreConnection } from './clients/adapter';
import type { PackedHit, ScriptDecision } from './hit-script';

/*
 * What the scripts need of a Redis server, by version (docs/getting-started.md "Which Redis"):
 * - every hit: Redis 5.0, where a script may write after reading TIME (effects replication);
 * - SLIDING_WINDOW: Redis 6.2, for ZRANGE with REV and BYSCORE;
 * - refunding a FIXED_WINDOW unit of a multi-identity hit on a Cluster: Redis 7.0, for
 *   PEXPIRETIME. Without it the unit stays until its window ends (never refused).
 * Valkey reports the Redis version it is compatible with as redis_version, so it is read alike.
 */

/** A version as [major, minor, patch]. */
export type Version = readonly [number, number, number];

/** The oldest Redis every hit runs on. */
export const MIN_REDIS: Version = [5, 0, 0];

/** What an algorithm needs beyond {@link MIN_REDIS}, and why. */
export const ALGORITHM_NEEDS: Partial<
  Record<RateLimitAlgorithm, { version: Version; why: string }>
> = {
  SLIDING_WINDOW: { version: [6, 2, 0], why: 'ZRANGE with REV and BYSCORE' },
  CONCURRENCY: { version: [6, 2, 0], why: 'ZRANGE with BYSCORE' },
};

/** The `redis_version` of an INFO reply, or undefined when it has none. */
export function parseRedisVersion(info: string): Version | undefined {
  const match = /^redis_version:(\d+)\.(\d+)(?:\.(\d+))?/m.exec(info);
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

/** Negative, zero or positive as `a` is older than, the same as, or newer than `b`. */
export function compareVersions(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

const shown = (v: Version): string => v.join('.');

/** One server the store talks to: its address and version. */
export interface ServerVersion {
  readonly server: string;
  readonly version: Version;
}

/**
 * Why a hit on `algorithms` cannot be decided by `servers`, naming the server, its version and
 * what is missing; undefined when every server can.
 */
export function versionProblem(
  servers: readonly ServerVersion[],
  algorithms: Iterable<RateLimitAlgorithm>,
): string | undefined {
  for (const { server, version } of servers) {
    if (compareVersions(version, MIN_REDIS) < 0) {
      return (
        `Redis at ${server} is version ${shown(version)}: the rate limit scripts need Redis ` +
        `${shown(MIN_REDIS)} or later (a script that writes after reading TIME)`
      );
    }
    for (const algorithm of algorithms) {
      const need = ALGORITHM_NEEDS[algorithm];
      if (need && compareVersions(version, need.version) < 0) {
        return (
          `Redis at ${server} is version ${shown(version)}: ${algorithm} needs Redis ` +
          `${shown(need.version)} or later (${need.why}); use another algorithm or upgrade`
        );
      }
    }
  }
  return undefined;
}

/** Resolves once `target` (a client, or a node of a Cluster) may be sent a command. */
export type Ready = (target: StoreConnection | Endpoint) => Promise<void>;

/** Redis' version is asked again after a failed check at most this often. */
const RETRY_MS = 1_000;

/**
 * `queueHit` behind a check of the server's version, made when the store first sends a hit (on a
 * Cluster, of every master): once known, a hit that needs what the server lacks is refused with
 * one RateLimitConfigError that names server, version and what is missing, instead of a script
 * error. While the check is out, only a hit that needs more than the oldest server waits for it,
 * and fails rather than being sent once `connectWaitMs` have passed (its caller may have been
 * answered by then). A check that fails lets hits through (the script then answers them), and is
 * made again later. `whenReady` holds INFO until a connection may be sent it (a store's own
 * connection queues nothing); `read`, when given, reads the versions instead (a store's set-up,
 * src/stores/redis/setup.ts, has read them before the first hit).
 */
export function checkingVersion(
  client: StoreConnection,
  queueHit: (hit: PackedHit) => Promise<ScriptDecision>,
  connectWaitMs: number,
  whenReady?: Ready,
  read: () => Promise<readonly ServerVersion[]> = () => serverVersions(client, whenReady),
): (hit: PackedHit) => Promise<ScriptDecision> {
  let servers: readonly ServerVersion[] | undefined;
  /** Once the servers are known: what each algorithm lacks on them, for those that lack any. */
  const problems = new Map<RateLimitAlgorithm, string>();
  let checking: Promise<void> | undefined;
  let failedAt = -Infinity;

  const check = (): Promise<void> => {
    checking ??= read().then(
      (found) => {
        servers = found;
        // what each algorithm lacks on these servers, found once rather than for every hit
        for (const algorithm of ALGORITHMS) {
          const problem = versionProblem(found, [algorithm]);
          if (problem !== undefined) problems.set(algorithm, problem);
        }
      },
      () => {
        failedAt = performance.now();
        checking = undefined;
      },
    );
    return checking;
  };

  const refusal = (hit: PackedHit): RateLimitConfigError | undefined => {
    for (const { algorithm } of hit.rules) {
      const problem = problems.get(algorithm);
      if (problem !== undefined) return new RateLimitConfigError(problem);
    }
    return undefined;
  };

  return (hit) => {
    if (servers === undefined) {
      const pending = checking ?? (performance.now() - failedAt >= RETRY_MS ? check() : undefined);
      if (pending && hit.rules.some((r) => ALGORITHM_NEEDS[r.algorithm] !== undefined)) {
        const madeAt = performance.now();
        return pending.then(() => {
          const refused = refusal(hit);
          if (refused) throw refused;
          if (performance.now() - madeAt > connectWaitMs) {
            throw new Error(
              `Redis did not answer INFO within connectWaitMs (${connectWaitMs} ms); the hit was not sent`,
            );
          }
          return queueHit(hit);
        });
      }
    }
    const refused = refusal(hit);
    return refused ? Promise.reject(refused) : queueHit(hit);
  };
}

/** The version of the server, or of every master of a Cluster. */
export async function serverVersions(
  client: StoreConnection,
  whenReady: Ready = async () => undefined,
): Promise<ServerVersion[]> {
  await whenReady(client);
  const nodes = client.masters();
  if (nodes.length === 0) throw new Error('no Cluster node known yet');
  return Promise.all(
    nodes.map(async (node) => {
      await whenReady(node);
      const server = node.address;
      const version = parseRedisVersion(String(await node.send(['INFO', 'server'])));
      if (!version) throw asError(new Error(`INFO server of ${server} has no redis_version`));
      return { server, version };
    }),
  );
}
