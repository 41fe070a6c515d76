// A leader whose API calls hang must stop acting before its Lease can expire, so two leaders
// never act at once (fake Kubernetes API that holds one client's requests unanswered, real Redis).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaderTimings, operatorConfigSchema } from '../src/config.ts';
import type { FakeKubeApi } from './fake-kube-api.ts';
import { type OperatorFixture, startOperatorFixture } from './operator-fixture.ts';

describe('leader election with hanging API calls', () => {
  let fx: OperatorFixture;
  let api: FakeKubeApi;
  // Each operator's identity is also its fake-API client token, so one can be hung alone.
  const start = (identity: string) => fx.startOperator({}, identity);

  beforeAll(async () => {
    fx = await startOperatorFixture();
    api = fx.api;
  });
  afterAll(async () => {
    api?.unhang('op-a');
    await fx?.stop();
  });

  it('derives client-go’s timings (15 s / 10 s / 2 s) and rejects unsafe ones', () => {
    expect(leaderTimings(operatorConfigSchema.parse({}))).toEqual({
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      requestTimeoutMs: 5_000,
    });
    expect(() =>
      leaderTimings(
        operatorConfigSchema.parse({
          ISLET_OPERATOR_LEASE_DURATION_MS: '10000',
          ISLET_OPERATOR_RENEW_DEADLINE_MS: '10000',
        }),
      ),
    ).toThrow(/RENEW_DEADLINE/);
  });

  it('the hung leader steps down within its renew deadline; the other takes over only after', async () => {
    const a = await start('op-a');
    const deadline = Date.now() + 10_000;
    while (!a.elector.isLeader && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(a.elector.isLeader).toBe(true);
    const b = await start('op-b');
    await new Promise((r) => setTimeout(r, 500));
    expect(b.elector.isLeader).toBe(false);

    api.hang('op-a');
    const hungAt = Date.now();
    let aStoppedAt: number | undefined;
    let bStartedAt: number | undefined;
    let both = false;
    while (Date.now() < hungAt + 10_000 && bStartedAt === undefined) {
      const al = a.elector.isLeader;
      const bl = b.elector.isLeader;
      if (al && bl) both = true;
      if (!al && aStoppedAt === undefined) aStoppedAt = Date.now();
      if (bl) bStartedAt = Date.now();
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(both).toBe(false);
    expect(aStoppedAt).toBeDefined();
    expect(bStartedAt).toBeDefined();
    expect(a.controller()).toBeUndefined(); // stopped acting, not just flagged
    // Renew deadline 1000 ms after the last renewal began (at most one retry period before the hang).
    expect(aStoppedAt! - hungAt).toBeLessThan(1000 + 200 + 500);
    expect(bStartedAt!).toBeGreaterThan(aStoppedAt!);
    expect(api.hungRequests).toBeGreaterThan(0);
    // Still hung: A never comes back while its calls hang.
    await new Promise((r) => setTimeout(r, 1500));
    expect(a.elector.isLeader).toBe(false);
    expect(b.elector.isLeader).toBe(true);
    api.unhang('op-a');
  }, 30_000);
});
