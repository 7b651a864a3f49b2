import 'reflect-metadata';

import {
  Injectable,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  type LoggerService,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GqlExecutionContext } from '@nestjs/graphql';

/*
 * What the NestJS suites set up alike: the request an authentication guard reads, the guard,
 * and applications listening on a free port, closed after each test.
 */

export interface Req {
  headers: { authorization?: string };
  user?: { team: string };
}
export type Ctx = { req: Req };

/** Lets in a request with a bearer team (none starting `banned`), set as `req.user`. */
@Injectable()
export class AuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const { req } = GqlExecutionContext.create(context).getContext<Ctx>();
    const team = req.headers.authorization?.replace(/^Bearer /, '');
    if (team) req.user = { team };
    return !!team && !team.startsWith('banned');
  }
}

export interface NestApps {
  /** Starts `module` listening on a free port of 127.0.0.1; its GraphQL endpoint is `url`. */
  readonly serve: (
    module: new () => object,
    logger?: LoggerService | false,
  ) => Promise<{ app: INestApplication; url: string }>;
  /** Closes `app` after the test too. */
  readonly track: (app: INestApplication) => void;
}

/** The applications of a suite, each closed after its test. Call it at the top of the file. */
export function nestApps(): NestApps {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });
  const track = (app: INestApplication): void => void apps.push(app);
  return {
    track,
    serve: async (module, logger = false) => {
      const app = await NestFactory.create(module, { logger, abortOnError: false });
      track(app);
      await app.listen(0, '127.0.0.1');
      return { app, url: `${await app.getUrl()}/graphql` };
    },
  };
}
