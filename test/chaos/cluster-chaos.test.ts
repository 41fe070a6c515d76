/**
 * The Redis Cluster soak (`npm run test:chaos`): hundreds of runs with binding calls and decisions
 * on a 3-master Redis Cluster while two masters are SIGKILLed in turn (the queue slot's first),
 * runners are SIGKILLed and a gateway is restarted. Every run ends, nothing is sent twice, results
 * match a fault-free run.
 */
import { expect, it } from 'vitest';
import { formatReport, runChaos } from './driver.ts';

it('hundreds of runs on a Redis Cluster under master failovers and runner kills: nothing lost, nothing sent twice', async () => {
  const report = await runChaos({
    redis: 'cluster',
    masterKills: 2,
    runs: Number(process.env.ISLET_CHAOS_RUNS ?? 240),
    submitWindowMs: 120_000,
    killEveryMs: 10_000,
    runners: 3,
    runnerConcurrency: 4,
    settleTimeoutMs: 240_000,
    log: (line) => console.log(line),
  });
  console.log(formatReport(report));
  expect(report.violations).toEqual([]);
  expect(report.lost).toBe(0);
  expect(report.duplicates).toBe(0);
  expect(report.accepted).toBe(report.runs);
  expect(report.masterKills).toBe(2);
  expect(report.runnerKills).toBeGreaterThan(5);
  expect(report.gatewayRestarts).toBe(1);
}, 900_000);
