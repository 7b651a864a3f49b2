// @ts-check
'use strict';

const { execFileSync, spawn } = require('node:child_process');
const { createServer } = require('node:net');

/**
 * Redis refuses cluster mode on a port whose bus port (port + 10000) is not a valid port, and
 * some systems hand out ephemeral ports above this.
 */
const MAX_CLUSTER_PORT = 65535 - 10000;

/**
 * Binds `port` (0: any) on 127.0.0.1 and releases it at once.
 * @param {number} port
 * @returns {Promise<number | undefined>} the port bound, or undefined when it was taken
 */
function probe(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * A port that was free a moment ago: the OS picks it, we release it and hand it on. Never 6379,
 * so a Redis the machine already runs is never mistaken for ours.
 * @returns {Promise<number>}
 */
async function freePort() {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await probe(0);
    if (port !== undefined && port !== 6379) return port;
  }
  throw new Error('No free port on 127.0.0.1');
}

/**
 * `count` distinct free ports for Redis Cluster nodes: each at most 55535, and its bus port
 * (+10000) free too.
 * @param {number} count
 * @returns {Promise<number[]>}
 */
async function freeClusterPorts(count) {
  /** @type {Set<number>} */
  const taken = new Set();
  /** @type {number[]} */
  const ports = [];
  for (let attempt = 0; ports.length < count; attempt++) {
    if (attempt >= 1000) throw new Error(`No ${count} free ports <= ${MAX_CLUSTER_PORT} found`);
    const port = await freePort();
    if (port > MAX_CLUSTER_PORT || taken.has(port) || taken.has(port + 10000)) continue;
    if ((await probe(port + 10000)) === undefined) continue;
    taken.add(port).add(port + 10000);
    ports.push(port);
  }
  return ports;
}

/**
 * Resolves after `ms`.
 * @param {number} ms
 * @returns {Promise<void>}
 */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves when `predicate` holds (a throw counts as not yet), polling every `intervalMs`;
 * rejects after `timeoutMs`.
 * @param {string} what named in the timeout's error
 * @param {() => Promise<boolean> | boolean} predicate
 * @param {number} [timeoutMs] @default 10_000
 * @param {number} [intervalMs] @default 50
 * @returns {Promise<void>}
 */
async function waitFor(what, predicate, timeoutMs = 10_000, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await Promise.resolve()
        .then(predicate)
        .catch(() => false)
    )
      return;
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/**
 * A child process whose output is kept, and that can be stopped by its pid with a deadline.
 * @typedef {object} Child
 * @property {import('node:child_process').ChildProcess} process
 * @property {number} pid
 * @property {Promise<{ code: number | null, signal: NodeJS.Signals | null }>} exited
 * @property {() => string} stdout what it printed on stdout
 * @property {() => string} output stdout and stderr, interleaved as they came
 * @property {(pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>} waitForOutput
 *   the first match of `pattern` in the output; rejects on exit or after `timeoutMs` (15 s)
 * @property {(graceMs?: number) => Promise<void>} stop SIGTERM, then SIGKILL after `graceMs`
 *   (3 s); resolves once the process has exited
 */

/** @type {Set<Child>} */
const running = new Set();

/**
 * @param {number} pid
 * @param {NodeJS.Signals} name
 */
function signal(pid, name) {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/**
 * Spawns `command` with its output kept. Every child is stopped by its pid: by `stop()`, by
 * {@link stopAll}, and with SIGKILL when this process exits.
 * @param {string} command
 * @param {readonly string[]} args
 * @param {import('node:child_process').SpawnOptions} [options]
 * @returns {Child}
 */
function startProcess(command, args, options = {}) {
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  if (proc.pid === undefined) throw new Error(`Could not start ${command}`);
  const pid = proc.pid;
  let out = '';
  let text = '';
  let done = false;
  // 'close', not 'exit': 'exit' may come before the last of its output was read, and a check of
  // what a process printed before it exited would then miss its last line.
  /** @type {Child['exited']} */
  const exited = new Promise((resolve) =>
    proc.once('close', (code, sig) => {
      done = true;
      resolve({ code, signal: sig });
    }),
  );
  proc.stdout?.on('data', (/** @type {Buffer} */ chunk) => {
    out += chunk.toString();
    text += chunk.toString();
  });
  proc.stderr?.on('data', (/** @type {Buffer} */ chunk) => (text += chunk.toString()));

  /** @type {Child} */
  const child = {
    process: proc,
    pid,
    exited,
    stdout: () => out,
    output: () => text,
    waitForOutput(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = text.match(pattern);
          if (match) finish(undefined, match);
        };
        const onExit = () =>
          finish(new Error(`${command} exited before printing ${pattern}:\n${text}`));
        const timer = setTimeout(
          () => finish(new Error(`Timed out waiting for ${pattern} from ${command}:\n${text}`)),
          timeoutMs,
        );
        /**
         * @param {Error | undefined} error
         * @param {RegExpMatchArray} [match]
         */
        const finish = (error, match) => {
          clearTimeout(timer);
          proc.stdout?.off('data', check);
          proc.stderr?.off('data', check);
          proc.off('close', onExit);
          if (error || !match) reject(error);
          else resolve(match);
        };
        proc.stdout?.on('data', check);
        proc.stderr?.on('data', check);
        proc.once('close', onExit);
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

/**
 * Stops every child this process started and has not stopped yet.
 * @returns {Promise<void>}
 */
async function stopAll() {
  await Promise.all([...running].map((c) => c.stop()));
}

process.once('exit', () => {
  for (const c of running) signal(c.pid, 'SIGKILL');
});

/**
 * True when `command --version` runs.
 * @param {string} command
 * @returns {boolean}
 */
function onPath(command) {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

module.exports = {
  MAX_CLUSTER_PORT,
  freeClusterPorts,
  freePort,
  onPath,
  sleep,
  startProcess,
  stopAll,
  waitFor,
};
