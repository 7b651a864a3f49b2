import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';

import {
  BadRequestException,
  Injectable,
  Module,
  UseGuards,
  type CallHandler,
  type ExecutionContext,
  type LoggerService,
  type MiddlewareConsumer,
  type NestInterceptor,
  type NestMiddleware,
  type NestModule,
  type PipeTransform,
} from '@nestjs/common';
import { APP_INTERCEPTOR, NestFactory } from '@nestjs/core';
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
  Subscription,
} from '@nestjs/graphql';
import { retry, type Observable } from 'rxjs';

import { createRedisStore } from '../../src';
import { RateLimit, RateLimitModule, RateLimitService } from '../../src/nestjs';
import { releaseTogether } from '../support/barrier';
import { errorCodes, httpClient, postGraphQL, type GraphQLResponse } from '../support/http';
import { closeClients, connectRedis, uniquePrefix, waitFor } from '../support/redis';
import { AuthGuard, nestApps, type Ctx, type Req } from '../support/nest-apps';
import { opened } from '../support/stores';

/*
 * Every seam of a Nest application fails closed: a `@RateLimit` method never runs without a
 * decision made for that very run (retries, pipes, a GraphQLModule not built from
 * graphqlOptions(), a @Field hiding a @ResolveField), and what is refused is not logged as an
 * error. On the run's Redis.
 */

/** What the methods below ran: how many times each. */
const ran = new Map<string, number>();
const count = (key: string): number => ran.set(key, (ran.get(key) ?? 0) + 1).get(key) ?? 0;

const { serve, track } = nestApps();
afterAll(closeClients);

/**
 * Against an app whose `submit` (limit 3) and always-failing `flaky` are retried by an
 * interceptor: five submissions of one key run 3 times, and `flaky`, retried three times (four
 * runs asked for), runs the 3 its limit decided.
 */
async function expectEveryRunDecided(url: string): Promise<void> {
  const team = `team-${randomUUID()}`;
  const [good, bad] = [`good-${team}`, `bad-${team}`];
  const submitted = [];
  for (let i = 0; i < 5; i++) {
    const response = await postGraphQL(url, `mutation { submit(key: "${good}") }`, team);
    submitted.push(outcome(response, 'submit'));
  }
  expect(submitted).toEqual([true, true, true, 'RATE_LIMITED', 'RATE_LIMITED']);
  expect(ran.get(good)).toBe(3);
  const response = await postGraphQL(url, `mutation { flaky(key: "${bad}") }`, team);
  expect(errorCodes(response)).toEqual(['RATE_LIMITED']);
  expect(ran.get(bad)).toBe(3);
}

/** Captures what Nest logs, by level. */
class CapturedLogger implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];
  log = (m: unknown): void => this.add('log', m);
  error = (m: unknown): void => this.add('error', m);
  warn = (m: unknown): void => this.add('warn', m);
  private add(level: string, message: unknown): void {
    this.lines.push({
      level,
      message: message instanceof Error ? message.message : String(message),
    });
  }
}

/** The module's options on an opened store of the run's Redis, under a prefix of their own. */
const rateLimit = (options: Record<string, unknown> = {}) =>
  RateLimitModule.forRootAsync({
    useFactory: async () => ({
      store: await opened(
        createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
      ),
      identify: ({ req }: Ctx) => req.user?.team ?? req.headers.authorization,
      ...options,
    }),
  });

const wired = (extra: Partial<ApolloDriverConfig> = {}) =>
  GraphQLModule.forRootAsync<ApolloDriverConfig>({
    driver: ApolloDriver,
    inject: [RateLimitService],
    useFactory: (r: RateLimitService) => r.graphqlOptions({ autoSchemaFile: true, ...extra }),
  });

const outcome = (r: GraphQLResponse, field: string): unknown =>
  r.body.data?.[field] ?? errorCodes(r)[0];

@Resolver()
class SubmitResolver {
  @Query(() => Boolean)
  ok(): boolean {
    return true;
  }

  @Mutation(() => Boolean)
  @UseGuards(AuthGuard)
  @RateLimit({ action: 'submit', window: 60, limit: 3 })
  submit(@Args('key') key: string): boolean {
    count(key);
    return true;
  }

