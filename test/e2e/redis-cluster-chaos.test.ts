/**
 * The short Redis Cluster chaos run for the normal suite (the soak is test/chaos/cluster-chaos.test.ts,
 * `npm run test:chaos`): a stream of runs with parallel and approval-gated binding calls and
 * decisions (stop and replay) on a 3-master Redis Cluster while the master serving the pool's queue
 * slot is SIGKILLed and its replica promoted. Every run ends, no App call is delivered twice, every
 * result equals the fault-free run's; the failover's cost is printed.
 */
import { expect, it } from 'vitest';
import { formatReport, runChaos } from '../chaos/driver.ts';

it('runs with binding calls and decisions while a Redis Cluster master is SIGKILLed: nothing lost, nothing sent twice', async () => {
  const report = await runChaos({
    redis: 'cluster',
    masterKills: 1,
    runnerKills: false,
    gatewayRestart: false,
    runs: 36,
    submitWindowMs: 24_000,
    killEveryMs: 1_000,
    runners: 2,
    runnerConcurrency: 3,
    settleTimeoutMs: 60_000,
  });
  console.log(formatReport(report));
  expect(report.violations).toEqual([]);
  expect(report.lost).toBe(0);
  expect(report.duplicates).toBe(0);
  expect(report.accepted).toBe(36);
  expect(report.masterKills).toBe(1);
  expect(report.decisions).toBeGreaterThan(0);
}, 150_000);
