import 'reflect-metadata';

import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Args,
  Context,
  createUnionType,
  Directive,
  Field,
  GraphQLModule,
  ID,
  InputType,
  Int,
  Mutation,
  ObjectType,
  Query,
  Resolver,
  Subscription,
} from '@nestjs/graphql';
import { addResolversToSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import { defer, type Observable } from 'rxjs';

import { createRedisStore } from '../../src';
import { RateLimit, RateLimitModule, RateLimitService } from '../../src/nestjs';
import {
  BUDGET,
  LEASE,
  LIMITS,
  SDL,
  replacementFor,
  resolversFor,
} from '../../kit/conformance-app';
import { connectRedis, uniquePrefix } from '../support/redis';
import { opened } from '../support/stores';
import type { Host, HostOptions, Served } from './hosts';
import { postJson, wsSubscriptions } from './hosts';

/*
 * The conformance app on NestJS 11 with the Apollo driver, as `RateLimitModule` and
 * `graphqlOptions()` wire it: code-first (`@RateLimit` on the resolver methods, `@cost` and
 * `@listSize` by `@Directive`) and schema-first (kit/conformance-app.js' SDL). Resolvers count
 * into the `runs` of their app's context; graphql-ws serves the subscriptions. `slow` answers an
 * Observable whose work runs when Nest subscribes to it, as `HttpService` does.
 */

type Runs = Record<string, number>;
type Ctx = { req: { headers: Record<string, unknown> }; runs: Runs };
const app = (ctx: Ctx) => resolversFor(ctx.runs);

@InputType()
class Filter {
  @Field(() => ID, { nullable: true })
  id?: string;
}

@ObjectType()
class Item {
  @Field(() => ID)
  id!: string;
}

@ObjectType()
class Cheap {
  @Field(() => String, { nullable: true })
  name?: string;
}

@ObjectType()
@Directive('@cost(weight: 40)')
class Dear {
  @Field(() => String, { nullable: true })
  name?: string;
}

const Found = createUnionType({
  name: 'Found',
  types: () => [Cheap, Dear] as const,
  resolveType: (value: { __typename: string }) => (value.__typename === 'Dear' ? Dear : Cheap),
});

@Resolver()
class CodeFirstResolver {
  @Query(() => Int, { nullable: true })
  @RateLimit({ action: 'hit', window: 60, limit: LIMITS.hit })
  hit(@Context() ctx: Ctx): number {
    return app(ctx).Query.hit();
  }

  @Query(() => Int, { nullable: true })
  @RateLimit({ action: 'lookup', window: 60, limit: LIMITS.lookup })
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- declares the argument
  lookup(@Context() ctx: Ctx, @Args('filter', { type: () => Filter }) _filter: Filter): number {
    return app(ctx).Query.lookup();
  }

  @Query(() => Int, { nullable: true })
  @RateLimit({ action: 'replaced', window: 60, limit: LIMITS.replaced })
  replaced(@Context() ctx: Ctx): number {
    return app(ctx).Query.replaced();
  }

  @Query(() => [Item])
  @Directive('@listSize(slicingArguments: ["first"])')
  items(
    @Context() ctx: Ctx,
    @Args('first', { type: () => Int }) first: number,
    @Args('returned', { type: () => Int }) returned: number,
  ): Item[] {
    return app(ctx).Query.items(undefined, { returned });
  }

  @Query(() => Found, { nullable: true })
  found(@Context() ctx: Ctx, @Args('dear', { type: () => Boolean }) dear: boolean): object {
    return app(ctx).Query.found(undefined, { dear });
  }

  @Query(() => Int, { nullable: true })
  @RateLimit({ action: 'slow', window: LEASE, limit: LIMITS.slow, algorithm: 'CONCURRENCY' })
  slow(@Context() ctx: Ctx, @Args('ms', { type: () => Int }) ms: number): Observable<number> {
    return defer(() => app(ctx).Query.slow(undefined, { ms }));
  }

  @Mutation(() => Int, { nullable: true })
  @RateLimit({ action: 'bump', window: 60, limit: LIMITS.bump })
  bump(@Context() ctx: Ctx): number {
    return app(ctx).Mutation.bump();
  }

  // @RateLimit is decided after guards, which Nest does not run on a subscription (it refuses
  // to start, naming the field): the directive's own limit counts the starts
  @Subscription(() => Int, { nullable: true })
  @Directive(`@rateLimit(action: "ticks", window: 60, limit: ${LIMITS.ticks})`)
  ticks(@Context() ctx: Ctx): AsyncIterator<unknown> {
    return app(ctx).Subscription.ticks.subscribe();
  }

  @Subscription(() => Int, { nullable: true })
  @Directive(
    `@rateLimit(action: "live", window: ${LEASE}, limit: ${LIMITS.live}, algorithm: CONCURRENCY)`,
  )
  live(@Context() ctx: Ctx): AsyncIterator<unknown> {
    return app(ctx).Subscription.live.subscribe();
  }
}

@Resolver('Query')
class SchemaFirstQuery {
  @Query('hit')
  hit(@Context() ctx: Ctx): number {
    return app(ctx).Query.hit();
  }

  @Query('lookup')
  lookup(@Context() ctx: Ctx): number {
    return app(ctx).Query.lookup();
  }

  @Query('replaced')
  replaced(@Context() ctx: Ctx): number {
    return app(ctx).Query.replaced();
  }

  @Query('items')
  items(@Context() ctx: Ctx, @Args('returned') returned: number): Item[] {
    return app(ctx).Query.items(undefined, { returned });
  }

  @Query('found')
  found(@Context() ctx: Ctx, @Args('dear') dear: boolean): object {
    return app(ctx).Query.found(undefined, { dear });
  }

  @Query('slow')
  slow(@Context() ctx: Ctx, @Args('ms') ms: number): Observable<number> {
    return defer(() => app(ctx).Query.slow(undefined, { ms }));
  }
}

@Resolver('Mutation')
class SchemaFirstMutation {
  @Mutation('bump')
  bump(@Context() ctx: Ctx): number {
    return app(ctx).Mutation.bump();
  }
}

@Resolver('Subscription')
class SchemaFirstSubscription {
  @Subscription('ticks')
  ticks(@Context() ctx: Ctx): AsyncIterator<unknown> {
    return app(ctx).Subscription.ticks.subscribe();
  }

  @Subscription('live')
  live(@Context() ctx: Ctx): AsyncIterator<unknown> {
    return app(ctx).Subscription.live.subscribe();
  }
}

function nest(style: 'code-first' | 'schema-first'): Host {
  return {
    name: `NestJS ${style}`,
    batching: true,
    subscriptions: true,
    async start(options: HostOptions): Promise<Served> {
      const runs: Runs = {};
      const store = await opened(
        createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
      );
      type Options = Omit<ApolloDriverConfig, 'driver'>;
      const schemaOf: Options =
        style === 'code-first' ? { autoSchemaFile: true } : { typeDefs: SDL };
      @Module({
        imports: [
          RateLimitModule.forRoot({
            store,
            identify: ({ req }: Ctx) => req.headers['x-identity'] as string | undefined,
            budget: BUDGET,
            timeoutMs: 2_000,
          }),
          GraphQLModule.forRootAsync<ApolloDriverConfig>({
            driver: ApolloDriver,
            inject: [RateLimitService],
            useFactory: (rateLimit: RateLimitService) => {
              const given = rateLimit.graphqlOptions<Options>({
                ...schemaOf,
                allowBatchedHttpRequests: true,
                subscriptions: { 'graphql-ws': true },
                context: (from: {
                  req?: Ctx['req'];
                  connectionParams?: { identity?: string };
                }) => ({
                  req: from.req ?? { headers: { 'x-identity': from.connectionParams?.identity } },
                  runs,
                }),
              });
              if (!options.replace) return given;
              const transform = given.transformSchema as (
                s: GraphQLSchema,
              ) => Promise<GraphQLSchema>;
              // another resolver put in the field's place after the library's transform ran
              return {
                ...given,
                transformSchema: async (schema: GraphQLSchema) =>
                  addResolversToSchema({
                    schema: await transform(schema),
                    resolvers: replacementFor(runs) as never,
                  }),
              };
            },
          }),
        ],
        providers:
          style === 'code-first'
            ? [CodeFirstResolver]
            : [SchemaFirstQuery, SchemaFirstMutation, SchemaFirstSubscription],
      })
      class AppModule {}
      const nestApp: INestApplication = await NestFactory.create(AppModule, {
        logger: false,
        abortOnError: false,
      });
      await nestApp.listen(0, '127.0.0.1');
      const url = `${await nestApp.getUrl()}/graphql`;
      const ws = wsSubscriptions(url.replace(/^http/, 'ws'), async () => ({ ...runs }));
      return {
        post: (body, identity, signal) => postJson(url, body, identity, signal),
        runs: async () => ({ ...runs }),
        subscribe: ws.subscribe,
        dropStart: ws.dropStart,
        async stop() {
          await ws.close();
          await nestApp.close();
        },
      };
    },
  };
}

export const NEST_HOSTS: readonly Host[] = [nest('code-first'), nest('schema-first')];
