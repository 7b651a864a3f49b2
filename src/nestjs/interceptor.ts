import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { GqlExecutionContext, type GqlContextType } from '@nestjs/graphql';
import { from, lastValueFrom } from 'rxjs';

import type { AfterGuards } from './after-guards';

/**
 * The application-wide interceptor of `RateLimitModule`. Nest runs every guard before any
 * interceptor, so the decision it runs sees the identity a guard set (`req.user`), and a call a
 * guard refused never gets here. Calls with no decision waiting pass untouched.
 */
export class RateLimitInterceptor implements NestInterceptor {
  constructor(private readonly pending: AfterGuards) {}

  // typed through CallHandler, so the published types need no rxjs of their own
  intercept(context: ExecutionContext, next: CallHandler): ReturnType<CallHandler['handle']> {
    if (context.getType<GqlContextType>() !== 'graphql') return next.handle();
    const info: unknown = GqlExecutionContext.create(context).getInfo();
    const decide = typeof info === 'object' && info !== null && this.pending.take(info);
    if (!decide) return next.handle();
    return from(decide(() => lastValueFrom(next.handle())));
  }
}
