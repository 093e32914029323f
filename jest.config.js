// One `npm test` runs the library's unit tests (beside the code) and the
// end-to-end tests in test/. Sources are transpiled by ts-jest without type
// checking (that is `npm run lint`), which keeps the suite fast.
/** @type {import('jest').Config} */
const shared = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': 'ts-jest',
    '/node_modules/.+\\.js$': '<rootDir>/test/support/esm-interop.transformer.js',
  },
  // Nest 12's packages are ES modules: see test/support/esm-interop.transformer.js.
  transformIgnorePatterns: [],
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: {
    '^nestjs-delay$': '<rootDir>/libs/delay/src',
    '^nestjs-delay/(testing|admin|health|telemetry)$': '<rootDir>/libs/delay/src/$1',
    // IOREDIS_DIR runs the suite on another ioredis (npm run test:ioredis5): the guarantees must not hang on one version.
    ...(process.env.IOREDIS_DIR ? { '^ioredis$': process.env.IOREDIS_DIR } : {}),
  },
};

module.exports = {
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts'] },
    { ...shared, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
  ],
  // Tests and hooks that set no timeout of their own: generous, so that starting a server of the suite's
  // own (an initdb of PostgreSQL takes seconds on a loaded two-core machine) never fails the suite.
  testTimeout: 30_000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  // Four test files at a time even on two cores (Jest would run one): most end-to-end tests wait on real time
  // and real processes, not on the CPU, and each keeps its assertions independent of how busy the machine is.
  // On two cores the whole suite took 476 s with three and 352 s with four.
  maxWorkers: 4,
  // The longest files first, also on a fresh clone where Jest has no timings yet.
  testSequencer: '<rootDir>/test/support/slow-first.sequencer.js',
};
