/** The short chaos run for the normal suite (the long one is `npm run test:chaos`). */
import { expect, it } from 'vitest';
import { formatReport, runChaos } from '../chaos/driver.ts';

it('60 runs under runner SIGKILLs, a gateway restart and a Redis restart: nothing lost, nothing sent twice', async () => {
  const report = await runChaos({
    runs: 60,
    submitWindowMs: 30_000,
    killEveryMs: 3_000,
    runners: 3,
    runnerConcurrency: 3,
    settleTimeoutMs: 60_000,
  });
  console.log(formatReport(report));
  expect(report.violations).toEqual([]);
  expect(report.lost).toBe(0);
  expect(report.duplicates).toBe(0);
  expect(report.accepted).toBe(60);
  expect(report.runnerKills).toBeGreaterThanOrEqual(2);
  expect(report.gatewayRestarts).toBe(1);
  expect(report.redisRestarts).toBe(1);
}, 180_000);
