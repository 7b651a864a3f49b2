import type { GraphQLSchema } from 'graphql';

import { startProcess } from './processes';
import { codes, run } from './schema';

/** One answered request of a load run. */
export interface Answer {
  readonly identity: string;
  /** The error code, or 'OK' when the field resolved. */
  readonly outcome: string;
  readonly latencyMs: number;
}

/**
 * Sends `mutation { hit }` with `concurrency` requests in flight until `durationMs` has passed
 * (and at most `maxRequests`), each for an identity from `identityOf`. Returns every answer.
 */
export async function loadFor(
  schema: GraphQLSchema,
  options: {
    durationMs: number;
    concurrency: number;
    maxRequests?: number;
    identityOf: (n: number) => string;
  },
): Promise<Answer[]> {
  const answers: Answer[] = [];
  const deadline = Date.now() + options.durationMs;
  const max = options.maxRequests ?? 100_000;
  let sent = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < deadline && sent < max) {
      const identity = options.identityOf(sent++);
      const started = performance.now();
      const result = await run(schema, 'mutation { hit }', { team: { id: identity } });
      const code = codes(result)[0];
      answers.push({
        identity,
        outcome: typeof code === 'string' ? code : 'OK',
        latencyMs: performance.now() - started,
      });
      // a request that fails fast settles in microtasks alone: yield, as a network client
      // would, so that timers and sockets keep running
      await new Promise((r) => setImmediate(r));
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return answers;
}

/** Processes that keep a core busy, as other work on a loaded machine does. */
export interface BusyLoops {
  readonly pids: readonly number[];
  /** Ends each of them by its pid. */
  stop(): Promise<void>;
}

/** Starts `count` processes that loop for ever, each stopped by its pid on `stop`. */
export async function busyLoops(count: number): Promise<BusyLoops> {
  const loops = Array.from({ length: count }, () =>
    startProcess(process.execPath, ['-e', 'for (;;) {}']),
  );
  return {
    pids: loops.map((l) => l.pid),
    stop: async () => {
      await Promise.all(loops.map((l) => l.stop(1_000)));
    },
  };
}
