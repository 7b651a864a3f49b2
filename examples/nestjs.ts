import 'reflect-metadata';
import {
  Injectable,
  Module,
  UnauthorizedException,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Args,
  GqlExecutionContext,
  GraphQLModule,
  Mutation,
  Query,
  Resolver,
} from '@nestjs/graphql';
import { RateLimit, RateLimitModule, RateLimitService } from 'graphql-atomic-rate-limit/nestjs';

interface Request {
  headers: { authorization?: string };
  user?: { team: string };
}

/** Your authentication: here the bearer token is the team's id. */
@Injectable()
class AuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const { req } = GqlExecutionContext.create(context).getContext<{ req: Request }>();
    const team = req.headers.authorization?.replace(/^Bearer /, '');
    if (!team) throw new UnauthorizedException();
    req.user = { team };
    return true;
  }
}

/** Another guard: a submission to a locked challenge is refused, and counts nothing. */
@Injectable()
class OpenChallengeGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return (
      GqlExecutionContext.create(context).getArgs<{ challenge: string }>().challenge !== 'locked'
    );
  }
}

@Resolver()
class FlagResolver {
  @Query(() => Boolean)
  ok(): boolean {
    return true;
  }

  @Mutation(() => Boolean)
  @UseGuards(AuthGuard, OpenChallengeGuard)
  @RateLimit({ action: 'submit', window: 60, limit: 3 }) // decided after the guards
  submitFlag(@Args('challenge') challenge: string, @Args('flag') flag: string): boolean {
    return challenge === 'intro' && flag === 'CTF{hi}';
  }
}

@Module({
  imports: [
    RateLimitModule.forRoot({
      // the module connects and closes at shutdown; without Redis: store: createMemoryStore()
      redis: process.env.REDIS_URL ?? 'redis://localhost:6379',
      identify: ({ req }: { req: Request }) => req.user?.team, // set by AuthGuard
    }),
    GraphQLModule.forRootAsync<ApolloDriverConfig>({
      driver: ApolloDriver,
      inject: [RateLimitService],
      useFactory: (rateLimit: RateLimitService) =>
        rateLimit.graphqlOptions({ autoSchemaFile: true }),
    }),
  ],
  providers: [FlagResolver],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks(); // on SIGTERM the module closes its store and Redis client
  await app.listen(Number(process.env.PORT ?? 3000));
  console.log(`Ready at ${await app.getUrl()}/graphql`);
}
void main();
