import { graphql } from 'graphql';

import { aiSchema } from '../../examples/ai-call';
import { closeClients } from '../support/redis';
import { waitFor } from '../support/processes';
import { freshStore, STORE_KINDS } from '../support/stores';

/*
 * examples/ai-call.ts, shown in docs/directive.md: an AI call limited both per minute and in
 * flight, on every store.
 */

afterAll(closeClients);

test.each(STORE_KINDS)(
  '%s store: 2 calls run at once, a third waits its turn; 20 a minute in all',
  async (kind) => {
    const { store } = await freshStore(kind);
    let running = 0;
    let most = 0;
    let answer!: () => void;
    let answered = new Promise<void>((resolve) => (answer = resolve));
    const schema = aiSchema(store, async (prompt) => {
      most = Math.max(most, ++running);
      await answered;
      running--;
      return prompt.length.toString();
    });
    const ask = () =>
      graphql({ schema, source: '{ summarize(text: "hi") }', contextValue: { team: 'team-1' } });
    const first = [ask(), ask()];
    await waitFor('two calls to run', () => running === 2);
    const third = await ask();
    expect(third.errors?.[0]?.extensions).toMatchObject({
      code: 'RATE_LIMITED',
      action: 'ai-in-flight',
      reason: 'CONCURRENCY',
    });
    answer();
    await Promise.all(first);
    // 2 ran and 1 was refused without taking from the minute's 20: 18 are left, 2 at a time
    let passed = 0;
    for (let round = 0; round < 9; round++) {
      answered = new Promise<void>((resolve) => (answer = resolve));
      const calls = [ask(), ask()];
      await waitFor(`two calls to run in round ${round}`, () => running === 2);
      answer();
      passed += (await Promise.all(calls)).filter((r) => r.errors === undefined).length;
    }
    expect(passed).toBe(18);
    expect((await ask()).errors?.[0]?.extensions).toMatchObject({ action: 'ai' });
    expect(most).toBe(2);
  },
);
