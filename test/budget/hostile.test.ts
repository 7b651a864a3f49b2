import { type DecisionEvent, type RateLimitDirectiveOptions } from '../../src';
import {
  budgetPerTest,
  SERVER_KINDS,
  type BudgetResponse,
  type BudgetServer,
  type ServerKind,
} from '../support/budget-servers';
import {
  conditionedFragments,
  deepFields,
  deepInlineFragments,
  doubledFragments,
  wideAliases,
} from '../../kit/hostile-documents';
import { closeClients } from '../support/redis';

/*
 * Documents built to stall pricing, and requests built to make pricing mistake itself for a
 * store failure, through both plugins (Apollo Server and GraphQL Yoga) with a budget on real
 * Redis. Each is answered at once, priced or refused with a clear code, before any identity or
 * store is asked; `{ __typename }` sent beside it is answered too. A stall fails the test by its
 * timeout, not by a measured time.
 */

afterAll(closeClients);

const HOURLY = { limit: 100, window: 3600 };
const SHORT_MS = 20_000;
const first = (r: BudgetResponse) => r.body.errors?.[0];

describe.each(SERVER_KINDS)('%s', (kind: ServerKind) => {
  let identified: number;
  let events: DecisionEvent[];
  const suite = budgetPerTest(kind, HOURLY);
  const { team } = suite;
  const serve = (options: Partial<RateLimitDirectiveOptions> = {}) => {
    identified = 0;
    events = [];
    return suite.serve({
      identify: (context: { team?: string }) => (identified++, context.team),
      onDecision: (event) => events.push(event),
      ...options,
    });
  };

  /** Runs `query` and `{ __typename }` side by side; both must come back. */
  const besideTypename = async (s: BudgetServer, query: string, t?: string) => {
    const [answer, typename] = await Promise.all([s.run(query, t), s.run('{ __typename }')]);
    expect(typename.body.data).toEqual({ __typename: 'Query' });
    return answer;
  };

  test.each([20, 24, 30, 60])(
    'a fragment spread twice at each of %i levels is priced as its one field',
    async (n) => {
      const s = await serve();
      const answer = await besideTypename(s, doubledFragments(n), team());
      expect(answer.body.errors).toBeUndefined();
      expect(answer.body.data).toEqual({ items: [{ id: '0' }] });
      expect(answer.body.extensions?.cost).toMatchObject({ requestedQueryCost: 1 });
    },
    SHORT_MS,
  );

  test.each([20, 30, 60])(
    'spreads under their own @include at each of %i levels: refused as too complex, no store asked',
    async (n) => {
      const s = await serve();
      const answer = await besideTypename(s, conditionedFragments(n), team());
      expect(answer.status).toBe(200);
      expect(answer.body.data ?? null).toBeNull();
      expect(first(answer)?.extensions).toMatchObject({
        code: 'COST_QUERY_PARSE_FAILURE',
        reason: 'TOO_COMPLEX',
      });
      expect({ identified, events: events.length, items: s.runs.items }).toEqual({
        identified: 1,
        events: 0,
        items: 0,
      });
    },
    SHORT_MS,
  );

  test.each([
    ['inline fragments', deepInlineFragments],
    ['fields', (depth: number) => deepFields(depth)],
  ])(
    '%s nested 200 deep: refused by the estimator as too deep, no store asked',
    async (_what, build) => {
      const s = await serve();
      const answer = await besideTypename(s, build(200), team());
      expect(answer.status).toBe(200);
      expect(answer.body.data ?? null).toBeNull();
      expect(first(answer)?.extensions).toMatchObject({
        code: 'COST_QUERY_PARSE_FAILURE',
        reason: 'TOO_DEEP',
      });
      expect(first(answer)?.message).toMatch(/nest more than 128 levels/);
      expect({ identified, events: events.length, items: s.runs.items }).toEqual({
        identified: 1,
        events: 0,
        items: 0,
      });
    },
    SHORT_MS,
  );

  test.each([
    ['inline fragments', 800, deepInlineFragments],
    ['fields', 800, (depth: number) => deepFields(depth)],
    ['inline fragments', 5_000, deepInlineFragments],
    ['fields', 5_000, (depth: number) => deepFields(depth)],
  ])(
    '%s nested %i deep: refused from the text (the parser would run out of stack), nothing asked',
    async (_what, depth, build) => {
      const s = await serve();
      const answer = await besideTypename(s, build(depth), team());
      expect(answer.status).toBe(400);
      expect(answer.body.data ?? null).toBeNull();
      expect(answer.body.errors).toEqual([
        {
          message: 'Operation too deep to price: it nests more than 256 brackets',
          extensions: { code: 'COST_QUERY_PARSE_FAILURE', reason: 'TOO_DEEP' },
        },
      ]);
      // and again: nothing of the first was kept as a document to run (Apollo's document store)
      expect((await s.run(build(depth), team())).body.errors).toEqual(answer.body.errors);
      expect({ identified, events: events.length, items: s.runs.items }).toEqual({
        identified: 0,
        events: 0,
        items: 0,
      });
    },
    SHORT_MS,
  );

  test(
    '2,000 aliases are priced and refused as too expensive, no store asked',
    async () => {
      const s = await serve();
      const answer = await besideTypename(s, wideAliases(2_000), team());
      expect(first(answer)?.extensions).toMatchObject({
        code: 'COST_ESTIMATED_TOO_EXPENSIVE',
        cost: 2_000,
      });
      expect({ identified, events: events.length, items: s.runs.items }).toEqual({
        identified: 1,
        events: 0,
        items: 0,
      });
    },
    SHORT_MS,
  );

  test('a negative slicing argument is refused, never priced as 0 items', async () => {
    const s = await serve();
    for (const query of [
      '{ items(first: -1) { id } }',
      '{ items(first: 1) { id children(first: -5) { id } } }',
    ]) {
      const answer = await s.run(query, team());
      expect(first(answer)?.extensions?.code).toBe('COST_QUERY_PARSE_FAILURE');
      expect(first(answer)?.message).toMatch(/slicing argument "first" must not be negative/);
    }
    expect({ identified, events: events.length, items: s.runs.items }).toEqual({
      identified: 2,
      events: 0,
      items: 0,
    });
  });

  test.each([
    ['2.5', 2.5],
    ['1e308', 1e308],
  ])(
    'an Int variable of %s gets GraphQL’s coercion error: no price, no store, no store failure',
    async (_what, n) => {
      const s = await serve();
      const answer = await s.run('query ($n: Int!) { items(first: $n) { id } }', team(), { n });
      expect(first(answer)?.message).toMatch(
        /^Variable "\$n" got invalid value .*Int cannot represent/,
      );
      expect(String(first(answer)?.extensions?.code)).not.toMatch(/RATE_LIMIT|COST_/);
      // the identity is read or not (Mercurius refuses such variables before the budget)
      expect({ events: events.length, items: s.runs.items }).toEqual({ events: 0, items: 0 });
    },
  );

  test.each(['allow', 'deny'] as const)(
    '0 items of an infinite subtree (NaN) is too expensive, never a store failure (onStoreError: %s)',
    async (onStoreError) => {
      const s = await serve({ onStoreError });
      const query = deepFields(35, {
        root: 'items(first: 0)',
        child: 'children(first: 2147483647)',
      });
      const answer = await s.run(query, team());
      expect(answer.body.data ?? null).toBeNull();
      expect(first(answer)?.extensions).toMatchObject({ code: 'COST_ESTIMATED_TOO_EXPENSIVE' });
      expect({ identified, events: events.length, items: s.runs.items }).toEqual({
        identified: 1,
        events: 0,
        items: 0,
      });
    },
  );

  test('no identity: UNAUTHENTICATED speaks of the operation and its budget, not of a field', async () => {
    const s = await serve();
    const answer = await s.run('{ items(first: 1) { id } }');
    expect(first(answer)?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(first(answer)?.message).not.toMatch(/field/);
    expect(first(answer)?.message).toMatch(/operations are charged to a per-identity cost budget/);
  });
});
