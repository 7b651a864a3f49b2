import type { RateLimitAlgorithm, RateLimitRule } from '../rate-limit-rule';
import { RateLimitConfigError } from '../errors';
import { base64url, sha256 } from './sha256';

/*
 * Keys are `<prefix>{<identity>}:<action>:<algorithm><windowSeconds>`, and, for a limit whose
 * identity comes from a source named by `by`, `<prefix>{<source>:<identity>}:...`. The source,
 * the identity and the action are escaped so that none can contain a raw `{`, `}` or `:` (nor
 * `%`, the escape character itself): each becomes `%` and two hex digits, and a lone surrogate
 * (half of a UTF-16 pair without its other half, which JSON strings may carry) becomes `%u` and
 * four hex digits, since Redis keys are bytes and the client's UTF-8 would turn every lone
 * surrogate into U+FFFD, so that `'x\uD800'`, `'x\uDC00'` and `'x\uFFFD'` would share a key. The
 * escaping is reversible, the separators therefore unambiguous, and so distinct (source,
 * identity, action, algorithm, window) tuples never build the same key; a default identity never
 * holds the raw `:` a sourced one has, so team "1.2.3.4" and IP "1.2.3.4" are two counters.
 *
 * An identity longer than {@link MAX_KEY_IDENTITY} UTF-16 units enters the key as `%#` and the
 * base64url SHA-256 of its UTF-16 code units (lone surrogates included), so that what one
 * counter costs Redis (and the memory store) is bounded whatever a client sends: a 1 MB e-mail
 * address is a 46-character key part. No escaped identity holds `%#` (every escaped `%` is
 * followed by a hex digit or `u`), so a digest never equals a short identity, and two long
 * identities share a key only if SHA-256 collides: injective in practice.
 *
 * The braces make the identity part the Redis Cluster hash tag: Redis hashes only what stands
 * between the first `{` and the next `}`, and since the prefix may hold neither brace, every key
 * of one identity lands in one slot, which is what lets a field's limits on one identity be
 * decided by one script on a cluster.
 */

const ALGORITHM_CODE: Record<RateLimitAlgorithm, string> = {
  FIXED_WINDOW: 'f',
  SLIDING_WINDOW: 's',
  TOKEN_BUCKET: 't',
  CONCURRENCY: 'c',
};

/**
 * The longest identity, in UTF-16 code units (JavaScript's `length`), that enters a key as
 * itself; a longer one enters as its digest.
 */
export const MAX_KEY_IDENTITY = 256;

const ESCAPED = /[%{}:\uD800-\uDFFF]/;
const TO_ESCAPE = /[%{}:]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Escapes the four characters the key grammar reserves, and lone surrogates. */
export function escapeKeyPart(value: string): string {
  if (!ESCAPED.test(value)) return value;
  return value.replace(TO_ESCAPE, (c) => {
    const code = c.charCodeAt(0).toString(16).toUpperCase();
    return c.length === 1 && code.length === 4 ? `%u${code}` : `%${code}`;
  });
}

/**
 * The digests of the last long identities: one hit builds its keys several times (the block
 * cache, the script's arguments), and a digest of 1 MB takes milliseconds.
 */
const digests = new Map<string, string>();
const DIGESTS_KEPT = 16;

/** `identity` as its key holds it: escaped, or, when longer than {@link MAX_KEY_IDENTITY}, digested. */
export function identityKeyPart(identity: string): string {
  if (identity.length <= MAX_KEY_IDENTITY) return escapeKeyPart(identity);
  let digest = digests.get(identity);
  if (digest === undefined) {
    digest = `%#${base64url(sha256(utf16le(identity)))}`;
    if (digests.size >= DIGESTS_KEPT) digests.delete(digests.keys().next().value as string);
    digests.set(identity, digest);
  }
  return digest;
}

/** The UTF-16 code units of `text`, little-endian, lone surrogates included. */
function utf16le(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    bytes[i * 2] = unit & 0xff;
    bytes[i * 2 + 1] = unit >>> 8;
  }
  return bytes;
}

/** What stands between the braces of `rule`'s keys for `identity`: the cluster hash tag. */
export function hashTag(identity: string, rule: RateLimitRule): string {
  return rule.by === undefined
    ? identityKeyPart(identity)
    : `${escapeKeyPart(rule.by)}:${identityKeyPart(identity)}`;
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
