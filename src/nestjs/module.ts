// @nestjs/core first: without Nest installed, the error names the package Nest apps install first
import { APP_FILTER, APP_INTERCEPTOR, DiscoveryModule, DiscoveryService } from '@nestjs/core';
import {
  Logger,
  type DynamicModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { GraphQLDirective } from 'graphql';

import { rateLimitDirective, type RateLimitDirective } from '../directive';
import { RateLimitConfigError } from '../errors';
import type { RateLimitDirectiveOptions } from '../options/directive-options';
import { createRedisStore } from '../stores/redis/redis-store';
import type { RateLimitStore } from '../stores/store';
import { afterGuards, type AfterGuards } from './after-guards';
import { directiveObjects, withRateLimit, type GraphQLModuleOptionsShape } from './graphql-options';
import { markedMethods } from './gate';
import { RateLimitInterceptor } from './interceptor';
import { RefusalFilter } from './refusal-filter';
import { outageLog, setUpBeforeServing } from './store-health';

/** The ioredis client the module opened from `redis`, as far as it closes it. */
interface OpenedClient {
  readonly status: string;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/**
 * The options of `rateLimitDirective`, with the store given either as `store` (yours: you close
 * its client) or as `redis`, a Redis URL the module connects to and closes at shutdown.
 */
export type RateLimitModuleOptions<TContext = any> = Omit<
  RateLimitDirectiveOptions<TContext>,
  'store'
> & {
  /**
   * Schema-first: fields (`'Mutation.submitFlag'`) whose SDL `@rateLimit` is decided after the
   * guards of their resolver method, as `@RateLimit` does for code-first.
   * @default []
   */
  readonly afterGuards?: readonly string[] | undefined;
} & (
    | { readonly store: RateLimitStore; readonly redis?: undefined }
    | { readonly redis: string; readonly store?: undefined }
  );

/** How `forRootAsync` makes the options, as Nest's other modules take theirs. */
export interface RateLimitModuleAsyncOptions<TContext = any> {
  /** Modules whose providers `useFactory` injects. */
  readonly imports?: DynamicModule['imports'];
  /** Providers handed to `useFactory`, in order. */
  readonly inject?: readonly unknown[];
  readonly useFactory: (
    ...args: any[]
  ) => RateLimitModuleOptions<TContext> | Promise<RateLimitModuleOptions<TContext>>;
}

/**
 * The limiter of one Nest application, injectable anywhere once `RateLimitModule` is imported.
 * `graphqlOptions` wires it into `GraphQLModule`; `directive` has `peek`, `reset` and the parts.
 */
export class RateLimitService implements OnApplicationBootstrap, OnApplicationShutdown {
  /** The directive itself: `peek`, `reset`, `typeDefs`, `transformer`, `plugin`. */
  readonly directive: RateLimitDirective;
  /**
   * Its directives as `GraphQLDirective` objects, for code-first's
   * `buildSchemaOptions.directives` (`@cost` and `@listSize` too when a budget is set).
   */
  readonly directives: readonly GraphQLDirective[];
  /** @internal decisions waiting for their guards */
  readonly pending: AfterGuards;
  private readonly store: RateLimitStore;
  private readonly logger: Logger;

  /**
   * @internal made by `RateLimitModule`; `opened` is the client it connected to and the store it
   * made from it, if any.
   */
  constructor(
    options: RateLimitDirectiveOptions,
    coordinates: readonly string[] | undefined,
    resolvers: () => readonly object[],
    private readonly opened?: { readonly client: OpenedClient; readonly store: RateLimitStore },
  ) {
    this.store = options.store;
    const logger = new Logger('RateLimitModule');
    this.logger = logger;
    this.directive = rateLimitDirective({
      ...options,
      onDecision: outageLog(logger, options.onDecision),
    });
    const name = options.name ?? 'rateLimit';
    this.directives = directiveObjects(this.directive.typeDefs, name, !!options.budget);
    this.pending = afterGuards(this.directive.transformer, name, coordinates, resolvers);
  }

  /**
   * `GraphQLModule`'s options with the limiter wired in: the schema transform (after yours),
   * the Apollo plugin (headers, 429, budget, start-up check), and the directives' definitions.
   */
  graphqlOptions<T extends GraphQLModuleOptionsShape>(options: T): T {
    const { typeDefs, plugin } = this.directive;
    const { transform } = this.pending;
    return withRateLimit(options, { typeDefs, plugin, directives: this.directives, transform });
  }

  /**
   * Waits for the store's set-up (connection, versions, scripts) before the application serves,
   * at most the store's allowance (`setupWaitMs`, 5 s): past it the application serves, and its
   * limited fields fail closed until the store can decide.
   */
  async onApplicationBootstrap(): Promise<void> {
    await setUpBeforeServing(this.store, this.logger);
  }

  /**
   * Closes the store and the Redis client the module opened from `redis`; a `store` given stays
   * open.
   */
  async onApplicationShutdown(): Promise<void> {
    if (!this.opened) return;
    const { client, store } = this.opened;
    await store.close?.();
    // `app.close()` may come after a signal already closed the application
    if (client.status !== 'end') await client.quit();
  }
}

/**
 * `@rateLimit` for a Nest GraphQL application (Apollo driver): import it once, global, and
 * hand `GraphQLModule` the service's `graphqlOptions`. It registers the interceptor that
 * decides `@RateLimit` fields after their guards.
 */
export class RateLimitModule {
  /** The module with its options given now. */
  static forRoot<TContext = any>(options: RateLimitModuleOptions<TContext>): DynamicModule {
    return RateLimitModule.forRootAsync({ useFactory: () => options });
  }

  /** The module with its options made by a factory (from `ConfigService`, say). */
  static forRootAsync<TContext = any>(
    options: RateLimitModuleAsyncOptions<TContext>,
  ): DynamicModule {
    const { imports = [], inject = [], useFactory } = options;
    return {
      module: RateLimitModule,
      global: true,
      imports: [...imports, DiscoveryModule],
      providers: [
        {
          provide: RateLimitService,
          inject: [DiscoveryService, ...inject] as never[],
          useFactory: async (discovery: DiscoveryService, ...args: unknown[]) =>
            createService(await useFactory(...args), () => instancesOf(discovery)),
        },
        {
          provide: APP_INTERCEPTOR,
          inject: [RateLimitService],
          useFactory: () => new RateLimitInterceptor(),
        },
        { provide: APP_FILTER, useFactory: () => new RefusalFilter() },
        {
          provide: WiringCheck,
          inject: [RateLimitService, DiscoveryService],
          useFactory: (service: RateLimitService, discovery: DiscoveryService) =>
            new WiringCheck(service, discovery),
        },
      ],
      exports: [RateLimitService],
    };
  }
}

/**
 * Refuses to start an application whose `@RateLimit` methods no GraphQLModule built from
 * `graphqlOptions()` wired: each would throw at its first call rather than run undecided.
 */
class WiringCheck implements OnApplicationBootstrap {
  constructor(
    private readonly service: RateLimitService,
    private readonly discovery: DiscoveryService,
  ) {}

  onApplicationBootstrap(): void {
    const methods = instancesOf(this.discovery).flatMap(markedMethods);
    if (methods.length === 0) return;
    const { wired, built } = this.service.pending;
    if (!built()) {
      throw new RateLimitConfigError(
        `@RateLimit on ${methods.map((m) => m.mark.name).join(', ')}, but no GraphQLModule ` +
          'options were built with RateLimitService.graphqlOptions(): make them in ' +
          'GraphQLModule.forRootAsync({ inject: [RateLimitService], useFactory: (rateLimit) => ' +
          'rateLimit.graphqlOptions({ ... }) })',
      );
    }
    const unwired = methods.filter((m) => !wired.has(m.mark));
    if (unwired.length > 0) {
      const named = unwired.map((m) => `${m.coordinate ?? '(no field)'} (${m.mark.name})`);
      throw new RateLimitConfigError(
        `@RateLimit on ${named.join(', ')}, but the schema built with ` +
          'RateLimitService.graphqlOptions() has no such field: its resolver serves only a ' +
          'GraphQLModule not built with graphqlOptions()',
      );
    }
  }
}

/** The application's provider instances (its resolvers among them). */
function instancesOf(discovery: DiscoveryService): object[] {
  return discovery
    .getProviders()
    .flatMap(({ instance }: { instance: unknown }) =>
      typeof instance === 'object' && instance !== null ? [instance] : [],
    );
}

/**
 * Logs a Redis outage of the module's own client through Nest's logger, once until the client
 * is ready again (ioredis would otherwise print each failed reconnect as an unhandled error).
 */
function logOutages(client: import('ioredis').Redis): void {
  const logger = new Logger('RateLimitModule');
  let down = false;
  client.on('error', (error: Error) => {
    if (down) return;
    down = true;
    logger.error(`Redis unreachable (${error.message}); reconnecting`);
  });
  client.on('ready', () => {
    if (down) logger.log('Redis reachable again');
    down = false;
  });
}

function createService(
  options: RateLimitModuleOptions,
  resolvers: () => readonly object[],
): RateLimitService {
  if (typeof options !== 'object' || options === null) {
    throw new RateLimitConfigError('RateLimitModule: options must be an object');
  }
  const { redis, store, afterGuards: coordinates, ...rest } = options;
  if ((redis === undefined) === (store === undefined)) {
    throw new RateLimitConfigError('RateLimitModule: give exactly one of `store` and `redis`');
  }
  if (store) return new RateLimitService({ ...rest, store }, coordinates, resolvers);
  if (typeof redis !== 'string') {
    throw new RateLimitConfigError(
      `RateLimitModule: redis must be a Redis URL, got ${typeof redis}; pass a client as store: createRedisStore({ client })`,
    );
  }
  // loaded only here: an application with its own store needs no ioredis installed
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Redis: Client } = require('ioredis') as typeof import('ioredis');
  const client = new Client(redis);
  logOutages(client);
  let opened: { client: OpenedClient; store: RateLimitStore } | undefined;
  try {
    opened = { client, store: createRedisStore({ client }) };
    return new RateLimitService({ ...rest, store: opened.store }, coordinates, resolvers, opened);
  } catch (error) {
    void opened?.store.close?.();
    client.disconnect();
    throw error;
  }
}
