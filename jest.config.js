/**
 * Two projects. `unit` (test/unit/): the pure policies, imported from the sources, no server and no
 * database: `npm run test:unit` runs them in seconds. `service` (every other test file): tests are
 * clients — each file starts real Cairn processes (dist/, built by `npm test` first) and talks HTTP
 * and git to them; one embedded PostgreSQL cluster is shared by the run (started only when a
 * service test runs), every server gets its own database, data dir and port, so files run in
 * parallel. ts-jest only compiles the test code.
 */
const common = {
  testEnvironment: 'node',
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
};

export default {
  // Three files at once on two cores: a file waiting (a lease, a retry, a slow client's cut-off)
  // leaves its core to the others. Three finish ~100 s sooner than two here (599 against 699 s), with
  // the cores about 95% busy.
  // Servers are told apart by the port their own process reports (test/support/server.ts).
  maxWorkers: 3,
  testSequencer: '<rootDir>/test/support/sequencer.js',
  testTimeout: 60_000,
  projects: [
    { ...common, displayName: 'unit', roots: ['<rootDir>/test/unit'] },
    {
      ...common,
      displayName: 'service',
      roots: ['<rootDir>/test'],
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/unit/'],
      globalSetup: '<rootDir>/test/support/global-setup.js',
      globalTeardown: '<rootDir>/test/support/global-teardown.js',
    },
  ],
};
