'use strict';
/*
 * A CTF-like Apollo Server 5 on express for the HTTP benchmark, built like src/server/app.ts
 * (bearer token -> team by digest, flag checked in constant time) but with a bench schema whose
 * limit never blocks. One variant per process:
 *   node bench/http-server.js <variant> <port> [redisUrl]
 *   ours         @rateLimit of this library (../dist) on Redis
 *   ours-plugin  the same, plus the library's Apollo plugin (RateLimit headers)
 *   none         the same server without any directive; the resolver is synchronous
 *   none-await   without the directive; the resolver awaits once, as a limited one does
 *   grld         graphql-rate-limit-directive on rate-limiter-flexible RateLimiterRedis, with
 *                every dependency loaded from bench/peers (its own package and lock file)
 * Data from the JSON file at CTF_DATA. Prints `listening <port>` once ready; SIGTERM stops it.
 */

const { createHash, timingSafeEqual } = require('node:crypto');
const { readFileSync } = require('node:fs');
const { createServer } = require('node:http');
const { createRequire } = require('node:module');
const { join } = require('node:path');

const [variant, portArg, redisUrl] = process.argv.slice(2);
const VARIANTS = ['ours', 'ours-plugin', 'none', 'none-await', 'grld'];
if (!VARIANTS.includes(variant)) {
  throw new Error(`variant must be one of ${VARIANTS.join(', ')}`);
}

// The comparison library only installs beside @graphql-tools/utils 10, so that variant takes
// Apollo, express, graphql and ioredis from bench/peers too: one graphql instance per process.
const load = variant === 'grld' ? createRequire(join(__dirname, 'peers', 'package.json')) : require;
const { ApolloServer } = load('@apollo/server');
const { expressMiddleware } = load('@as-integrations/express5');
const { makeExecutableSchema } = load('@graphql-tools/schema');
const express = load('express');
const { GraphQLError } = load('graphql');
const { Redis } = load('ioredis');

const LIMIT = 1_000_000; // per team per minute: far above what the run sends, so nothing blocks

const data = JSON.parse(readFileSync(process.env.CTF_DATA, 'utf8'));

const directiveFor = {
  ours: `@rateLimit(action: "submit", window: 60, limit: ${LIMIT})`,
  'ours-plugin': `@rateLimit(action: "submit", window: 60, limit: ${LIMIT})`,
  none: '',
  'none-await': '',
  grld: `@rateLimit(limit: ${LIMIT}, duration: 60)`,
};

const appTypeDefs = /* GraphQL */ `
  type Query {
    ping: Boolean
  }
  type Mutation {
    submitFlag(challengeId: ID!, flag: String!): Submission! ${directiveFor[variant]}
  }
  type Submission {
    correct: Boolean!
    challengeId: ID!
  }
`;

const digest = (value) => createHash('sha256').update(value).digest();
const byToken = new Map(data.teams.map((team) => [digest(team.token).toString('hex'), team]));
const challenges = new Map(data.challenges.map((c) => [c.id, c]));

/** As the reference server: the team from `Authorization: Bearer <token>`, looked up by digest. */
function contextOf(headers) {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
  return { team: match?.[1] ? byToken.get(digest(match[1]).toString('hex')) : undefined };
}

function submit(args, context) {
  if (!context.team) {
    throw new GraphQLError('Send Authorization: Bearer <team token>', {
      extensions: { code: 'UNAUTHENTICATED' },
    });
  }
  const challenge = challenges.get(args.challengeId);
  if (!challenge) {
    throw new GraphQLError(`No challenge with id ${JSON.stringify(args.challengeId)}`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  const correct = timingSafeEqual(digest(challenge.flag), digest(args.flag));
  return { correct, challengeId: challenge.id };
}

const submitFlag =
  variant === 'none'
    ? (_source, args, context) => submit(args, context)
    : async (_source, args, context) => {
        if (variant === 'none-await') await null;
        return submit(args, context);
      };

async function main() {
  const resolvers = { Mutation: { submitFlag } };
  let schema;
  let redis;
  const plugins = [];
  if (variant === 'none' || variant === 'none-await') {
    schema = makeExecutableSchema({ typeDefs: appTypeDefs, resolvers });
  } else {
    redis = new Redis(redisUrl, {
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      lazyConnect: true,
    });
    await redis.connect();
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
      schema = rateLimitDirectiveTransformer(
        makeExecutableSchema({ typeDefs: [rateLimitDirectiveTypeDefs, appTypeDefs], resolvers }),
      );
    } else {
      const { createRedisStore, rateLimitDirective } = require('../dist');
      const { typeDefs, transformer, plugin } = rateLimitDirective({
        store: createRedisStore({ client: redis, prefix }),
      });
      schema = transformer(makeExecutableSchema({ typeDefs: [typeDefs, appTypeDefs], resolvers }));
      if (variant === 'ours-plugin') plugins.push(plugin);
    }
  }

  const app = express();
  const httpServer = createServer(app);
  const apollo = new ApolloServer({ schema, plugins, includeStacktraceInErrorResponses: false });
  await apollo.start();
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
