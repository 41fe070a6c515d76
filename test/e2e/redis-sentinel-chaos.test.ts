/**
 * The Sentinel failover under load, for the normal suite: gateways and runners in
 * ISLET_REDIS_MODE=sentinel (master, replica, three sentinels, real redis-server processes), a
 * stream of runs with parallel and approval-gated binding calls and decisions, and the master
 * SIGKILLed mid-stream so the sentinels promote the replica. Every run ends, no App call is
 * delivered twice, every result equals the fault-free run's; the failover's cost is printed.
 */
import { expect, it } from 'vitest';
import { formatReport, runChaos } from '../chaos/driver.ts';

it('runs with binding calls and decisions while the Sentinel group master is SIGKILLed: nothing lost, nothing sent twice', async () => {
  const report = await runChaos({
    redis: 'sentinel',
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
  expect(report.failoverMs.length).toBe(1);
  expect(report.decisions).toBeGreaterThan(0);
}, 150_000);
