import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { startProcess, type Child } from './processes';

const MAIN = join(__dirname, '..', '..', 'server', 'dist', 'main.js');

/** A reference server running as its own process (built output, as `npm start` runs it). */
export interface ServerProcess {
  readonly url: string;
  readonly child: Child;
  stop(): Promise<void>;
}

/** Starts `node server/dist/main.js` on a free port with `env`; resolves once it is ready. */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  if (!existsSync(MAIN))
    throw new Error(`${MAIN} is missing: run \`npm run build\` (npm test does it first)`);
  const child = startProcess(process.execPath, [MAIN], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env },
  });
  const [, url] = await child.waitForOutput(/"url":"([^"]+)"/);
  return { url: url as string, child, stop: () => child.stop() };
}

const LIMITED = join(__dirname, '..', '..', 'kit', 'limited-server.js');

/**
 * A bare GraphQL process serving `sdl` with the built library's directive (see
 * `kit/limited-server.js` for the identities it reads from headers); `env` says where Redis is.
 */
export async function startLimitedServer(
  sdl: string,
  env: Record<string, string>,
): Promise<ServerProcess> {
  const child = startProcess(process.execPath, [LIMITED], {
    env: { ...process.env, LIMITED_SDL: sdl, ...env },
  });
  const [, url] = await child.waitForOutput(/listening (\S+)/);
  return { url: url as string, child, stop: () => child.stop() };
}

const BUDGETED = join(__dirname, '..', '..', 'kit', 'budget-server.js');

/**
 * A GraphQL Yoga process with an operation cost `budget` (see `kit/budget-server.js` for its
 * schema and identity); `env` says where Redis is.
 */
export async function startBudgetServer(
  budget: Record<string, unknown>,
  env: Record<string, string>,
): Promise<ServerProcess> {
  const child = startProcess(process.execPath, [BUDGETED], {
    env: { ...process.env, BUDGET: JSON.stringify(budget), ...env },
  });
  const [, url] = await child.waitForOutput(/listening (\S+)/);
  return { url: url as string, child, stop: () => child.stop() };
}
