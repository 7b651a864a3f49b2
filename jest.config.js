// `npm test`: every *.test.ts under test/ but the release checks of test/release/ (the packed
// package, the image's install, engines, published types), which `npm run test:release` runs.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/release/'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/test/tsconfig.json' }] },
  // The reference server (server/src) imports the library by its package name; in a test's own
  // process that name is the sources, so the server and the test share one copy of the library.
  moduleNameMapper: {
    '^graphql-atomic-rate-limit$': '<rootDir>/src/index.ts',
    '^graphql-atomic-rate-limit/cost$': '<rootDir>/src/cost/index.ts',
    '^graphql-atomic-rate-limit/nestjs$': '<rootDir>/src/nestjs/index.ts',
    '^graphql-atomic-rate-limit/mercurius$': '<rootDir>/src/mercurius/index.ts',
    '^graphql-atomic-rate-limit/opentelemetry$': '<rootDir>/src/opentelemetry/index.ts',
    '^graphql-atomic-rate-limit/upstash$': '<rootDir>/src/upstash/index.ts',
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30_000,
  maxWorkers: 2,
};