  @Mutation(() => Boolean)
  @UseGuards(AuthGuard)
  @RateLimit({ action: 'flaky', window: 60, limit: 3 })
  flaky(@Args('key') key: string): boolean {
    count(key);
    throw new Error('flaky');
  }
}

/** Refuses a negative `n`, as ParseIntPipe refuses what is not a number. */
class NonNegative implements PipeTransform<number, number> {
  transform(n: number): number {
    if (n < 0) throw new BadRequestException('n must not be negative');
    return n;
  }
}

/** An application-wide interceptor that retries a failed call three times. */
class Retry implements NestInterceptor {
  intercept(_: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(retry(3));
  }
}
@Module({ providers: [{ provide: APP_INTERCEPTOR, useClass: Retry }] })
class RetryModule {}

describe('an interceptor that retries', () => {
  @Module({ imports: [RetryModule, rateLimit(), wired()], providers: [SubmitResolver] })
  class RetryFirst {}
  @Module({ imports: [rateLimit(), wired(), RetryModule], providers: [SubmitResolver] })
  class RetryLast {}

  test.each([
    ['before', RetryFirst],
    ['after', RetryLast],
  ])('registered %s the library’s: every run is a hit of its own', async (_, module) => {
    await expectEveryRunDecided((await serve(module)).url);
  });
});

describe('schema-first afterGuards', () => {
  @Resolver('Mutation')
  class SchemaFirstResolver {
    @Mutation('submit')
    @UseGuards(AuthGuard)
    submit(@Args('key') key: string): boolean {
      count(key);
      return true;
    }

    @Mutation('flaky')
    @UseGuards(AuthGuard)
    flaky(@Args('key') key: string): boolean {
      count(key);
      throw new Error('flaky');
    }

    @Mutation('piped')
    @UseGuards(AuthGuard)
    piped(@Args('n', NonNegative) n: number): number {
      return n;
    }
  }

  const schemaFirst = GraphQLModule.forRootAsync<ApolloDriverConfig>({
    driver: ApolloDriver,
    inject: [RateLimitService],
    useFactory: (r: RateLimitService) =>
      r.graphqlOptions({
        typeDefs: `type Query { ok: Boolean }
          type Mutation {
            submit(key: String!): Boolean @rateLimit(action: "submit", window: 60, limit: 3)
            flaky(key: String!): Boolean @rateLimit(action: "flaky", window: 60, limit: 3)
            piped(n: Int!): Int @rateLimit(action: "piped", window: 60, limit: 3)
          }`,
      }),
  });
  const afterGuards = ['Mutation.submit', 'Mutation.flaky', 'Mutation.piped'];

  @Module({
    imports: [RetryModule, rateLimit({ afterGuards }), schemaFirst],
    providers: [SchemaFirstResolver],
  })
  class RetryFirst {}

  @Module({ imports: [rateLimit({ afterGuards }), schemaFirst], providers: [SchemaFirstResolver] })
  class NoRetry {}

  test('an interceptor before the library’s that retries: every pass is a hit of its own', async () => {
    await expectEveryRunDecided((await serve(RetryFirst)).url);
  });

  test('pipes run after the decision: a call a pipe refuses counts, as documented', async () => {
    const { url } = await serve(NoRetry);
    const team = `team-${randomUUID()}`;
    const results = [];
    for (const n of [-1, -1, 1, 1]) {
      results.push(outcome(await postGraphQL(url, `mutation { piped(n: ${n}) }`, team), 'piped'));
    }
    expect(results).toEqual(['BAD_REQUEST', 'BAD_REQUEST', 1, 'RATE_LIMITED']);
  });
});

