/**
 * Tests are clients: each file starts real Cairn processes (dist/, built by
 * `npm test` first) and talks HTTP and git to them. ts-jest only compiles
 * the test code. One embedded PostgreSQL cluster is shared by the run; every
 * server gets its own database, data dir and port, so files run in parallel.
 */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  testTimeout: 60_000,
  maxWorkers: 2,
};
