'use strict';
/*
 * HTTP load for one server variant, run as its own process by bench/run.js so the load
 * generator never shares an event loop with the server:
 *   node bench/load.js '{"url":"http://127.0.0.1:PORT/graphql","tokens":"/tmp/x/tokens.json",
 *                        "connections":50,"durationS":4}'
 * Every request is submitFlag for a team picked at random (its bearer token); a response that
 * is not a plain `submitFlag` result (an error, a block) counts as a mismatch.
 * Prints autocannon's summary as one JSON line.
 */

const { readFileSync } = require('node:fs');

const autocannon = require('autocannon');

const options = JSON.parse(process.argv[2]);
const tokens = JSON.parse(readFileSync(options.tokens, 'utf8'));
const body = JSON.stringify({
  query:
    'mutation Submit($c: ID!, $f: String!) { submitFlag(challengeId: $c, flag: $f) { correct } }',
  variables: { c: 'warmup', f: 'CTF{guess}' },
});

autocannon(
  {
    url: options.url,
    connections: options.connections,
    duration: options.durationS,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        setupRequest: (request) => ({
          ...request,
          headers: {
            ...request.headers,
            authorization: `Bearer ${tokens[(Math.random() * tokens.length) | 0]}`,
          },
        }),
      },
    ],
    verifyBody: (text) => text.startsWith('{"data":{"submitFlag":{"correct":'),
  },
  (error, result) => {
    if (error) {
      process.stderr.write(`${error.stack}\n`);
      process.exit(1);
    }
    const { requests, latency, duration, errors, timeouts, non2xx, mismatches } = result;
    process.stdout.write(
      `${JSON.stringify({
        total: requests.total,
        duration,
        requestsPerSecond: requests.total / duration,
        p50Ms: latency.p50,
        p99Ms: latency.p99,
        errors,
        timeouts,
        non2xx,
        mismatches,
      })}\n`,
    );
  },
);