describe('a GraphQLModule not built from graphqlOptions()', () => {
  test('a plain forRoot beside @RateLimit refuses to start, naming the method', async () => {
    @Module({
      imports: [
        rateLimit(),
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
      ],
      providers: [SubmitResolver],
    })
    class PlainModule {}
    await expect(serve(PlainModule)).rejects.toThrow(
      '@RateLimit on SubmitResolver.submit, SubmitResolver.flaky, but no GraphQLModule options were built with RateLimitService.graphqlOptions()',
    );
  });

  test('a second endpoint of its own answers an error naming the field, never runs it', async () => {
    @Module({
      imports: [
        rateLimit(),
        wired(),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          autoSchemaFile: true,
          path: '/other',
        }),
      ],
      providers: [SubmitResolver],
    })
    class TwoEndpoints {}
    const { url } = await serve(TwoEndpoints);
    const other = url.replace(/\/graphql$/, '/other');
    const key = `other-${randomUUID()}`;
    const responses = [];
    for (let i = 0; i < 4; i++) {
      responses.push(await postGraphQL(other, `mutation { submit(key: "${key}") }`, 'team'));
    }
    expect(responses.map((r) => errorCodes(r)[0])).toEqual(Array(4).fill('INTERNAL_SERVER_ERROR'));
    expect(ran.get(key)).toBeUndefined();
    // the message reaches the server's logs: Apollo masks it for clients only in production
    expect(responses[0]?.body.errors?.[0]?.message).toBe(
      'Mutation.submit: @RateLimit on SubmitResolver.submit, but no decision waits for the call: ' +
        'GraphQLModule options not built with RateLimitService.graphqlOptions()',
    );
    // the endpoint built from graphqlOptions() limits as ever
    const wiredKey = `wired-${randomUUID()}`;
    const results = [];
    for (let i = 0; i < 4; i++) {
      const response = await postGraphQL(url, `mutation { submit(key: "${wiredKey}") }`, key);
      results.push(outcome(response, 'submit'));
    }
    expect(results).toEqual([true, true, true, 'RATE_LIMITED']);
  });

  test('a resolver served only by a second, plain endpoint refuses to start, naming its field', async () => {
    @Resolver()
    class OkResolver {
      @Query(() => Boolean)
      ok(): boolean {
        return true;
      }
    }
    @Module({ providers: [OkResolver] })
    class OkModule {}
    @Module({ providers: [SubmitResolver] })
    class SubmitModule {}
    @Module({
      imports: [
        rateLimit(),
        OkModule,
        SubmitModule,
        wired({ include: [OkModule] }),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          autoSchemaFile: true,
          path: '/other',
          include: [SubmitModule],
        }),
      ],
    })
    class Split {}
    await expect(serve(Split)).rejects.toThrow(
      '@RateLimit on Mutation.submit (SubmitResolver.submit), Mutation.flaky (SubmitResolver.flaky), but the schema built with RateLimitService.graphqlOptions() has no such field',
    );
  });
});

test('a @RateLimit method called directly, outside any decision, throws', () => {
  expect(() => new SubmitResolver().submit('direct')).toThrow(
    'SubmitResolver.submit: a @RateLimit method ran with no rate-limit decision for the call',
  );
  expect(ran.get('direct')).toBeUndefined();
});

test('a @ResolveField whose @ObjectType also declares the field with @Field is limited', async () => {
  @ObjectType()
  class Challenge {
    @Field(() => String)
    id!: string;

    @Field(() => String)
    hint!: string;
  }

  @Resolver(() => Challenge)
  class ChallengeResolver {
    @Query(() => Challenge)
    challenge(): Challenge {
      return { id: 'a', hint: '' };
    }

    @ResolveField(() => String)
    @UseGuards(AuthGuard)
    @RateLimit({ action: 'hint', window: 60, limit: 2 })
    hint(@Parent() challenge: Challenge): string {
      return `hint for ${challenge.id}`;
    }
  }

  @Module({
    imports: [rateLimit(), wired({ fieldResolverEnhancers: ['guards', 'interceptors'] })],
    providers: [ChallengeResolver],
  })
  class HiddenModule {}
  const { url } = await serve(HiddenModule);
  const team = `team-${randomUUID()}`;
  const results = [];
  for (const token of [undefined, team, team, team]) {
    const response = await postGraphQL(url, '{ challenge { hint } }', token);
    const challenge = response.body.data?.challenge as { hint: string | null } | undefined;
    results.push(challenge?.hint ?? errorCodes(response)[0]);
  }
  expect(results).toEqual(['FORBIDDEN', 'hint for a', 'hint for a', 'RATE_LIMITED']);
});

