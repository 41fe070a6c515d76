// /readyz answers 200 only while the API server and Redis both answer (fake Kubernetes API that
// can hang this operator's calls, a real Redis that is stopped).
import { type RedisServer, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorConfigSchema } from '../src/config.ts';
import { type Operator, startOperator } from '../src/operator.ts';
import { FakeKubeApi } from '../src/testing/fake-kube-api.ts';

const silent = { info() {}, warn() {}, error() {} };

describe('/readyz', () => {
  let redisServer: RedisServer | undefined;
  let redis: Redis;
  let api: FakeKubeApi;
  let op: Operator;
  const readyz = async () => {
    const res = await fetch(`http://127.0.0.1:${op.metricsPort()}/readyz`);
    return { status: res.status, body: await res.text() };
  };

  beforeAll(async () => {
    redisServer = await startRedis({ appendOnly: false });
    redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
    redis.on('error', () => {}); // Redis goes down on purpose below
    api = await FakeKubeApi.start();
    op = await startOperator({
      config: operatorConfigSchema.parse({
        ISLET_NAMESPACE: 'islet',
        ISLET_OPERATOR_METRICS_PORT: '0',
        ISLET_OPERATOR_HOST: '127.0.0.1',
        ISLET_OPERATOR_LEASE_DURATION_MS: '1500',
        ISLET_OPERATOR_RETRY_PERIOD_MS: '200',
      }),
      kubeConfig: api.kubeConfig('op-r'),
      redis,
      log: silent,
      defaultMetrics: false,
    });
  });
  afterAll(async () => {
    api?.unhang('op-r');
    await op?.stop();
    await api?.stop();
    redis?.disconnect();
    await redisServer?.stop();
  });

  it('is ready with both, not ready while the API server hangs or Redis is down', async () => {
    expect(await readyz()).toEqual({ status: 200, body: 'ready\nkubernetes: ok\nredis: ok\n' });
    api.hang('op-r');
    const hung = await readyz();
    expect(hung.status).toBe(503);
    expect(hung.body).toMatch(/kubernetes: RequestTimeoutError: \w+: no answer within \d+ ms/);
    expect(hung.body).toContain('redis: ok');
    api.unhang('op-r');
    expect((await readyz()).status).toBe(200);
    await redisServer?.stop();
    redisServer = undefined;
    const down = await readyz();
    expect(down.status).toBe(503);
    expect(down.body).toContain('kubernetes: ok');
    expect(down.body).not.toContain('redis: ok');
  }, 20_000);
});
