import { defineConfig } from 'vitest/config';

// The operator and the chart on a real API server (test/kube): one control plane built by
// scripts/kube-toolchain.sh and started by the global setup; files one at a time (each runs
// operators with real leases against it), each in its own namespace. `npm run test:kube`.
export default defineConfig({
  test: {
    include: ['test/kube/**/*.test.ts'],
    globalSetup: ['test/kube/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 240_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
