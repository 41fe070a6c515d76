/**
 * Redis failover under load, for the normal suite (the soaks are in test/chaos, `npm run
 * test:chaos`): gateways and runners on a 3-master Redis Cluster, then on a Sentinel group
 * (master, replica, three sentinels), real redis-server processes both. A stream of runs with
 * parallel and approval-gated binding calls and decisions (stop and replay) while a master is
 * SIGKILLed and its replica promoted. On the Cluster, first the master serving the pool's queue
 * slot while every runner is idle in its blocking pop (a pool that never fetched again after this
 * was a real defect), then another master during the stream.
 * Every run ends, no App call is delivered twice, every result equals the fault-free run's; the
 * failover's cost is printed.
 */
import { it } from 'vitest';
import { formatReport, runChaos } from '../chaos/driver.ts';

// The two share nothing (their own Redis processes, gateways, runners and App on free ports) and
// mostly wait on their submit windows: they run at the same time.
it.concurrent.for([
  ['Redis Cluster masters are', 'cluster', 2],
  ['the Sentinel group master is', 'sentinel', 1],
] as const)(
  'runs with binding calls and decisions while %s SIGKILLed: nothing lost, nothing sent twice',
  { timeout: 150_000 },
  async ([_what, redis, kills], { expect }) => {
    const report = await runChaos({
      redis,
      masterKills: kills,
      firstMasterKillIdle: true,
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
    expect(report.masterKills).toBe(kills);
    expect(report.failoverMs).toHaveLength(kills);
    expect(report.decisions).toBeGreaterThan(0);
  },
);
