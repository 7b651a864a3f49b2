'use strict';
/*
 * The bench's child processes, started and stopped through the shared kit: a node script whose
 * last stdout line is its JSON result, optionally CPU-profiled, and the CPU time a child used.
 */

const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');

const { startProcess } = require('../kit/processes');
const { PROFILE_DIR } = require('./settings');

/** Node flags that write a CPU profile named `name` into BENCH_PROFILE, when it is set. */
const nodeArgs = (name) =>
  PROFILE_DIR
    ? [
        '--cpu-prof',
        `--cpu-prof-dir=${PROFILE_DIR}`,
        `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`,
      ]
    : [];

/** Runs a node script as a child and resolves with the JSON it prints last on stdout. */
async function runJson(script, args, { env, timeoutMs = 120_000, profile } = {}) {
  const child = startProcess(
    process.execPath,
    [...(profile ? nodeArgs(profile) : []), script, ...args],
    { env: { ...process.env, ...env } },
  );
  const timer = setTimeout(() => void child.stop(), timeoutMs);
  const { code, signal } = await child.exited;
  clearTimeout(timer);
  await child.stop();
  if (code !== 0) {
    throw new Error(`${script} exited with ${code ?? signal}:\n${child.output().slice(-4000)}`);
  }
  const lines = child.stdout().trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** The CPU seconds a process has used, from /proc (Linux); NaN elsewhere. */
function processCpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/**
 * The child's side of runJson: prints what `work` resolves to as one JSON line and exits 0, or
 * prints the error's stack and exits 1.
 * @param {Promise<unknown>} work
 */
function answerJson(work) {
  work
    .then((result) => {
      process.stdout.write(`${JSON.stringify(result)}\n`);
      process.exit(0);
    })
    .catch((error) => {
      process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
      process.exit(1);
    });
}

module.exports = { answerJson, nodeArgs, processCpuSeconds, runJson };
