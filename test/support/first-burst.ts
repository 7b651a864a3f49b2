import type { RateLimitDirectiveOptions } from '../../src';
import type { RateLimitStore } from '../../src/stores/store';
import { releaseTogether } from './barrier';
import { codes, limitedSchema, run } from './schema';

/*
 * The first burst on a store: 50 identities x 6 hits released together, two limits per field
 * (6 and 4). Half the identities hit `submit`, whose limits share the identity's hash tag; the
 * other half hit `spread`, whose second limit counts against another source, so that on a
 * Cluster its keys often live on two masters. Every identity holds braces.
 */

const SDL = `type Query { a: Int }
type Mutation {
  submit: Boolean
    @rateLimit(action: "six", window: 60, limit: 6)
    @rateLimit(action: "four", window: 60, limit: 4)
  spread: Boolean
    @rateLimit(action: "six", window: 60, limit: 6)
    @rateLimit(action: "four", window: 60, limit: 4, by: "user")
}`;

/** One identity's six answers, sorted, when its limits hold exactly. */
export const EXACT_BURST = ['PASSED', 'PASSED', 'PASSED', 'PASSED', 'RATE_LIMITED', 'RATE_LIMITED'];

const IDENTITIES = 50;
const HITS = 6;

/**
 * Runs the burst on `store` (the directive's other options from `directive`, its defaults
 * otherwise); per identity, the codes of its answers, sorted ('PASSED' when it resolved).
 */
export async function firstBurst(
  store: RateLimitStore,
  directive: Partial<RateLimitDirectiveOptions> = {},
  tag = '',
): Promise<string[][]> {
  const schema = limitedSchema(
    SDL,
    { Mutation: { submit: () => true, spread: () => true } },
    {
      ...directive,
      store,
      identities: { user: (ctx: { user: string }) => ctx.user },
    },
  );
  const answers = await releaseTogether(IDENTITIES * HITS, async (n) => {
    const i = Math.floor(n / HITS);
    const field = i % 2 === 0 ? 'submit' : 'spread';
    const context = { team: { id: `{team}-${tag}${i}` }, user: `{user-${tag}${i}}` };
    return () => run(schema, `mutation { ${field} }`, context);
  });
  return Array.from({ length: IDENTITIES }, (_, i) =>
    answers
      .slice(i * HITS, (i + 1) * HITS)
      .map((a) => (codes(a)[0] as string | undefined) ?? 'PASSED')
      .sort(),
  );
}
