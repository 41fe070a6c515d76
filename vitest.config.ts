import { defineConfig } from 'vitest/config';

/**
 * Services' tests that run one file at a time, with the cross-service tests, not beside another
 * file: the engine's, the sandbox's and the runner's (CPU budgets of a few hundred ms, deadlines,
 * BullMQ locks of 500-1000 ms a starved worker fails to renew: limits.test's 300 ms budget ran out
 * beside another file at load 14), those that start Islet's own processes from their main (seconds
 * of module loading under a bounded wait: redis-auth's operators missed their 15 s readiness wait
 * beside another file at load 14), hold a wall-clock bound, or rebuild a file other tests read.
 */
const ALONE = [
  'services/engine/**/*.test.ts',
  'services/kernel-sandbox/**/*.test.ts',
  'services/runner/**/*.test.ts',
  'services/devstack/src/cluster.test.ts', // a whole devstack cluster
  'services/sdk/src/cli-stack.test.ts', // a whole devstack cluster
  'services/operator/test/redis-auth.test.ts', // two operator mains, ready within 15 s
  'services/operator/test/operator.test.ts', // operator mains; a takeover within 6 s
  'services/gateway/src/workspace-attack.test.ts', // each attempt answers within 1 s
  'services/sdk/src/package.test.ts', // `npm pack` rebuilds services/sdk/dist in the repository
];

// One suite for the whole repository: unit tests beside their code, cross-service tests under test/.
// Forks, not threads: several suites load isolated-vm and spawn processes that must not share a heap.
// vitest's default is one worker fewer than the cores: on a 2-core machine one file at a time. The
// other services' tests (each starts at most its own redis-server, and much of a file's time is its
// import or a wait on Redis) run two files at a time first; then the cross-service tests, which
// start whole clusters and browsers, run one at a time as before, as do the files in ALONE.
export default defineConfig({
  test: {
    // test/bench: the ratio guard runs alone first (vitest.guard.config.ts); test/kube needs the
    // control plane scripts/kube-toolchain.sh builds (npm run test:kube, vitest.kube.config.ts).
    exclude: ['**/node_modules/**', 'test/chaos/**', 'test/bench/**', 'test/kube/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'services',
          include: ['services/*/src/**/*.test.ts', 'services/*/test/**/*.test.ts'],
          exclude: ['**/node_modules/**', ...ALONE],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'cross-service',
          include: ['test/**/*.test.ts', ...ALONE],
          exclude: ['**/node_modules/**', 'test/chaos/**', 'test/bench/**', 'test/kube/**'],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
