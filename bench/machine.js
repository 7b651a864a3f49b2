'use strict';
/* What the run ran on and which code it measured, printed above the tables. */

const { execFileSync } = require('node:child_process');
const { existsSync, readFileSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');

/** The machine, Node, redis-server and commit of this run. */
function machine() {
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  let nproc = os.availableParallelism?.() ?? os.cpus().length;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    // keep os' count
  }
  let redisVersion = 'n/a';
  try {
    redisVersion = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // no redis-server on PATH
  }
  let commit = 'n/a';
  try {
    const git = (args) =>
      execFileSync('git', args, { cwd: join(__dirname, '..'), encoding: 'utf8' }).trim();
    commit = git(['rev-parse', '--short', 'HEAD']);
    if (git(['status', '--porcelain', '--', 'src', 'lua']))
      commit += ' + uncommitted changes in src/ or lua/';
  } catch {
    // not a git checkout
  }
  return {
    commit,
    nproc,
    node: process.version,
    redisServer: redisVersion,
    cpu: model,
    loadAverage: os.loadavg(),
  };
}

module.exports = { machine };
