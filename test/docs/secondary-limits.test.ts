import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { createMemoryStore, rateLimitDirective, type BudgetOptions } from '../../src';
import { RENEWALS_PER_LEASE } from '../../src/decide/leases';
import { SECONDARY_DEFAULTS } from '../../src/options/secondary-options';

/*
 * docs/secondary-limits.md: its example configuration is GitHub's published numbers and is
 * accepted as it is shown, and the defaults it states are the code's.
 */

const page = readFileSync(join(__dirname, '..', '..', 'docs', 'secondary-limits.md'), 'utf8');

test("the page's configuration is GitHub's numbers, and a directive accepts it", () => {
  const shown = /```ts\nbudget: (\{[\s\S]*?\n\}),?\n```/.exec(page)?.[1] ?? '';
  // the page's object literal as JSON: its keys quoted, its trailing commas dropped
  const json = shown.replace(/(\w+):/g, '"$1":').replace(/,(\s*[}\]])/g, '$1');
  const budget = JSON.parse(json) as BudgetOptions;
  expect(budget).toEqual({
    limit: 5000,
    window: 3600,
    inFlight: { limit: 100 },
    time: { seconds: 60, window: 60 },
  });
  expect(() => rateLimitDirective({ store: createMemoryStore(), budget })).not.toThrow();
});

test('the defaults the page states are the defaults', () => {
  expect(page).toContain(`reserves \`reserveMs\` (${SECONDARY_DEFAULTS.reserveMs} ms unless set)`);
  expect(page).toContain(`\`penaltyMs\` (${SECONDARY_DEFAULTS.penaltyMs} ms unless set)`);
  expect(RENEWALS_PER_LEASE).toBe(3);
  expect(page).toContain('renewed three times per `leaseSeconds`');
  const reference = readFileSync(join(__dirname, '..', '..', 'docs', 'reference.md'), 'utf8');
  expect(reference).toMatch(
    new RegExp(`\\| \`leaseSeconds\` \\| \`${SECONDARY_DEFAULTS.leaseSeconds}\` `),
  );
});
