import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['./test/support/fresh-build.ts', './test/support/pg-schema-pool-setup.ts'],
    environment: 'node',
    testTimeout: 30_000,
    // On CI a failed test runs once more; the summary reporter names every test that needed it
    // (FLAKY), so a race under load is seen and fixed, not hidden. Locally nothing is retried.
    retry: process.env.CI ? 1 : 0,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
