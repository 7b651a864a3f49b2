import { Agent, fetch } from 'undici';

import { releaseTogether } from './barrier';
import type { ServerProcess } from './servers';

/** The login and site-wide recipes, as served by `startLimitedServer`. */
export const IDENTITIES_SDL = `
  type Query { ping: Int }
  type Mutation {
    login(email: String!): Boolean
      @rateLimit(action: "login-email", window: 60, limit: 3, by: "args.email")
      @rateLimit(action: "login-ip", window: 60, limit: 5, by: "ip")
    sendInvite: Boolean
      @rateLimit(action: "invite", window: 60, limit: 2)
      @rateLimit(action: "invite-site", window: 60, limit: 7, by: "global")
  }
`;

/** One GraphQL response body. */
export interface Body {
  data?: Record<string, unknown> | null;
  errors?: { extensions?: Record<string, unknown> }[];
}

/**
 * `n` requests released at one instant, alternating between the processes, over at most
 * `connections` sockets per process, each given up after `timeoutMs`.
 */
export async function fire(
  targets: readonly ServerProcess[],
  n: number,
  query: (i: number) => string,
  headers: (i: number) => Record<string, string>,
  { connections = 8, timeoutMs = 10_000 }: { connections?: number; timeoutMs?: number } = {},
): Promise<Body[]> {
  const dispatcher = new Agent({ connections });
  try {
    return await releaseTogether(n, async (i) => {
      const target = targets[i % targets.length] as ServerProcess;
      return async () => {
        const response = await fetch(target.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers(i) },
          body: JSON.stringify({ query: query(i) }),
          signal: AbortSignal.timeout(timeoutMs),
          dispatcher,
        });
        return (await response.json()) as never;
      };
    });
  } finally {
    await dispatcher.close();
  }
}
