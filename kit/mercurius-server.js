// @ts-check
'use strict';
/*
 * Mercurius (graphql-jit per `JIT`) with the built library (../dist) and `Mutation.submitFlag`
 * limited to 2 per 60 s per `authorization` header, on Redis at `REDIS_URL` under
 * `RATE_LIMIT_PREFIX`. `LATE` redefines the field after mercuriusRateLimit was registered:
 * `resolvers` (defineResolvers) or `loaders` (defineLoaders) before the app is ready,
 * `running` (defineResolvers) once it listens. Prints `Ready at <url>` once it listens, or
 * `Refused: <message>` and exits 1 when it does not start. Each call that reaches the late
 * resolver prints `ran late`.
 */

const Fastify = require('fastify');
const mercurius = require('mercurius');
const { Redis } = require('ioredis');
const { createRedisStore, rateLimitDirective } = require('../dist');
const { mercuriusRateLimit } = require('../dist/mercurius');

async function main() {
  const redis = new Redis(process.env.REDIS_URL ?? '');
  const directive = rateLimitDirective({
    store: createRedisStore({ client: redis, prefix: process.env.RATE_LIMIT_PREFIX }),
    identify: (/** @type {any} */ { reply }) => reply.request.headers.authorization,
    timeoutMs: 2_000,
  });
  const schema = `type Query { ok: Boolean }
    type Mutation { submitFlag: Boolean @rateLimit(action: "submit", window: 60, limit: 2) }`;
  const late = () => {
    console.log('ran late');
    return true;
  };
  const app = Fastify();
  app.addHook('onClose', () => redis.quit());
  process.once('SIGTERM', () => void app.close());
  await app.register(mercurius, {
    schema: [directive.typeDefs, schema],
    resolvers: { Mutation: { submitFlag: () => false } },
    jit: Number(process.env.JIT ?? 0),
  });
  await app.register(mercuriusRateLimit, { directive });
  const when = process.env.LATE;
  if (when === 'resolvers') app.graphql.defineResolvers({ Mutation: { submitFlag: late } });
  if (when === 'loaders') {
    app.graphql.defineLoaders({ Mutation: { submitFlag: async (queries) => queries.map(late) } });
  }
  try {
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    if (when === 'running') app.graphql.defineResolvers({ Mutation: { submitFlag: late } });
    console.log(`Ready at ${address}/graphql`);
  } catch (error) {
    console.log(`Refused: ${error instanceof Error ? error.message : String(error)}`);
    await redis.quit();
    process.exitCode = 1;
  }
}

void main();
