import 'reflect-metadata';
import { randomUUID } from 'node:crypto';

import { Module, UseGuards } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Args,
  Directive,
  Field,
  GraphQLModule,
  Int,
  Mutation,
  ObjectType,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import { Redis } from 'ioredis';

import { createRedisStore, type RateLimitStore } from '../../src';
import { RateLimit, RateLimitModule, RateLimitService } from '../../src/nestjs';
import { errorCodes, postGraphQL, type GraphQLResponse } from '../support/http';
import { AuthGuard, nestApps, type Ctx } from '../support/nest-apps';
import { freePort } from '../support/processes';
import { closeClients, connectRedis, redisUrl, uniquePrefix } from '../support/redis';

/*
 * RateLimitModule inside a real Nest application over HTTP, on the run's Redis: forRootAsync,
 * schema-first fields decided after their guards, a budget priced from code-first `@cost`,
 * start-up refusals, and what the module closes at shutdown.
 */

/** Options from another provider, as forRootAsync users make them. */
class Settings {
  readonly prefix = uniquePrefix();
}
@Module({ providers: [Settings], exports: [Settings] })
class SettingsModule {}

const { serve } = nestApps();
afterAll(closeClients);

const outcome = (r: GraphQLResponse, field: string): unknown =>
  r.body.data?.[field] ?? errorCodes(r)[0];

describe('schema-first with afterGuards, options from forRootAsync', () => {
  @Resolver('Mutation')
  class SchemaFirstResolver {
    @Mutation('submitFlag')
    @UseGuards(AuthGuard)
    submitFlag(): boolean {
      return false;
    }
  }

  function appModule(afterGuards: string[]): new () => object {
    @Module({
      imports: [
        RateLimitModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: async (settings: Settings) => ({
            store: createRedisStore({ client: await connectRedis(), prefix: settings.prefix }),
            identify: ({ req }: Ctx) => req.user?.team,
            afterGuards,
          }),
        }),
        GraphQLModule.forRootAsync<ApolloDriverConfig>({
          driver: ApolloDriver,
          inject: [RateLimitService],
          useFactory: (rateLimit: RateLimitService) =>
            rateLimit.graphqlOptions({
              typeDefs: `type Query { ok: Boolean }
                type Mutation {
                  submitFlag: Boolean @rateLimit(action: "submit", window: 60, limit: 3)
                }`,
            }),
        }),
      ],
      providers: [SchemaFirstResolver],
    })
    class AppModule {}
    return AppModule;
  }

  test('the guard sets the team counted; what it refuses counts nothing', async () => {
    const { url } = await serve(appModule(['Mutation.submitFlag']));
    const team = `team-${randomUUID()}`;
    const results = [];
    for (const token of [`banned-${team}`, `banned-${team}`, team, team, team, team]) {
      const response = await postGraphQL(url, 'mutation { submitFlag }', token);
      results.push(outcome(response, 'submitFlag'));
    }
    expect(results).toEqual(['FORBIDDEN', 'FORBIDDEN', false, false, false, 'RATE_LIMITED']);
  });

  test('afterGuards naming no field, or a field without @rateLimit, fails at start', async () => {
    await expect(serve(appModule(['Mutation.submitFlg']))).rejects.toThrow(
      'afterGuards names Mutation.submitFlg, which the schema has no field for',
    );
    await expect(serve(appModule(['Query.ok']))).rejects.toThrow(
      'Query.ok: decided after guards, but it has no resolver method',
    );
  });
});

