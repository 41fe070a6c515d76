import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/chaos/**/*.test.ts'],
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 900_000,
    hookTimeout: 120_000,
  },
});
