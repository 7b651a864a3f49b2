'use strict';
/* What Redis says about its own work: INFO sections, CPU seconds, time spent in scripts. */

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

const mastersOf = (client) => (client.isCluster ? client.nodes('master') : [client]);

/** Redis CPU seconds summed over every master of a cluster client, or of one client. */
async function totalRedisCpu(client) {
  const values = await Promise.all(mastersOf(client).map(redisCpuSeconds));
  return values.reduce((a, b) => a + b, 0);
}

/** EVALSHA (and EVAL) calls and microseconds Redis spent in them, summed over masters. */
async function scriptStats(client) {
  let calls = 0;
  let usec = 0;
  for (const node of mastersOf(client)) {
    const info = parseInfo(await node.info('commandstats'));
    for (const name of ['cmdstat_evalsha', 'cmdstat_eval']) {
      const m = /calls=(\d+),usec=(\d+)/.exec(String(info[name] ?? ''));
      if (m) {
        calls += Number(m[1]);
        usec += Number(m[2]);
      }
    }
  }
  return { calls, usec };
}

module.exports = { parseInfo, redisCpuSeconds, scriptStats, totalRedisCpu };
