// Two RunnerPools for one mode pull from one queue: each scales for its share of the depth, not
// for all of it (fake Kubernetes API, real Redis, real BullMQ jobs).
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { type RedisServer, startRedis } from '@islet/testkit';
import type { V1Deployment } from '@kubernetes/client-node';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorConfigSchema } from '../src/config.ts';
import { type Operator, startOperator } from '../src/operator.ts';
import type { RunnerPool } from '../src/runner-pool.ts';
import { FakeKubeApi } from '../src/testing/fake-kube-api.ts';

const ns = 'islet';
const MODE = 'read-only';
const POOLS = 'islet.dev/v1alpha1/runnerpools';
const silent = { info() {}, warn() {}, error() {} };

const pool = (name: string): RunnerPool => ({
  apiVersion: 'islet.dev/v1alpha1',
  kind: 'RunnerPool',
  metadata: { name, namespace: ns },
  spec: {
    mode: MODE,
    minReplicas: 1,
    maxReplicas: 10,
    targetWaitingPerReplica: 2,
    image: 'islet/runner:test',
    scaleUpStabilizationSeconds: 0,
    scaleDownStabilizationSeconds: 0,
  },
});

async function waitFor(what: string, fn: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('demand split between pools of one mode', () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let api: FakeKubeApi;
  let op: Operator;
  let queue: Queue;
  const replicasOf = (name: string) =>
    (api.get('apps/v1/deployments', ns, `${name}-runner`) as V1Deployment | undefined)?.spec?.replicas;

  beforeAll(async () => {
    redisServer = await startRedis({ appendOnly: false });
    redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
    api = await FakeKubeApi.start({ simulateWorkloads: true });
    queue = new Queue(runQueueName(MODE), { connection: redis, prefix: QUEUE_PREFIX });
    op = await startOperator({
      config: operatorConfigSchema.parse({
        ISLET_NAMESPACE: ns,
        ISLET_OPERATOR_METRICS_PORT: '0',
        ISLET_OPERATOR_HOST: '127.0.0.1',
        ISLET_OPERATOR_LEASE_DURATION_MS: '1500',
        ISLET_OPERATOR_RETRY_PERIOD_MS: '200',
        ISLET_OPERATOR_RESYNC_INTERVAL_MS: '200',
      }),
      kubeConfig: api.kubeConfig(),
      redis,
      log: silent,
      defaultMetrics: false,
    });
  });
  afterAll(async () => {
    await op?.stop();
    await queue?.close();
    await api?.stop();
    redis?.disconnect();
    await redisServer?.stop();
  });

  it('12 waiting runs, target 2: one pool wants 6; two pools want 3 each, not 6 each', async () => {
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'run', data: { i } })));
    api.apply(POOLS, ns, pool('a'));
    await waitFor('a at 6', () => replicasOf('a') === 6);
    api.apply(POOLS, ns, pool('b'));
    await waitFor('a and b at 3', () => replicasOf('a') === 3 && replicasOf('b') === 3);
    // And they stay there (no pool takes the whole queue on a later reconcile).
    await new Promise((r) => setTimeout(r, 800));
    expect([replicasOf('a'), replicasOf('b')]).toEqual([3, 3]);
    api.remove(POOLS, ns, 'b');
    await waitFor('a back at 6', () => replicasOf('a') === 6);
  });
});