test('@Directive(@rateLimit) on a @ResolveField dropped for the @Field’s own directives: refused at start', async () => {
  @ObjectType()
  class Post {
    @Field(() => String)
    id!: string;

    @Field(() => String)
    @Directive('@deprecated(reason: "read body")')
    text!: string;

    @Field(() => String)
    body!: string;
  }

  @Resolver(() => Post)
  class PostResolver {
    @Query(() => Post)
    post(): Post {
      return { id: 'a', text: '', body: '' };
    }

    @ResolveField(() => String)
    @Directive('@rateLimit(action: "text", window: 60, limit: 2)')
    text(): string {
      return 'text';
    }

    @ResolveField(() => String)
    @Directive('@rateLimit(action: "body", window: 60, limit: 2)')
    body(): string {
      return 'body';
    }
  }

  @Module({ imports: [rateLimit(), wired()], providers: [PostResolver] })
  class PostModule {}
  await expect(serve(PostModule)).rejects.toThrow(
    "Post.text: the @Directive('@rateLimit(...)') of PostResolver.text is dropped: Nest keeps the directives of the @ObjectType's own @Field text",
  );

  // a @Field without directives of its own takes the @ResolveField's: limited, not refused
  @Resolver(() => Post)
  class BodyResolver {
    @Query(() => Post)
    post(): Post {
      return { id: 'a', text: '', body: '' };
    }

    @ResolveField(() => String)
    @Directive('@rateLimit(action: "body", window: 60, limit: 2)')
    body(): string {
      return 'body';
    }
  }
  @Module({ imports: [rateLimit(), wired()], providers: [BodyResolver] })
  class BodyModule {}
  const { url } = await serve(BodyModule);
  const team = `team-${randomUUID()}`;
  const results = [];
  for (let i = 0; i < 3; i++) {
    const response = await postGraphQL(url, '{ post { body } }', team);
    const post = response.body.data?.post as { body: string | null } | undefined;
    results.push(post?.body ?? errorCodes(response)[0]);
  }
  expect(results).toEqual(['body', 'body', 'RATE_LIMITED']);
});

test('@RateLimit on a @Subscription is refused at start, naming the field', async () => {
  @Resolver()
  class EventsResolver {
    @Query(() => Boolean)
    ok(): boolean {
      return true;
    }

    @Subscription(() => Int, { resolve: (n: number) => n })
    @RateLimit({ action: 'watch', window: 60, limit: 2 })
    ticks(): AsyncIterator<number> {
      return (async function* () {
        yield 1;
      })();
    }
  }

  @Module({ imports: [rateLimit(), wired()], providers: [EventsResolver] })
  class EventsModule {}
  await expect(serve(EventsModule)).rejects.toThrow(
    'Subscription.ticks: @RateLimit and afterGuards do not limit subscriptions yet; limit a Subscription field with @rateLimit in the SDL',
  );
});

