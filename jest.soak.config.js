// The bounded soak, `npm run test:soak`: only the *.soak.ts files under test/soak, which
// `npm test` (jest.config.js, *.test.ts) never picks up. SOAK_SECONDS sets its length (default 20).
/** @type {import('jest').Config} */
module.exports = {
  ...require('./jest.config.js'),
  testMatch: ['**/test/soak/**/*.soak.ts'],
  testTimeout: 90_000,
  maxWorkers: 1,
};
