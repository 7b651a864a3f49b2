import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

import { waitFor } from './processes';

/** A forked kit/concurrency-worker.js: CONCURRENCY on the built library, in its own process. */
export interface ConcurrencyWorker {
  readonly pid: number;
  /** Starts `n` calls at once; resolves to each call's outcome (`'ok'` or its error code). */
  go(n: number, options?: { hang?: boolean; team?: string }): Promise<string[]>;
  /** Kills the process (SIGKILL): nothing of it runs again, nothing is released. */
  kill(): void;
}

/** What the workers of one test share: the most calls their resolvers saw running at once. */
export interface Workers {
  readonly most: number;
  /** Calls started since the workers were made. */
  readonly started: number;
  start(env: Record<string, string>): Promise<ConcurrencyWorker>;
  /** Ends every worker still alive, by pid. */
  stop(): void;
}

const WORKER = join(__dirname, '..', '..', 'kit', 'concurrency-worker.js');

/** Forks workers on demand; each one's store is open before `start` resolves. */
export function concurrencyWorkers(): Workers {
  const children: ChildProcess[] = [];
  let most = 0;
  let started = 0;
  return {
    get most() {
      return most;
    },
    get started() {
      return started;
    },
    async start(env) {
      const child = fork(WORKER, [], { env: { ...process.env, ...env }, stdio: 'inherit' });
      children.push(child);
      let ready = false;
      let answer: ((codes: string[]) => void) | undefined;
      child.on('message', (m: { ready?: boolean; started?: number; done?: string[] }) => {
        if (m.ready) ready = true;
        if (m.started !== undefined) {
          started++;
          most = Math.max(most, m.started);
        }
        if (m.done) answer?.(m.done);
      });
      await waitFor('a worker to open its store', () => ready, 20_000);
      return {
        pid: child.pid as number,
        go: (n, options = {}) =>
          new Promise<string[]>((resolve) => {
            answer = resolve;
            child.send({ go: n, ...options });
          }),
        kill: () => child.kill('SIGKILL'),
      };
    },
    stop() {
      for (const child of children) {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    },
  };
}