describe('pipes', () => {
  @Resolver()
  class PipedResolver {
    @Query(() => Boolean)
    ok(): boolean {
      return true;
    }

    @Mutation(() => Int)
    @UseGuards(AuthGuard)
    @RateLimit({ action: 'piped', window: 60, limit: 3 })
    piped(@Args('n', { type: () => Int }, NonNegative) n: number): number {
      return n;
    }
  }

  @Module({ imports: [rateLimit(), wired()], providers: [PipedResolver] })
  class PipedModule {}

  test('10 good and 10 refused by a pipe at once: exactly 3 good pass, the refused count nothing', async () => {
    const { url } = await serve(PipedModule);
    const team = `team-${randomUUID()}`;
    const clients = Array.from({ length: 20 }, () => httpClient());
    try {
      const responses = await releaseTogether(20, async (i) => {
        const n = i % 2 === 0 ? 1 : -1;
        return () => (clients[i] ?? httpClient()).post(url, `mutation { piped(n: ${n}) }`, team);
      });
      const good = responses.filter((_, i) => i % 2 === 0).map((r) => outcome(r, 'piped'));
      const bad = responses.filter((_, i) => i % 2 === 1).map((r) => outcome(r, 'piped'));
      expect(good.filter((r) => r === 1)).toHaveLength(3);
      expect(good.filter((r) => r !== 1)).toEqual(Array(7).fill('RATE_LIMITED'));
      expect(bad).toEqual(Array(10).fill('BAD_REQUEST'));
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });
});

test('refusals are answered, not logged as errors', async () => {
  const logger = new CapturedLogger();
  @Module({ imports: [rateLimit(), wired()], providers: [SubmitResolver] })
  class LoggedModule {}
  const { url } = await serve(LoggedModule, logger);
  const team = `team-${randomUUID()}`;
  const key = `logged-${team}`;
  const results = [];
  for (let i = 0; i < 5; i++) {
    results.push(
      outcome(await postGraphQL(url, `mutation { submit(key: "${key}") }`, team), 'submit'),
    );
  }
  expect(results).toEqual([true, true, true, 'RATE_LIMITED', 'RATE_LIMITED']);
  // what the library refuses is an answer; what the application throws is still logged
  expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
  await postGraphQL(url, `mutation { flaky(key: "${key}") }`, team);
  expect(logger.lines.filter((l) => l.level === 'error').map((l) => l.message)).toEqual(['flaky']);
});

describe('a budget with guards', () => {
  /** The documented recipe: authentication as a middleware, which runs before the budget. */
  @Injectable()
  class AuthMiddleware implements NestMiddleware {
    use(req: Req, _res: unknown, next: () => void): void {
      const team = req.headers.authorization?.replace(/^Bearer /, '');
      if (team) req.user = { team };
      next();
    }
  }

  @Resolver()
  class PricedResolver {
    @Query(() => Int)
    @UseGuards(AuthGuard)
    @Directive('@cost(weight: 5)')
    expensive(): number {
      return 1;
    }
  }

  @Module({
    imports: [
      RateLimitModule.forRootAsync({
        useFactory: async () => ({
          store: await opened(
            createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
          ),
          identify: ({ req }: Ctx) => req.user?.team,
          budget: { limit: 10, window: 60 },
        }),
      }),
      wired(),
    ],
    providers: [PricedResolver],
  })
  class BudgetModule implements NestModule {
    configure(consumer: MiddlewareConsumer): void {
      consumer.apply(AuthMiddleware).forRoutes('graphql');
    }
  }

  test('identify reads what a middleware set: the team is charged, a stranger refused', async () => {
    const { url } = await serve(BudgetModule);
    const team = `team-${randomUUID()}`;
    const results = [];
    for (let i = 0; i < 3; i++) {
      results.push(outcome(await postGraphQL(url, '{ expensive }', team), 'expensive'));
    }
    expect(results).toEqual([1, 1, 'RATE_LIMITED']);
    expect(errorCodes(await postGraphQL(url, '{ expensive }'))).toEqual(['UNAUTHENTICATED']);
  });
});

test('forRoot({ redis }) with Redis down logs the outage once through Nest’s logger', async () => {
  const port = await closedPort();
  const logger = new CapturedLogger();
  const printed: unknown[] = [];
  const print = jest.spyOn(console, 'error').mockImplementation((...args) => printed.push(args));
  try {
    @Module({
      imports: [
        RateLimitModule.forRoot({ redis: `redis://127.0.0.1:${port}`, identify: () => 'x' }),
      ],
    })
    class DownModule {}
    const app = await NestFactory.create(DownModule, { logger, abortOnError: false });
    track(app);
    await app.init();
    const outages = (): string[] =>
      logger.lines.filter((l) => l.level === 'error').map((l) => l.message);
    await waitFor('the outage to be logged', () => outages().length > 0);
    // ioredis retries every 50-2000 ms: a few seconds are several reconnect attempts
    await new Promise((r) => setTimeout(r, 3000));
    expect(outages()).toEqual([expect.stringMatching(/^Redis unreachable \(.*ECONNREFUSED.*\)/)]);
    expect(printed).toEqual([]);
  } finally {
    print.mockRestore();
  }
}, 30_000);

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}
