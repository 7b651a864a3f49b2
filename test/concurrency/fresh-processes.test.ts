import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

import { releaseTogether } from '../support/barrier';
import { busyLoops } from '../support/load';
import { waitFor, within } from '../support/processes';
import { startRedisServer, uniquePrefix } from '../support/redis';

/*
 * Three fresh processes, each with a store made a moment ago with its default options and no
 * `ready()`, send 50 hits at once to one limit of 10 on a fresh Redis (nothing loaded yet),
 * beside four busy-looping processes (load about 8 on two cores): exactly 10 pass over the three,
 * and no hit is refused for the store being unavailable.
 */

const WORKER = join(__dirname, '..', '..', 'kit', 'first-burst-worker.js');
const LIMIT = 10;
const HITS = 50;

interface Worker {
  readonly child: ChildProcess;
  go(n: number): Promise<string[]>;
}

async function startWorker(env: Record<string, string>): Promise<Worker> {
  const child = fork(WORKER, [], { env: { ...process.env, ...env }, stdio: 'inherit' });
  let ready = false;
  let answer: ((codes: string[]) => void) | undefined;
  child.on('message', (m: { ready?: boolean; done?: string[] }) => {
    if (m.ready) ready = true;
    if (m.done) answer?.(m.done);
  });
  await waitFor('a worker to make its store', () => ready, 30_000);
  return {
    child,
    go: (n) =>
      within(
        new Promise<string[]>((resolve) => {
          answer = resolve;
          child.send({ go: n });
        }),
        30_000,
        'a worker to answer its hits',
      ),
  };
}

test('3 fresh processes x 50 simultaneous hits beside 4 busy loops: exactly the limit, none unavailable', async () => {
  const server = await startRedisServer();
  const loops = await busyLoops(4);
  const workers: Worker[] = [];
  try {
    const env = {
      REDIS_URL: server.url,
      RATE_LIMIT_PREFIX: uniquePrefix(),
      LIMIT: String(LIMIT),
      // the directive's deadline for a loaded host (docs/production.md): at load 8 and more, 50
      // operations' own CPU can outlast 250 ms, which is not what this test is about; the
      // store's options stay its defaults (connectWaitMs 200 ms, setupWaitMs 5 s)
      TIMEOUT_MS: '10000',
    };
    workers.push(...(await Promise.all([1, 2, 3].map(() => startWorker(env)))));
    const answers = (
      await releaseTogether(workers.length, async (i) => () => (workers[i] as Worker).go(HITS))
    ).flat();
    // how many of each outcome, so that a failure says what the hits got
    const tally: Record<string, number> = {};
    for (const code of answers) tally[code] = (tally[code] ?? 0) + 1;
    expect(tally).toEqual({ ok: LIMIT, RATE_LIMITED: 3 * HITS - LIMIT });
  } finally {
    for (const { child } of workers) child.kill('SIGKILL');
    await loops.stop();
    await server.stop();
  }
}, 90_000);
