// The browser test of the team page, `npm run test:e2e`: only the *.e2e.ts files under test/e2e,
// which `npm test` (jest.config.js, *.test.ts) never picks up. Needs Debian's `chromium` (or
// CHROMIUM_PATH) and Redis, found the same way as for `npm test`.
/** @type {import('jest').Config} */
module.exports = {
  ...require('./jest.config.js'),
  testMatch: ['**/test/e2e/**/*.e2e.ts'],
  testTimeout: 60_000,
  maxWorkers: 1,
};
