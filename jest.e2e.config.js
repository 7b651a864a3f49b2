// The browser test of the team page, `npm run test:e2e`: only the *.e2e.ts files under test/e2e,
// which `npm test` (jest.config.js, *.test.ts) never picks up. Needs Debian's `chromium` (or
// CHROMIUM_PATH) and Redis, found the same way as for `npm test`.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/test/e2e/**/*.e2e.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/test/tsconfig.json' }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60_000,
  maxWorkers: 1,
};
