import type { RateLimitAlgorithm, RateLimitRule } from './rate-limit-rule';
import { RateLimitConfigError } from './errors';

/*
 * Keys are `<prefix>{<identity>}:<action>:<algorithm><windowSeconds>`, and, for a limit whose
 * identity comes from a source named by `by`, `<prefix>{<source>:<identity>}:...`. The source,
 * the identity and the action are escaped so that none can contain a raw `{`, `}` or `:` (nor
 * `%`, the escape character itself): the escaping is reversible, the separators therefore
 * unambiguous, and so distinct (source, identity, action, algorithm, window) tuples can never
 * build the same key, whatever characters or length they have; a default identity never holds
 * the raw `:` a sourced one has, so team "1.2.3.4" and IP "1.2.3.4" are two counters. The braces
 * make the escaped identity the Redis Cluster hash tag: Redis hashes only what stands between the
 * first `{` and the next `}`, and since the prefix may hold neither brace, every key of one
 * identity lands in one slot, which is what lets a field's limits on one identity be decided by
 * one script on a cluster.
 */

const ALGORITHM_CODE: Record<RateLimitAlgorithm, string> = {
  FIXED_WINDOW: 'f',
  SLIDING_WINDOW: 's',
  TOKEN_BUCKET: 't',
};

const RESERVED = /[%{}:]/;

/** Escapes the four characters the key grammar reserves. */
export function escapeKeyPart(value: string): string {
  if (!RESERVED.test(value)) return value;
  return value.replace(/[%{}:]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** What stands between the braces of `rule`'s keys for `identity`: the cluster hash tag. */
export function hashTag(identity: string, rule: RateLimitRule): string {
  return rule.by === undefined
    ? escapeKeyPart(identity)
    : `${escapeKeyPart(rule.by)}:${escapeKeyPart(identity)}`;
}

/** The counter key of `rule` for `identity` under `prefix`. The only place a key is built. */
export function counterKey(prefix: string, identity: string, rule: RateLimitRule): string {
  const tag = hashTag(identity, rule);
  return (
    `${prefix}{${tag}}:${escapeKeyPart(rule.action)}:` +
    `${ALGORITHM_CODE[rule.algorithm]}${rule.windowSeconds}`
  );
}

/** Throws unless `prefix` is usable: a brace in it would steal the identity's hash tag. */
export function checkPrefix(prefix: string): string {
  if (/[{}]/.test(prefix)) {
    throw new RateLimitConfigError(`prefix ${JSON.stringify(prefix)} must not contain "{" or "}"`);
  }
  return prefix;
}
