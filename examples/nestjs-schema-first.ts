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
import { Args, GqlExecutionContext, GraphQLModule, Mutation, Resolver } from '@nestjs/graphql';
import { RateLimitModule, RateLimitService } from 'graphql-atomic-rate-limit/nestjs';

interface Request {
  headers: { authorization?: string };
  user?: { team: string };
}

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

@Resolver('Mutation')
class FlagResolver {
  @Mutation()
  @UseGuards(AuthGuard)
  submitFlag(@Args('flag') flag: string): boolean {
    return flag === 'CTF{hi}';
  }
}

@Module({
  imports: [
    RateLimitModule.forRoot({
      redis: process.env.REDIS_URL ?? 'redis://localhost:6379',
      identify: ({ req }: { req: Request }) => req.user?.team,
      afterGuards: ['Mutation.submitFlag'], // decided after AuthGuard
    }),
    GraphQLModule.forRootAsync<ApolloDriverConfig>({
      driver: ApolloDriver,
      inject: [RateLimitService],
      useFactory: (rateLimit: RateLimitService) =>
        rateLimit.graphqlOptions({
          typeDefs: `
            type Query { ok: Boolean }
            type Mutation {
              submitFlag(flag: String!): Boolean! @rateLimit(action: "submit", window: 60, limit: 3)
            }
          `,
        }),
    }),
  ],
  providers: [FlagResolver],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT ?? 3000));
  console.log(`Ready at ${await app.getUrl()}/graphql`);
}
void main();
