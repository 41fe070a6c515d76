import { defineConfig } from 'vitest/config';

// The performance ratio guard runs on its own, before the main suite: the main suite's parallel
// files load the machine unevenly between the guard's baseline and its cluster phases, which is
// noise a same-run ratio cannot cancel. `npm test` runs both (see package.json test:all).
export default defineConfig({
  test: {
    include: ['test/bench/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