describe('code-first', () => {
  @Resolver()
  class PricedResolver {
    @Query(() => Int)
    @Directive('@cost(weight: 5)')
    expensive(): number {
      return 1;
    }
  }

  @Module({
    imports: [
      RateLimitModule.forRoot({
        redis: redisUrl(),
        identify: ({ req }: Ctx) => req.headers.authorization,
        budget: { limit: 10, window: 60 },
      }),
      GraphQLModule.forRootAsync<ApolloDriverConfig>({
        driver: ApolloDriver,
        inject: [RateLimitService],
        useFactory: (rateLimit: RateLimitService) =>
          rateLimit.graphqlOptions({ autoSchemaFile: true }),
      }),
    ],
    providers: [PricedResolver],
  })
  class BudgetModule {}

  @Resolver()
  class TwoLimitsResolver {
    @Query(() => Boolean)
    ok(): boolean {
      return true;
    }

    @Mutation(() => Boolean)
    @UseGuards(AuthGuard)
    @RateLimit({ action: 'a', window: 60, limit: 5 }, { action: 'b', window: 60, limit: 2 })
    twice(@Args('n', { type: () => Int }) n: number): boolean {
      return n > 0;
    }
  }

  @ObjectType()
  class Challenge {
    @Field(() => String)
    id!: string;
  }

  @Resolver(() => Challenge)
  class ChallengeResolver {
    @Query(() => Challenge)
    challenge(): Challenge {
      return { id: 'a' };
    }

    @ResolveField(() => String)
    @UseGuards(AuthGuard)
    @RateLimit({ action: 'hint', window: 60, limit: 2 })
    hint(@Parent() challenge: Challenge): string {
      return `hint for ${challenge.id}`;
    }
  }

  @Module({
    imports: [
      RateLimitModule.forRoot({ redis: redisUrl(), identify: ({ req }: Ctx) => req.user?.team }),
      GraphQLModule.forRootAsync<ApolloDriverConfig>({
        driver: ApolloDriver,
        inject: [RateLimitService],
        useFactory: (rateLimit: RateLimitService) =>
          rateLimit.graphqlOptions({
            autoSchemaFile: true,
            fieldResolverEnhancers: ['guards', 'interceptors'],
          }),
      }),
    ],
    providers: [TwoLimitsResolver, ChallengeResolver],
  })
  class TwoLimitsModule {}

  test('@cost from @Directive prices the operation: 2 of 3 fit a budget of 10', async () => {
    const { url } = await serve(BudgetModule);
    const team = `team-${randomUUID()}`;
    const results = [];
    for (let i = 0; i < 3; i++) {
      results.push(outcome(await postGraphQL(url, '{ expensive }', team), 'expensive'));
    }
    expect(results).toEqual([1, 1, 'RATE_LIMITED']);
  });

  test('one @RateLimit with two limits decides both together', async () => {
    const { url } = await serve(TwoLimitsModule);
    const team = `team-${randomUUID()}`;
    const results = [];
    for (let i = 0; i < 3; i++) {
      results.push(outcome(await postGraphQL(url, 'mutation { twice(n: 1) }', team), 'twice'));
    }
    expect(results).toEqual([true, true, 'RATE_LIMITED']);
  });

  test('@RateLimit on a @ResolveField is decided after its guard', async () => {
    const { url } = await serve(TwoLimitsModule);
    const team = `team-${randomUUID()}`;
    const results = [];
    for (const token of [`banned-${team}`, team, team, team]) {
      const response = await postGraphQL(url, '{ challenge { hint } }', token);
      const challenge = response.body.data?.challenge as { hint: string | null } | undefined;
      results.push(challenge?.hint ?? errorCodes(response)[0]);
    }
    expect(results).toEqual(['FORBIDDEN', 'hint for a', 'hint for a', 'RATE_LIMITED']);
  });

  test('@RateLimit on a @ResolveField without interceptors on field resolvers fails at start', async () => {
    @Module({
      imports: [
        RateLimitModule.forRoot({ redis: redisUrl() }),
        GraphQLModule.forRootAsync<ApolloDriverConfig>({
          driver: ApolloDriver,
          inject: [RateLimitService],
          useFactory: (rateLimit: RateLimitService) =>
            rateLimit.graphqlOptions({ autoSchemaFile: true }),
        }),
      ],
      providers: [ChallengeResolver],
    })
    class NoFieldInterceptors {}
    await expect(serve(NoFieldInterceptors)).rejects.toThrow(
      "Challenge.hint: decided after guards, but Nest runs no interceptor on a field resolver: add fieldResolverEnhancers: ['guards', 'interceptors']",
    );
  });

  test('closes the store and the client it opened from `redis` at shutdown', async () => {
    const { app } = await serve(BudgetModule);
    const { opened } = app.get<
      RateLimitService,
      { opened: { client: Redis; store: RateLimitStore } }
    >(RateLimitService);
    const { client, store } = opened;
    expect(await client.ping()).toBe('PONG');
    const close = jest.spyOn(store, 'close');
    await app.close();
    expect(close).toHaveBeenCalledTimes(1);
    if (client.status !== 'end') await new Promise((ended) => client.once('end', ended));
    expect(client.status).toBe('end');
  });
});

