import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import SchemaBuilder from '@pothos/core';
import DirectivesPlugin from '@pothos/plugin-directives';
import { Redis } from 'ioredis';
import { createRedisStore, rateLimitDirective } from 'graphql-atomic-rate-limit';

type Context = { team?: { id: string } };

// Without Redis (one process only): store: createMemoryStore(), and no client to close.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
const { transformer, plugin } = rateLimitDirective<Context>({
  store: createRedisStore({ client: redis }),
});
const builder = new SchemaBuilder<{
  Context: Context;
  Directives: {
    rateLimit: {
      locations: 'FIELD_DEFINITION' | 'OBJECT';
      args: { action: string; window: number; limit: number };
    };
  };
}>({ plugins: [DirectivesPlugin] });
builder.queryType({ fields: (t) => ({ ok: t.boolean({ resolve: () => true }) }) });
builder.mutationType({
  fields: (t) => ({
    submitFlag: t.boolean({
      args: { flag: t.arg.string({ required: true }) },
      directives: [{ name: 'rateLimit', args: { action: 'submit', window: 60, limit: 3 } }],
      resolve: (_, args) => args.flag === 'CTF{hi}',
    }),
  }),
});
const schema = transformer(builder.toSchema());
const server = new ApolloServer<Context>({ schema, plugins: [plugin] });

void startStandaloneServer(server, {
  listen: { port: Number(process.env.PORT ?? 4000) },
  context: async ({ req }) => {
    const token = req.headers.authorization?.replace(/^Bearer /, '');
    return { team: token ? { id: token } : undefined };
  },
}).then(({ url }) => console.log(`Ready at ${url}`));
process.once('SIGTERM', () => void server.stop().then(() => redis.quit()));
