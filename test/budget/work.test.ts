import { closeClients } from '../support/redis';
import { codeOf, budgetPerTest, SERVER_KINDS, type ServerKind } from '../support/budget-servers';

/*
 * A budget bounds the work done, whatever the response: when errors null `data` (or a parent)
 * after resolvers ran, the work that ran is charged, and nothing goes back.
 */

afterAll(closeClients);

const BUDGET = { limit: 1_000, window: 3600 };

describe.each(SERVER_KINDS)('%s', (kind: ServerKind) => {
  const { serve, team, left } = budgetPerTest(kind, BUDGET);

  test('a non-null field that throws nulls data: the list that ran is charged, and the budget runs out', async () => {
    const s = await serve();
    const t = team();
    const attack = '{ items(first: 999) { id } strict(x: -1) }';
    const first = await s.run(attack, t);
    expect(first.body.data ?? null).toBeNull();
    expect(first.body.errors).toHaveLength(1);
    expect(first.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 999,
      actualQueryCost: 999,
      throttleStatus: { currentlyAvailable: 1 },
    });
    expect(await left(t)).toBe(1);
    for (let i = 0; i < 5; i++) expect(codeOf(await s.run(attack, t))).toBe('RATE_LIMITED');
    // the list ran once: every later attempt was refused before any resolver
    expect(s.runs).toMatchObject({ items: 1, strict: 1 });
  });

  test('a field aliased to __typename does not settle an expensive type as a cheap one', async () => {
    const s = await serve();
    const t = team();
    // priced 10 × max(Heavy 1 + extra 80, Light 1); 5 Heavy (81) and 5 Light (1) ran
    const honest = '{ entries { __typename ... on Heavy { extra } ... on Light { title } } }';
    const answered = await s.run(honest, t);
    expect(answered.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 810,
      actualQueryCost: 410,
    });
    expect(await left(t)).toBe(1_000 - 410);
    // a Heavy's title is "Light": asked for as `__typename`, it would name the cheap type
    const attack =
      '{ entries { ... on Heavy { __typename: title extra } ... on Light { title } } }';
    const attacker = team();
    const attacked = await s.run(attack, attacker);
    expect((attacked.body.data?.entries as unknown[])[0]).toEqual({
      __typename: 'Light',
      extra: 1,
    });
    expect(attacked.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 810,
      actualQueryCost: 410,
    });
    expect(await left(attacker)).toBe(1_000 - 410);
  });

  test('a spent @rateLimit on a non-null field nulls data: the operation keeps its charge', async () => {
    const s = await serve();
    const t = team();
    const query = '{ items(first: 10) { id } once }';
    expect((await s.run(query, t)).body.data).toMatchObject({ once: 1 });
    expect(await left(t)).toBe(990);
    const spent = await s.run(query, t);
    expect(spent.body.data ?? null).toBeNull();
    expect(codeOf(spent)).toBe('RATE_LIMITED');
    expect(spent.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 10,
      actualQueryCost: 10,
    });
    expect(await left(t)).toBe(980);
    expect(s.runs.items).toBe(2);
  });

  test('a non-null field that throws nulls its nullable parent: the operation keeps its charge', async () => {
    const s = await serve();
    const t = team();
    const answer = await s.run('{ items(first: 10, returned: 4) { id } fragile { id } }', t);
    expect(answer.body.data).toMatchObject({ fragile: null });
    expect(answer.body.data?.items).toHaveLength(4);
    expect(answer.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 30,
      actualQueryCost: 30,
    });
    expect(await left(t)).toBe(1_000 - 30);
  });

  test('a failing nullable field nulls only itself: what the others did not use still goes back', async () => {
    const s = await serve();
    const t = team();
    const query = '{ items(first: 10, returned: 4) { id } limited }';
    for (let i = 0; i < 5; i++) await s.run(query, t);
    expect(await left(t)).toBe(1_000 - 5 * 4);
    // `limited` is spent (5 an hour): refused on its own, its parent (data) still there
    const sixth = await s.run(query, t);
    expect(codeOf(sixth)).toBe('RATE_LIMITED');
    expect(sixth.body.data).toMatchObject({ limited: null });
    expect(sixth.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 10,
      actualQueryCost: 4,
    });
    expect(await left(t)).toBe(1_000 - 6 * 4);
    // a variable that does not coerce runs nothing: the whole estimate goes back
    const bad = await s.run('query ($n: Int!) { items(first: $n) { id } }', t, { n: 'x' });
    expect(bad.body.errors?.[0]?.message).toMatch(/Variable "\$n" got invalid value "x"/);
    expect(bad.body.data ?? null).toBeNull();
    expect(await left(t)).toBe(1_000 - 6 * 4);
  });
});
