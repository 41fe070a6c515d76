import { defineConfig } from 'vitest/config';

// One suite for the whole repository: unit tests beside their code, cross-service tests under test/.
// Forks, not threads: several suites load isolated-vm and spawn processes that must not share a heap.
export default defineConfig({
  test: {
    include: ['services/*/src/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // test/bench: the ratio guard runs alone first (vitest.guard.config.ts); test/kube needs the
    // control plane scripts/kube-toolchain.sh builds (npm run test:kube, vitest.kube.config.ts).
    exclude: ['**/node_modules/**', 'test/chaos/**', 'test/bench/**', 'test/kube/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
