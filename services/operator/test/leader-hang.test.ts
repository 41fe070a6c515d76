// A leader whose API calls hang must stop acting before its Lease can expire, so two leaders
// never act at once (fake Kubernetes API that holds one client's requests unanswered, real Redis).
import { type RedisServer, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaderTimings, operatorConfigSchema } from '../src/config.ts';
import { type Operator, startOperator } from '../src/operator.ts';
import { FakeKubeApi } from '../src/testing/fake-kube-api.ts';

const ns = 'islet';
const silent = { info() {}, warn() {}, error() {} };
const config = (identity: string) =>
  operatorConfigSchema.parse({
    ISLET_NAMESPACE: ns,
    ISLET_OPERATOR_METRICS_PORT: '0',
    ISLET_OPERATOR_HOST: '127.0.0.1',
    ISLET_OPERATOR_IDENTITY: identity,
    ISLET_OPERATOR_LEASE_DURATION_MS: '1500',
    ISLET_OPERATOR_RETRY_PERIOD_MS: '200',
    ISLET_OPERATOR_RESYNC_INTERVAL_MS: '200',
  });

describe('leader election with hanging API calls', () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let api: FakeKubeApi;
  const ops: Operator[] = [];
  const start = async (identity: string) => {
    const op = await startOperator({
      config: config(identity),
      kubeConfig: api.kubeConfig(identity),
      redis,
      log: silent,
      defaultMetrics: false,
    });
    ops.push(op);
    return op;
  };

  beforeAll(async () => {
    redisServer = await startRedis({ appendOnly: false });
    redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
    api = await FakeKubeApi.start({ simulateWorkloads: true });
  });
  afterAll(async () => {
    for (const op of ops) await op.stop();
    await api?.stop();
    redis?.disconnect();
    await redisServer?.stop();
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
