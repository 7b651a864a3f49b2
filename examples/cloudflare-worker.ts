import { makeExecutableSchema } from '@graphql-tools/schema';
import { createYoga, type YogaInitialContext } from 'graphql-yoga';
import { rateLimitDirective } from 'graphql-atomic-rate-limit';
import { createUpstashStore } from 'graphql-atomic-rate-limit/upstash';

interface Env {
  UPSTASH_REDIS_REST_URL: string; // https://<name>.upstash.io
  UPSTASH_REDIS_REST_TOKEN: string;
}

const appTypeDefs = /* GraphQL */ `
  type Query {
    search(q: String!): [String!]! @rateLimit(action: "search", window: 60, limit: 10)
    quote: String @rateLimit(action: "quote", window: 60, limit: 10, algorithm: SLIDING_WINDOW)
    weather: String @rateLimit(action: "weather", window: 60, limit: 10, algorithm: TOKEN_BUCKET)
    report: String @rateLimit(action: "report", window: 60, limit: 10, algorithm: CONCURRENCY)
  }
  type Mutation {
    submitFlag(flag: String!): Boolean! @rateLimit(action: "submit", window: 60, limit: 7)
  }
`;
const resolvers = {
  Query: {
    search: (_: unknown, { q }: { q: string }) => [q],
    quote: () => 'Simplicity is prerequisite for reliability.',
    weather: () => 'sunny',
    // a slow call: a CONCURRENCY slot is held while it runs
    report: () => new Promise<string>((resolve) => setTimeout(() => resolve('done'), 2_000)),
  },
  Mutation: { submitFlag: (_: unknown, { flag }: { flag: string }) => flag === 'CTF{edge}' },
};

// The env is known on the first request: the store and the schema are made then, once per
// isolate (a Worker's module scope may not fetch). The first requests wait for the set-up
// (scripts loaded; a bad token is said here), so that even the first burst is one EVALSHA each.
let served: ReturnType<typeof serve> | undefined;
function serve(env: Env) {
  const store = createUpstashStore({
    url: env.UPSTASH_REDIS_REST_URL,
    token: env.UPSTASH_REDIS_REST_TOKEN,
    timeoutMs: 1_000,
  });
  const { typeDefs, transformer, envelopPlugin } = rateLimitDirective<YogaInitialContext>({
    store,
    identify: ({ request }) => request.headers.get('x-api-key') ?? undefined,
    timeoutMs: 1_000,
  });
  const schema = transformer(
    makeExecutableSchema({ typeDefs: [typeDefs, appTypeDefs], resolvers }),
  );
  const yoga = createYoga({ schema, plugins: [envelopPlugin], graphqlEndpoint: '/graphql' });
  // hits do not need it to be exact: until then a hit may take one NOSCRIPT round trip more
  const ready = store.ready().catch((error: Error) => console.error(error.message));
  return { yoga, ready };
}

export default {
  async fetch(request: Request, env: Env, ctx: unknown) {
    served ??= serve(env);
    await served.ready;
    return served.yoga.fetch(request, ctx as object);
  },
};