test('a store given stays open at shutdown: its client is the application’s', async () => {
  const client = await connectRedis();
  @Module({
    imports: [
      RateLimitModule.forRoot({ store: createRedisStore({ client }) }),
      GraphQLModule.forRootAsync<ApolloDriverConfig>({
        driver: ApolloDriver,
        inject: [RateLimitService],
        useFactory: (r: RateLimitService) =>
          r.graphqlOptions({ typeDefs: 'type Query { ok: Int }' }),
      }),
    ],
  })
  class AppModule {}
  const { app } = await serve(AppModule);
  await app.close();
  expect(client.status).toBe('ready');
});

test('bad options fail at start, naming what was wrong', async () => {
  const both = { store: createRedisStore({ client: await connectRedis() }), redis: redisUrl() };
  @Module({ imports: [RateLimitModule.forRoot(both as never)] })
  class BothModule {}
  await expect(serve(BothModule)).rejects.toThrow('give exactly one of `store` and `redis`');
});

test('@RateLimit given twice on one method is refused where it is written', () => {
  expect(() => {
    class Twice {
      @RateLimit({ action: 'a', window: 60, limit: 5 })
      @RateLimit({ action: 'b', window: 60, limit: 2 })
      twice(): boolean {
        return true;
      }
    }
    return Twice;
  }).toThrow('Twice.twice: @RateLimit is given twice; pass every limit to one @RateLimit(...)');
});

test('a store outage is one log line, not one per refused call, once the application waited for its set-up', async () => {
  const lines: { level: string; text: string }[] = [];
  const heard =
    (level: string) =>
    (...parts: unknown[]): void => {
      lines.push({ level, text: parts.map(String).join(' ') });
    };
  const logger = {
    log: heard('log'),
    error: heard('error'),
    warn: heard('warn'),
    debug: () => undefined,
    verbose: () => undefined,
  };
  // nothing listens there: the store cannot set itself up
  const client = new Redis(await freePort(), '127.0.0.1', { maxRetriesPerRequest: 0 });
  client.on('error', () => undefined);
  @Resolver('Mutation')
  class SubmitResolver {
    @Mutation('submit')
    submit(): boolean {
      return true;
    }
  }
  @Module({
    imports: [
      RateLimitModule.forRoot({
        store: createRedisStore({ client, prefix: uniquePrefix() }),
        identify: () => 'everyone',
        // decided in Nest's interceptor, whose errors Nest's exception handler sees
        afterGuards: ['Mutation.submit'],
      }),
      GraphQLModule.forRootAsync<ApolloDriverConfig>({
        driver: ApolloDriver,
        inject: [RateLimitService],
        useFactory: (r: RateLimitService) =>
          r.graphqlOptions({
            typeDefs: `type Query { ok: Boolean }
              type Mutation { submit: Boolean @rateLimit(action: "submit", window: 60, limit: 3) }`,
          }),
      }),
    ],
    providers: [SubmitResolver],
  })
  class AppModule {}
  try {
    const { url } = await serve(AppModule, logger);
    const answers = [];
    for (let i = 0; i < 5; i++)
      answers.push(errorCodes(await postGraphQL(url, 'mutation { submit }', 'team'))[0]);
    expect(answers).toEqual(Array(5).fill('RATE_LIMIT_UNAVAILABLE'));
    const said = (level: string, pattern: RegExp) =>
      lines.filter((l) => l.level === level && pattern.test(l.text));
    expect(said('warn', /Rate limit store not set up within 5000 ms/)).toHaveLength(1);
    expect(lines.filter((l) => l.level === 'error')).toEqual([
      { level: 'error', text: expect.stringMatching(/^Rate limit store failing/) as unknown },
    ]);
  } finally {
    client.disconnect();
  }
});
