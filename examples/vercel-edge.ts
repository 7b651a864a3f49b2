import { makeExecutableSchema } from '@graphql-tools/schema';
import { createYoga, type YogaInitialContext } from 'graphql-yoga';
import { rateLimitDirective } from 'graphql-atomic-rate-limit';
import { createUpstashStore } from 'graphql-atomic-rate-limit/upstash';

export const config = { runtime: 'edge' }; // api/graphql.ts of a Vercel project

// Vercel Edge has process.env at module scope; the store does no I/O until its first hit.
const store = createUpstashStore({
  url: process.env.UPSTASH_REDIS_REST_URL!, // https://<name>.upstash.io
  token: process.env.UPSTASH_REDIS_REST_TOKEN!,
  timeoutMs: 1_000,
});
const { typeDefs, transformer, envelopPlugin } = rateLimitDirective<YogaInitialContext>({
  store,
  identify: ({ request }) => request.headers.get('x-api-key') ?? undefined,
  timeoutMs: 1_000,
});
const appTypeDefs = /* GraphQL */ `
  type Query {
    search(q: String!): [String!]! @rateLimit(action: "search", window: 60, limit: 10)
  }
`;
const resolvers = { Query: { search: (_: unknown, { q }: { q: string }) => [q] } };
const schema = transformer(makeExecutableSchema({ typeDefs: [typeDefs, appTypeDefs], resolvers }));
const yoga = createYoga({ schema, plugins: [envelopPlugin], graphqlEndpoint: '/api/graphql' });

export default (request: Request) => yoga.fetch(request);
