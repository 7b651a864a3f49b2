/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/test/tsconfig.json' }] },
  // The reference server (server/src) imports the library by its package name; in a test's own
  // process that name is the sources, so the server and the test share one copy of the library.
  moduleNameMapper: { '^graphql-atomic-rate-limit$': '<rootDir>/src/index.ts' },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30_000,
  maxWorkers: 2,
};
