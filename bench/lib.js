'use strict';
/*
 * Helpers shared by the bench scripts: free ports, child processes stopped by pid, a private
 * redis-server, INFO parsing and summary statistics. Plain CommonJS, no TypeScript toolchain.
 */

const { spawn, execFileSync } = require('node:child_process');
const { createServer } = require('node:net');

/** A port that was free a moment ago (never 6379): the OS picks it, we release it. */
async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(address.port));
      });
    });
    if (port !== 6379) return port;
  }
}

/** Resolves when `predicate` holds, polling every `intervalMs`; rejects after `timeoutMs`. */
async function waitFor(what, predicate, timeoutMs = 15_000, intervalMs = 50) {
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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const running = new Set();

function signal(pid, name) {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/**
 * Spawns `command` with its output kept. Every child is stopped by its pid: by `stop()`, by
 * `stopAll()`, and with SIGKILL when this process exits.
 */
function startProcess(command, args, options = {}) {
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  if (proc.pid === undefined) throw new Error(`Could not start ${command}`);
  const pid = proc.pid;
  let stdout = '';
  let stderr = '';
  let done = false;
  const exited = new Promise((resolve) =>
    proc.once('exit', (code, sig) => {
      done = true;
      resolve({ code, signal: sig });
    }),
  );
  proc.stdout.on('data', (chunk) => (stdout += chunk.toString()));
  proc.stderr.on('data', (chunk) => (stderr += chunk.toString()));
  const child = {
    pid,
    command,
    process: proc,
    exited,
    stdout: () => stdout,
    output: () => stdout + stderr,
    /** Resolves with the first match of `pattern` in the output; rejects on exit or timeout. */
    waitForOutput(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const finish = (error, match) => {
          clearTimeout(timer);
          proc.stdout.off('data', check);
          proc.stderr.off('data', check);
          proc.off('exit', onExit);
          if (error) reject(error);
          else resolve(match);
        };
        const check = () => {
          const match = (stdout + stderr).match(pattern);
          if (match) finish(undefined, match);
        };
        const onExit = () =>
          finish(new Error(`${command} exited before printing ${pattern}:\n${stdout}${stderr}`));
        const timer = setTimeout(
          () =>
            finish(
              new Error(`Timed out waiting for ${pattern} from ${command}:\n${stdout}${stderr}`),
            ),
          timeoutMs,
        );
        proc.stdout.on('data', check);
        proc.stderr.on('data', check);
        proc.once('exit', onExit);
        check();
      });
    },
    /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
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

/** Stops every child started here and not stopped yet. */
async function stopAll() {
  await Promise.all([...running].map((c) => c.stop()));
}

process.once('exit', () => {
  for (const c of running) signal(c.pid, 'SIGKILL');
});

/** Runs a node script as a child and resolves with the JSON it prints last on stdout. */
async function runJson(script, args, { env, timeoutMs = 120_000, nodeArgs = [] } = {}) {
  const child = startProcess(process.execPath, [...nodeArgs, script, ...args], {
    env: { ...process.env, ...env },
  });
  const timer = setTimeout(() => void child.stop(), timeoutMs);
  const { code, signal: sig } = await child.exited;
  clearTimeout(timer);
  running.delete(child);
  if (code !== 0) {
    throw new Error(`${script} exited with ${code ?? sig}:\n${child.output().slice(-4000)}`);
  }
  const lines = child.stdout().trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

/** True when `command --version` runs. */
function has(command) {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Starts a private `redis-server` on a free port of 127.0.0.1, persisting nothing. */
async function startRedisServer(extraArgs = [], { dir = '/tmp', port } = {}) {
  const p = port ?? (await freePort());
  const child = startProcess('redis-server', [
    '--port',
    String(p),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--protected-mode',
    'no',
    ...extraArgs,
  ]);
  await child.waitForOutput(/Ready to accept connections/);
  return {
    url: `redis://127.0.0.1:${p}`,
    host: '127.0.0.1',
    port: p,
    child,
    stop: () => child.stop(),
  };
}

/** `INFO <section>` as an object of numbers (where numeric) and strings. */
function parseInfo(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf(':');
    if (i <= 0 || line.startsWith('#')) continue;
    const key = line.slice(0, i);
    const value = line.slice(i + 1).trim();
    out[key] = value !== '' && !Number.isNaN(Number(value)) ? Number(value) : value;
  }
  return out;
}

/** Seconds of CPU the Redis server has used (user + sys). */
async function redisCpuSeconds(client) {
  const info = parseInfo(await client.info('cpu'));
  return info.used_cpu_user + info.used_cpu_sys;
}

/** Redis CPU seconds summed over every master of a cluster client, or of one client. */
async function totalRedisCpu(client) {
  if (client.isCluster) {
    const values = await Promise.all(client.nodes('master').map(redisCpuSeconds));
    return values.reduce((a, b) => a + b, 0);
  }
  return redisCpuSeconds(client);
}

/** The value at quantile `q` (0..1) of sorted numbers. */
function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

/** Median, min and max of several runs' values. */
function summary(values) {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return { median: NaN, min: NaN, max: NaN, runs: values };
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { median, min: s[0], max: s[s.length - 1], runs: values };
}

/** A number with `digits` significant figures and thousands separators. */
function fmt(value, digits = 3) {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 10 ** digits) return Math.round(value).toLocaleString('en-US');
  return Number(value.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

/** `median (min-max)` of a summary. */
function range(s, digits = 3) {
  if (!s || !Number.isFinite(s.median)) return 'n/a';
  if (s.runs.length === 1) return fmt(s.median, digits);
  return `${fmt(s.median, digits)} (${fmt(s.min, digits)}-${fmt(s.max, digits)})`;
}

/** A Markdown table from a header row and rows of cells. */
function table(header, rows) {
  const all = [header, ...rows].map((r) => r.map((c) => String(c)));
  const widths = header.map((_, i) => Math.max(3, ...all.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [
    line(all[0]),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...all.slice(1).map(line),
  ].join('\n');
}

module.exports = {
  freePort,
  waitFor,
  sleep,
  startProcess,
  stopAll,
  runJson,
  has,
  startRedisServer,
  parseInfo,
  redisCpuSeconds,
  totalRedisCpu,
  quantile,
  summary,
  fmt,
  range,
  table,
};
