/** The long chaos run (`npm run test:chaos`): hundreds of runs under runner, gateway and Redis faults. */
import { expect, it } from 'vitest';
import { formatReport, runChaos } from './driver.ts';

it('hundreds of runs under faults: every run ends, nothing is delivered twice, results match a fault-free run', async () => {
  const report = await runChaos({
    runs: Number(process.env.ISLET_CHAOS_RUNS ?? 300),
    submitWindowMs: 150_000,
    killEveryMs: 5_000,
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
  expect(report.runnerKills).toBeGreaterThan(10);
  expect(report.gatewayRestarts).toBe(1);
  expect(report.redisRestarts).toBe(1);
}, 900_000);
