// @ts-check
'use strict';

const { Buffer } = require('node:buffer');
const { createServer } = require('node:http');

const { Redis } = require('ioredis');

/*
 * A test-only stand-in for Upstash's REST API in front of a real Redis: the protocol Upstash
 * documents and its official client reads. `POST /` with one command as a JSON array, `POST
 * /pipeline` with an array of them (run in order, not atomically), `Authorization: Bearer
 * <token>` (HTTP 401 otherwise); each command answered `{"result": ...}` or `{"error": "..."}`
 * (an error of `/` with HTTP 400; `/pipeline` answers 200 with one of those per command).
 * It counts the requests it receives, and can be made slow, drop connections without an answer,
 * answer a redirect, echo the request's headers in its error text, and be closed, to test what a
 * store does when an answer is lost or a server says more than it should.
 */

/**
 * What the bridge does with the next requests. `drop`: the connection is destroyed without an
 * answer, before running the commands or after running them. `delayMs`: the answer waits this
 * long after the commands ran. `redirect`: the commands ran, then the answer is a redirect of this
 * status to `/` of the bridge itself (a client that follows it sends them again).
 * `echoAuthorization`: the commands do not run, and the error text names the request's
 * `Authorization` header, as a careless proxy's does.
 * @typedef {{
 *   drop?: 'before' | 'after' | undefined,
 *   delayMs?: number | undefined,
 *   redirect?: number | undefined,
 *   echoAuthorization?: boolean | undefined,
 * }} BridgeMode
 */

/**
 * @typedef {object} UpstashBridge
 * @property {string} url its base URL, `http://127.0.0.1:<port>`
 * @property {string} token the bearer token it accepts
 * @property {{ path: string, commands: unknown[][] }[]} requests every request received, in order
 * @property {(mode: BridgeMode) => void} setMode how the next requests are answered
 * @property {() => void} cut cuts every open connection, unanswered, and goes on listening
 * @property {() => Promise<void>} close stops listening and cuts every open connection
 */

/**
 * Starts a bridge on a free port of 127.0.0.1 in front of the Redis at `redisUrl`.
 * @param {{ redisUrl: string, token: string }} options
 * @returns {Promise<UpstashBridge>}
 */
async function startUpstashBridge({ redisUrl, token }) {
  const redis = new Redis(redisUrl, { disconnectTimeout: 0, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  /** @type {BridgeMode} */
  let mode = {};
  /** @type {UpstashBridge['requests']} */
  const requests = [];

  /** @param {unknown[]} command */
  const run = async (command) => {
    try {
      const [name, ...args] = command.map(String);
      return { result: await redis.call(/** @type {string} */ (name), ...args) };
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  };

  const server = createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const path = (req.url ?? '/').split('?')[0] ?? '/';
        /** @param {number} status @param {unknown} body */
        const answer = (status, body) => {
          res.writeHead(status, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (req.method !== 'POST' || (path !== '/' && path !== '/pipeline')) {
          answer(404, { error: 'Not found' });
          return;
        }
        if (req.headers.authorization !== `Bearer ${token}`) {
          requests.push({ path, commands: [] });
          answer(401, { error: 'Unauthorized' });
          return;
        }
        let parsed;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          answer(400, { error: 'ERR failed to parse command' });
          return;
        }
        const commands = path === '/' ? [parsed] : parsed;
        requests.push({ path, commands });
        const { drop, delayMs, redirect, echoAuthorization } = mode;
        if (echoAuthorization) {
          answer(400, { error: `ERR bad request (Authorization: ${req.headers.authorization})` });
          return;
        }
        if (drop === 'before') {
          req.socket.destroy();
          return;
        }
        /** @type {{ result?: unknown, error?: string }[]} */
        const replies = [];
        for (const command of commands) replies.push(await run(command));
        if (drop === 'after') {
          req.socket.destroy();
          return;
        }
        if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
        if (redirect !== undefined) {
          res.writeHead(redirect, { Location: `http://127.0.0.1:${port}${path}` });
          res.end();
          return;
        }
        if (path === '/pipeline') answer(200, replies);
        else answer(replies[0]?.error === undefined ? 200 : 400, replies[0]);
      })();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('bridge has no port');
  const { port } = address;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    requests,
    setMode: (next) => {
      mode = next;
    },
    cut: () => server.closeAllConnections(),
    close: async () => {
      const closed = new Promise((resolve) => server.close(() => resolve(undefined)));
      server.closeAllConnections();
      await closed;
      redis.disconnect();
    },
  };
}

module.exports = { startUpstashBridge };
