// The bounded soak, `npm run test:soak`: only the *.soak.ts files under test/soak, which
// `npm test` (jest.config.js, *.test.ts) never picks up. SOAK_SECONDS sets its length (default 20).
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/test/soak/**/*.soak.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/test/tsconfig.json' }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 90_000,
  maxWorkers: 1,
};
