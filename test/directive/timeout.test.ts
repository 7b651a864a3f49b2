import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { createDeadlines } from '../../src/decide/deadlines';
import { sleep } from '../support/processes';

class Late extends Error {}

test('one timer bounds many calls: the slow ones time out, the rest answer', async () => {
  const bounded = createDeadlines(50, () => new Late('late'));
  const never = new Promise<number>(() => undefined);
  const calls = [
    bounded(Promise.resolve(1)),
    bounded(never),
    bounded(sleep(10).then(() => 3)),
    bounded(sleep(200).then(() => 4)),
    bounded(Promise.reject(new Error('store down'))),
  ];
  const settled = await Promise.allSettled(calls);
  expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : s.reason))).toEqual([
    1,
    expect.any(Late),
    3,
    expect.any(Late),
    expect.objectContaining({ message: 'store down' }),
  ]);
});

test('deadlines set later fall due later, also after the queue emptied', async () => {
  const bounded = createDeadlines(30, () => new Late('late'));
  await expect(bounded(new Promise(() => undefined))).rejects.toBeInstanceOf(Late);
  await sleep(20);
  const slow = bounded(sleep(60).then(() => 'slow'));
  const quick = bounded(sleep(5).then(() => 'quick'));
  await expect(quick).resolves.toBe('quick');
  await expect(slow).rejects.toBeInstanceOf(Late);
});

test('a late rejection after the deadline surfaces nowhere', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const bounded = createDeadlines(10, () => new Late('late'));
    await expect(
      bounded(sleep(30).then(() => Promise.reject(new Error('too late')))),
    ).rejects.toBeInstanceOf(Late);
    await sleep(50);
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

/** V8's collector, made reachable from inside a test (a context made after the flag has `gc`). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

test('a call that answered is not held until its deadline: what it answered can be collected', async () => {
  const gc = collector();
  // its deadline stays queued for a minute, until the one timer comes to it
  const bounded = createDeadlines(60_000, () => new Late('late'));
  const answered = await (async () => {
    const value = { rows: new Array<number>(100_000).fill(1) };
    const result = await bounded(Promise.resolve(value));
    expect(result).toBe(value);
    return new WeakRef(result);
  })();
  // a WeakRef holds its value until the current job ends
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  expect(answered.deref()).toBeUndefined();
});
