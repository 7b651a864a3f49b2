// @ts-check
'use strict';
/*
 * The Redis client families the store accepts, made the way an application makes them, for the
 * tests, the test processes and the benchmarks alike: ioredis, iovalkey (its fork), node-redis 6
 * (`redis`) and node-redis 5 (installed as `redis5`). Each connects to one Redis (`url`) or to a
 * Cluster (`nodes`), and closes.
 */

/** @typedef {'ioredis' | 'iovalkey' | 'node-redis' | 'node-redis-5'} ClientFamily */

/** @type {readonly ClientFamily[]} */
const CLIENT_FAMILIES = ['ioredis', 'iovalkey', 'node-redis', 'node-redis-5'];

/** @param {string} name */
const load = (name) => require(name);

/** @param {ClientFamily} family */
const isNodeRedis = (family) => family === 'node-redis' || family === 'node-redis-5';

/**
 * A client of `family`, made as an application makes it at start: it starts connecting at once
 * and `ready` resolves once it has (it may never, while no Redis listens). Errors are recorded in
 * `errors`, as an application's listener would.
 * @param {ClientFamily} family
 * @param {{ url?: string, nodes?: readonly { host: string, port: number }[], options?: object }} where
 * @param {Error[]} [errors]
 * @returns {{ client: any, ready: Promise<void> }}
 */
function makeClient(family, where, errors = []) {
  const { url, nodes, options = {} } = where;
  const onError = (/** @type {Error} */ e) => errors.push(e);
  if (isNodeRedis(family)) {
    const redis = load(family === 'node-redis' ? 'redis' : 'redis5');
    const client = nodes
      ? redis.createCluster({
          rootNodes: nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
          ...options,
        })
      : redis.createClient({ url, ...options });
    client.on('error', onError);
    const ready = client.connect().then(() => undefined);
    ready.catch(() => undefined);
    return { client, ready };
  }
  const { Cluster, Redis } = load(family);
  const client = nodes ? new Cluster(nodes, options) : new Redis(url, options);
  client.on('error', onError);
  const ready = new Promise((resolve) => client.once('ready', resolve)).then(() => undefined);
  return { client, ready };
}

/**
 * Where a client of `family` is: 'ready', 'connecting' (opened, not ready), or 'closed'.
 * @param {ClientFamily} family
 * @param {any} client
 * @returns {'ready' | 'connecting' | 'closed'}
 */
function clientState(family, client) {
  if (isNodeRedis(family)) {
    if (!client.isOpen) return 'closed';
    return client.isReady ? 'ready' : 'connecting';
  }
  if (client.status === 'ready') return 'ready';
  return client.status === 'end' ? 'closed' : 'connecting';
}

/**
 * A client of `family`, connected (a connection error is thrown; later errors are recorded in
 * `errors`, as an application's listener would).
 * @param {ClientFamily} family
 * @param {{ url?: string, nodes?: readonly { host: string, port: number }[], options?: object }} where
 * @param {Error[]} [errors]
 * @returns {Promise<any>}
 */
async function connectClient(family, where, errors = []) {
  if (isNodeRedis(family)) {
    const { client, ready } = makeClient(family, where, errors);
    await ready;
    return client;
  }
  // lazy, so that connect() answers (or throws) the first connection's outcome
  const { client } = makeClient(
    family,
    { ...where, options: { lazyConnect: true, ...where.options } },
    errors,
  );
  await client.connect();
  return client;
}

/**
 * Closes a client of `family`, waiting for its replies; at once if it cannot.
 * @param {ClientFamily} family
 * @param {any} client
 */
async function closeClient(family, client) {
  if (isNodeRedis(family)) {
    if (!client.isOpen) return;
    await client.close().catch(() => client.destroy());
    return;
  }
  if (client.status === 'end') return;
  await client.quit().catch(() => client.disconnect());
}

/**
 * Drops a client of `family` at once, waiting for nothing.
 * @param {ClientFamily} family
 * @param {any} client
 */
function dropClient(family, client) {
  if (!isNodeRedis(family)) client.disconnect();
  else if (client.isOpen) client.destroy();
}

/**
 * Sends a raw command with `client` (on a Cluster, to the master of `key`).
 * @param {ClientFamily} family
 * @param {any} client
 * @param {string[]} command
 * @param {string} [key]
 * @returns {Promise<unknown>}
 */
function sendWith(family, client, command, key) {
  if (!isNodeRedis(family)) return client.call(...command);
  return client.masters ? client.sendCommand(key, false, command) : client.sendCommand(command);
}

module.exports = {
  CLIENT_FAMILIES,
  clientState,
  closeClient,
  connectClient,
  dropClient,
  makeClient,
  sendWith,
};
