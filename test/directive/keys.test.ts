import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';

import { RateLimitConfigError } from '../../src';
import { checkPrefix, counterKey, escapeKeyPart } from '../../src/keys';
import type { RateLimitRule } from '../../src/rate-limit-rule';

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
        expect(hashTag(k1)).toBe(escapeKeyPart(id));
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
  return s.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
