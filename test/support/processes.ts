import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createServer } from 'node:net';

import { withTimeout } from '../../src/timeout';

/** A port that was free a moment ago: the OS picks it, we release it and hand it on. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `promise`, or a rejection naming `what` once `ms` have passed. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return withTimeout(promise, ms).catch((error: Error) => {
    throw new Error(`${what}: ${error.message}`);
  });
}

/** Resolves when `predicate` holds, polling every `intervalMs`; rejects after `timeoutMs`. */
export async function waitFor(
  what: string,
  predicate: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await Promise.resolve(predicate()).catch(() => false)) return;
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A child process whose output is kept, and that can be stopped by its pid with a deadline. */
export interface Child {
  readonly process: ChildProcess;
  readonly pid: number;
  output(): string;
  /** Resolves with the first match of `pattern` in the output; rejects on exit or timeout. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<Child>();

/** Spawns `command`; every child is also stopped by {@link stopAll} and at process exit. */
export function startProcess(
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
): Child {
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  if (proc.pid === undefined) throw new Error(`Could not start ${command}`);
  const pid = proc.pid;
  let text = '';
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  proc.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  let done = false;
  void exited.then(() => (done = true));

  const child: Child = {
    process: proc,
    pid,
    output: () => text,
    waitForOutput(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => finish(new Error(`Timed out waiting for ${pattern} from ${command}:\n${text}`)),
          timeoutMs,
        );
        const check = (): void => {
          const match = text.match(pattern);
          if (match) finish(undefined, match);
        };
        const onExit = (): void =>
          finish(new Error(`${command} exited before printing ${pattern}:\n${text}`));
        const finish = (error?: Error, match?: RegExpMatchArray): void => {
          clearTimeout(timer);
          proc.stdout?.off('data', check);
          proc.stderr?.off('data', check);
          proc.off('exit', onExit);
          if (error) reject(error);
          else resolve(match as RegExpMatchArray);
        };
        proc.stdout?.on('data', check);
        proc.stderr?.on('data', check);
        proc.once('exit', onExit);
        check();
      });
    },
    async stop(graceMs = 3_000) {
      running.delete(child);
      if (done) return;
      signal(pid, 'SIGCONT');
      signal(pid, 'SIGTERM');
      const killer = setTimeout(() => signal(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(killer);
    },
  };
  running.add(child);
  return child;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** Stops every child this process started and has not stopped yet. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}

process.once('exit', () => {
  for (const c of running) signal(c.pid, 'SIGKILL');
});
