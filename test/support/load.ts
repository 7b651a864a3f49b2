import type { GraphQLSchema } from 'graphql';

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
