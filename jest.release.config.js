// The release checks, `npm run test:release`: the package as `npm pack` makes it, the Docker
// image's run-time install, the engines the lock admits, and the published types. `npm test`
// (jest.config.js) leaves test/release/ out; `.ci/run` runs both.
/** @type {import('jest').Config} */
module.exports = {
  ...require('./jest.config.js'),
  roots: ['<rootDir>/test/release'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 120_000,
};
