import { createHash } from 'node:crypto';

import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';

import { RateLimitConfigError } from '../../src';
import {
  checkPrefix,
  counterKey,
  escapeKeyPart,
  identityKeyPart,
  MAX_KEY_IDENTITY,
} from '../../src/stores/keys';
import type { RateLimitRule } from '../../src/rate-limit-rule';
import { base64url, sha256 } from '../../src/stores/sha256';

const rule = (action: string, over: Partial<RateLimitRule> = {}): RateLimitRule => ({
  action,
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: 3,
  cost: 1,
  ...over,
});

/** What Redis Cluster hashes: the text between the first `{` and the next `}`, if non-empty. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

const hostile = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: fc.constantFrom('{', '}', ':', '%', '7', 'B', 'D', '3', 'A', ' ', '\n') }),
  fc.constantFrom(
    '',
    ':',
    '{',
    '}',
    '{}',
    '%7B',
    '%3A',
    'a:b',
    'a}:{b',
    'x'.repeat(10_000),
    'équipe 🚩',
  ),
);

test('distinct (identity, action) pairs never build one key', () => {
  fc.assert(
    fc.property(hostile, hostile, hostile, hostile, (id1, a1, id2, a2) => {
      fc.pre(id1 !== id2 || a1 !== a2);
      expect(counterKey('rl:', id1, rule(a1))).not.toBe(counterKey('rl:', id2, rule(a2)));
    }),
    { seed: 20261129, numRuns: 2000 },
  );
});

test('all keys of one identity carry its hash tag and land in one slot', () => {
  fc.assert(
    fc.property(
      fc.string({ minLength: 1 }).chain((id) => fc.tuple(fc.constant(id), hostile, hostile)),
      ([id, a1, a2]) => {
        const k1 = counterKey('rl:', id, rule(a1));
        const k2 = counterKey('rl:', id, rule(a2, { windowSeconds: 3600 }));
        expect(hashTag(k1)).toBe(identityKeyPart(id));
        expect(calculateSlot(k1)).toBe(calculateSlot(k2));
      },
    ),
    { seed: 20261129, numRuns: 1000 },
  );
});

test('limits of one action with other windows or algorithms get their own keys', () => {
  const keys = new Set([
    counterKey('rl:', 'team', rule('submit')),
    counterKey('rl:', 'team', rule('submit', { windowSeconds: 3600 })),
    counterKey('rl:', 'team', rule('submit', { algorithm: 'TOKEN_BUCKET' })),
  ]);
  expect(keys.size).toBe(3);
  // but the limit and cost are not part of the counter: fields sharing an action share it
  expect(counterKey('rl:', 'team', rule('submit', { limit: 9, cost: 2 }))).toBe(
    counterKey('rl:', 'team', rule('submit')),
  );
});

test('escaping is reversible and leaves no reserved character', () => {
  fc.assert(
    fc.property(hostile, (s) => {
      const escaped = escapeKeyPart(s);
      expect(escaped).not.toMatch(/[{}:]/);
      expect(decodeURIComponentSafe(escaped)).toBe(s);
    }),
    { seed: 20261129 },
  );
});

test('a prefix with a brace is refused', () => {
  expect(() => checkPrefix('app{1}:')).toThrow(RateLimitConfigError);
  expect(() => checkPrefix('app{1}:')).toThrow(/prefix/);
  expect(checkPrefix('app:')).toBe('app:');
});

function decodeURIComponentSafe(s: string): string {
  return s.replace(/%(?:u([0-9A-F]{4})|([0-9A-F]{2}))/g, (_, wide?: string, hex?: string) =>
    String.fromCharCode(parseInt((wide ?? hex) as string, 16)),
  );
}

/** What Redis receives: ioredis sends a key as UTF-8. */
const bytes = (key: string): string => Buffer.from(key, 'utf8').toString('hex');

test('keys are distinct as UTF-8 bytes for every string, lone surrogates included', () => {
  const units = fc.constantFrom(
    'x',
    ':',
    '%',
    '\uD800',
    '\uDBFF',
    '\uDC00',
    '\uDFFF',
    '\uFFFD',
    'u',
  );
  const strings = fc.oneof(fc.string({ unit: units }), fc.string({ unit: 'binary' }));
  fc.assert(
    fc.property(strings, strings, (id1, id2) => {
      fc.pre(id1 !== id2);
      expect(bytes(counterKey('rl:', id1, rule('a')))).not.toBe(
        bytes(counterKey('rl:', id2, rule('a'))),
      );
    }),
    { seed: 20261201, numRuns: 3000 },
  );
  const keys = ['x\uD800', 'x\uDC00', 'x\uFFFD'].map((id) =>
    bytes(counterKey('rl:', id, rule('a'))),
  );
  expect(new Set(keys).size).toBe(3);
});

test('escaping of lone surrogates is reversible; well-formed pairs stay as they are', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), (s) => {
      const escaped = escapeKeyPart(s);
      expect(escaped).not.toMatch(
        /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/,
      );
      expect(decodeURIComponentSafe(escaped)).toBe(s);
    }),
    { seed: 20261201 },
  );
  expect(escapeKeyPart('team 🚩')).toBe('team 🚩');
});

describe('long identities enter keys as a digest', () => {
  const long = 'a'.repeat(MAX_KEY_IDENTITY + 1);
  test('bounded, whatever the identity', () => {
    const key = counterKey('rl:', 'b'.repeat(1 << 20), rule('login', { by: 'args.email' }));
    expect(key.length).toBeLessThan(100);
    expect(counterKey('rl:', 'a'.repeat(MAX_KEY_IDENTITY), rule('a'))).toContain(
      'a'.repeat(MAX_KEY_IDENTITY),
    );
  });
  test('a digest never equals a short identity, nor another long one', () => {
    const digest = identityKeyPart(long);
    expect(digest).toMatch(/^%#[A-Za-z0-9_-]{43}$/);
    // the digest written out as a short identity is escaped: its % becomes %25
    expect(identityKeyPart(digest)).not.toBe(digest);
    expect(identityKeyPart(`${long}b`)).not.toBe(digest);
    expect(identityKeyPart(`${long.slice(1)}\uD800`)).not.toBe(
      identityKeyPart(`${long.slice(1)}\uDC00`),
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: MAX_KEY_IDENTITY }), (short) => {
        expect(identityKeyPart(short)).not.toBe(digest);
      }),
      { seed: 20261201 },
    );
  });
  test("the digest is Node's SHA-256 of the UTF-16 units: keys as they were, with no node:crypto", () => {
    // every padding case of a 64-byte block, then identities of several blocks
    for (let length = 0; length <= 200; length++) {
      const bytes = Uint8Array.from({ length }, (_, i) => (i * 37 + length) & 0xff);
      expect(base64url(sha256(bytes))).toBe(createHash('sha256').update(bytes).digest('base64url'));
    }
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: MAX_KEY_IDENTITY + 1, maxLength: 1200 }),
        (identity) => {
          const node = createHash('sha256').update(Buffer.from(identity, 'utf16le'));
          expect(identityKeyPart(identity)).toBe(`%#${node.digest('base64url')}`);
        },
      ),
      { seed: 20261202, numRuns: 200 },
    );
  });
});
