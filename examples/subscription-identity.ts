import type { Server } from 'node:http';

import { makeExecutableSchema } from '@graphql-tools/schema';
import { useServer } from 'graphql-ws/use/ws';
import { rateLimitDirective, type RateLimitStore } from 'graphql-atomic-rate-limit';
import { WebSocketServer } from 'ws';

/**
 * Subscriptions over graphql-ws on `server`. An HTTP request names its caller in a header; a
 * socket names it once, in the `connectionParams` of its `connection_init` (the client's
 * `createClient({ url, connectionParams: { authToken } })`), and graphql-ws gives them to
 * `context` for every operation on that socket. A start counts against the team found there;
 * a socket that sent no token starts nothing (`UNAUTHENTICATED`) and counts nothing.
 */
export function serveSubscriptions(server: Server, store: RateLimitStore) {
  const { typeDefs, transformer } = rateLimitDirective<{ team?: string }>({
    store,
    identify: (context) => context.team,
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        /* GraphQL */ `
          type Query {
            ok: Boolean
          }
          type Subscription {
            scores: Int @rateLimit(action: "scores", window: 60, limit: 2)
          }
        `,
      ],
      resolvers: {
        Subscription: {
          scores: {
            subscribe: async function* () {
              yield { scores: 1 };
            },
          },
        },
      },
    }),
  );
  return useServer(
    {
      schema,
      context: ({ connectionParams }) => ({ team: teamOf(connectionParams?.authToken) }),
    },
    new WebSocketServer({ server, path: '/graphql' }),
  );
}

/** The team a token belongs to: verify it here as the HTTP side does (this demo trusts it). */
function teamOf(token: unknown): string | undefined {
  return typeof token === 'string' && token.startsWith('team-') ? token.slice(5) : undefined;
}
