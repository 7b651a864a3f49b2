import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { GqlExecutionContext, type GqlContextType } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { defer, lastValueFrom } from 'rxjs';

import { RateLimitConfigError } from '../errors';
import { calls, markOfMethod } from './gate';

/**
 * The application-wide interceptor of `RateLimitModule`. Nest runs every guard before any
 * interceptor, so the decision it runs (for a schema-first `afterGuards` field) sees the
 * identity a guard set (`req.user`), and a call a guard refused never gets here. Each pass
 * through it is decided: an interceptor before it that retries makes a new hit. A `@RateLimit`
 * method's own gate decides it; here it is only told apart when its field was never wired.
 */
export class RateLimitInterceptor implements NestInterceptor {
  // typed through CallHandler, so the published types need no rxjs of their own
  intercept(context: ExecutionContext, next: CallHandler): ReturnType<CallHandler['handle']> {
    if (context.getType<GqlContextType>() !== 'graphql') return next.handle();
    const info = GqlExecutionContext.create(context).getInfo<GraphQLResolveInfo | undefined>();
    const call = calls.getStore();
    const mark = markOfMethod(context.getHandler());
    if (mark) {
      if (call?.mark !== mark) {
        const field = info ? `${info.parentType.name}.${info.fieldName}` : mark.name;
        throw new RateLimitConfigError(
          `${field}: @RateLimit on ${mark.name}, but no decision waits for the call: ` +
            'GraphQLModule options not built with RateLimitService.graphqlOptions()',
        );
      }
      return next.handle();
    }
    if (!call || call.mark || call.info !== info) return next.handle();
    return defer(() => call.decide(() => lastValueFrom(next.handle())));
  }
}
