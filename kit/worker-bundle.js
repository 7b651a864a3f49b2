// @ts-check
'use strict';

const { join } = require('node:path');

const { build } = require('esbuild');

/*
 * Bundles a worker of examples/ as its users' tools do: wrangler's esbuild settings (ESM,
 * es2022, the `workerd`, `worker` and `browser` conditions, browser fields first, no Node
 * built-ins) or Vercel Edge's (`edge-light` first). The package is the built one (`dist/`,
 * through its `exports`), so run `npm run build:library` first.
 */

const CONDITIONS = {
  workerd: ['workerd', 'worker', 'browser'],
  'edge-light': ['edge-light', 'worker', 'browser'],
};

/**
 * The bundle of `examples/<file>`, minified or not, as one ES module.
 * @param {string} file @param {{ runtime?: keyof typeof CONDITIONS, minify?: boolean }} [options]
 * @returns {Promise<string>}
 */
async function bundleWorker(file, { runtime = 'workerd', minify = false } = {}) {
  const result = await build({
    entryPoints: [join(__dirname, '..', 'examples', file)],
    bundle: true,
    write: false,
    format: 'esm',
    target: 'es2022',
    platform: 'neutral',
    conditions: CONDITIONS[runtime],
    mainFields: ['browser', 'module', 'main'],
    minify,
    legalComments: 'none',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  return /** @type {{ text: string }} */ (result.outputFiles[0]).text;
}

module.exports = { bundleWorker };
