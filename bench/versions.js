'use strict';
/*
 * The versions of the packages the bench compares against, read from what is installed (the
 * root's node_modules and bench/peers'), so that every table names what it actually ran.
 */

const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const PEERS = join(__dirname, 'peers');

/** The installed version of `name` under `dir`'s node_modules, or '?' when it is missing. */
function installed(dir, name) {
  try {
    return JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8'))
      .version;
  } catch {
    return '?';
  }
}

/** The versions the report names, by role. */
function versions() {
  return {
    graphql: installed(ROOT, 'graphql'),
    ioredis: installed(ROOT, 'ioredis'),
    rlf: installed(ROOT, 'rate-limiter-flexible'),
    grld: installed(PEERS, 'graphql-rate-limit-directive'),
    peersRlf: installed(PEERS, 'rate-limiter-flexible'),
    peersGraphql: installed(PEERS, 'graphql'),
    peersUtils: installed(PEERS, '@graphql-tools/utils'),
  };
}

module.exports = { versions };
