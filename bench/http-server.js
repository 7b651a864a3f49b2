'use strict';
/*
 * The reference server's GraphQL app for the HTTP benchmark: its schema
 * (server/schema/ctf.graphql), its data loader, bearer-token context and resolvers, all taken
 * from the server's build (server/dist), behind Apollo Server 5 on express as server/src/app.ts
 * serves them, with every @rateLimit of the schema rewritten for the variant and raised so that
 * nothing blocks. One variant per process:
 *   node bench/http-server.js <variant> <port> [redisUrl]
 *   ours         @rateLimit of this library (../dist) on Redis
 *   ours-plugin  the same, plus the library's Apollo plugin (RateLimit headers)
 *   none         the schema without any directive; the resolver is synchronous
 *   none-await   without the directive; the resolver awaits once, as a limited one does
 *   grld         graphql-rate-limit-directive on rate-limiter-flexible RateLimiterRedis
 * Data from the JSON file at CTF_DATA. Prints `listening <port>` once ready; SIGTERM stops it.
 */

const { readFileSync } = require('node:fs');
const { createServer } = require('node:http');
const { createRequire } = require('node:module');
const { join } = require('node:path');

const { createContextFactory } = require('../server/dist/context');
const { loadCtfData } = require('../server/dist/data');
const { createResolvers } = require('../server/dist/resolvers');

const [variant, portArg, redisUrl] = process.argv.slice(2);
const VARIANTS = ['ours', 'ours-plugin', 'none', 'none-await', 'grld'];
if (!VARIANTS.includes(variant)) {
  throw new Error(`variant must be one of ${VARIANTS.join(', ')}`);
}

// The comparison library only installs beside @graphql-tools/utils 10, so that variant takes
// Apollo, express, graphql and ioredis from bench/peers (its own package and lock file): the
// schema it executes is built by one graphql. The reference resolvers still load the root
// graphql for the errors they throw, which execution accepts from any instance.
const load = variant === 'grld' ? createRequire(join(__dirname, 'peers', 'package.json')) : require;
const { ApolloServer } = load('@apollo/server');
const { expressMiddleware } = load('@as-integrations/express5');
const { makeExecutableSchema } = load('@graphql-tools/schema');
const express = load('express');
const { GraphQLError } = load('graphql');
const { Redis } = load('ioredis');

const LIMIT = 1_000_000; // per team per window: far above what the run sends, so nothing blocks

/**
 * The reference schema with each @rateLimit raised to LIMIT, swapped for grld's, or removed.
 * Limits with `by` (submitFlag's site-wide one) are left out for every variant: the comparison
 * is of one per-team limit, which grld can express too. So are `@cost` and `@listSize`.
 */
function benchTypeDefs() {
  const sdl = readFileSync(join(__dirname, '..', 'server', 'schema', 'ctf.graphql'), 'utf8');
  let found = 0;
  const rewritten = sdl.replace(/@rateLimit\(([^)]*)\)/g, (_, args) => {
    found++;
    if (variant === 'none' || variant === 'none-await' || /\bby:/.test(args)) return '';
    if (variant === 'grld') {
      return `@rateLimit(limit: ${LIMIT}, duration: ${/window:\s*(\d+)/.exec(args)[1]})`;
    }
    return `@rateLimit(${args.replace(/limit:\s*\d+/, `limit: ${LIMIT}`)})`;
  });
  if (found === 0) throw new Error('server/schema/ctf.graphql has no @rateLimit to benchmark');
  // the cost directives price operations for the budget, which no variant here runs
  return rewritten.replace(/@(listSize|cost)\([^)]*\)/g, '');
}

function benchResolvers(data) {
  const resolvers = createResolvers(data);
  if (variant !== 'none-await') return resolvers;
  const { submitFlag } = resolvers.Mutation;
  return {
    ...resolvers,
    Mutation: {
      ...resolvers.Mutation,
      submitFlag: async (...args) => {
        await null;
        return submitFlag(...args);
      },
    },
  };
}

/** The schema of `variant`, with its plugins, on `redis` when it limits. */
function limitedSchema(typeDefs, resolvers, redis) {
  if (!redis) return { schema: makeExecutableSchema({ typeDefs, resolvers }), plugins: [] };
  const prefix = `bench-http-${process.pid}:`;
  if (variant === 'grld') {
    const { rateLimitDirective } = load('graphql-rate-limit-directive');
    const { RateLimiterRedis } = load('rate-limiter-flexible');
    const { rateLimitDirectiveTypeDefs, rateLimitDirectiveTransformer } = rateLimitDirective({
      // per team, as ours counts per identity (its default key is the field coordinate alone)
      keyGenerator: (_args, _source, _fieldArgs, context, info) => {
        if (!context.team) {
          throw new GraphQLError('Send Authorization: Bearer <team token>', {
            extensions: { code: 'UNAUTHENTICATED' },
          });
        }
        return `${context.team.id}:${info.parentType.name}.${info.fieldName}`;
      },
      limiterClass: RateLimiterRedis,
      limiterOptions: { storeClient: redis, keyPrefix: prefix },
    });
    const schema = rateLimitDirectiveTransformer(
      makeExecutableSchema({ typeDefs: [rateLimitDirectiveTypeDefs, typeDefs], resolvers }),
    );
    return { schema, plugins: [] };
  }
  const { createRedisStore, rateLimitDirective } = require('../dist');
  const directive = rateLimitDirective({ store: createRedisStore({ client: redis, prefix }) });
  const schema = directive.transformer(
    makeExecutableSchema({ typeDefs: [directive.typeDefs, typeDefs], resolvers }),
  );
  return { schema, plugins: variant === 'ours-plugin' ? [directive.plugin] : [] };
}

async function main() {
  const data = loadCtfData(process.env.CTF_DATA);
  let redis;
  if (variant !== 'none' && variant !== 'none-await') {
    redis = new Redis(redisUrl, {
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      lazyConnect: true,
    });
    await redis.connect();
  }
  const { schema, plugins } = limitedSchema(benchTypeDefs(), benchResolvers(data), redis);

  const app = express();
  const httpServer = createServer(app);
  const apollo = new ApolloServer({ schema, plugins, includeStacktraceInErrorResponses: false });
  await apollo.start();
  const contextOf = createContextFactory(data);
  app.use(
    '/graphql',
    express.json({ limit: '100kb' }),
    expressMiddleware(apollo, { context: async ({ req }) => contextOf(req.headers) }),
  );
  await new Promise((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(Number(portArg), '127.0.0.1', resolve);
  });
  process.stdout.write(`listening ${httpServer.address().port}\n`);

  const stop = async () => {
    httpServer.closeAllConnections?.();
    await apollo.stop().catch(() => undefined);
    httpServer.close();
    redis?.disconnect();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
  process.exit(1);
});
