// A leader change must not reset the scale-down stabilization: the history lives in the
// RunnerPool's status, so the new leader holds replicas for the rest of the window (fake
// Kubernetes API, real Redis, real BullMQ jobs).
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
const WINDOW_S = 6;

async function waitFor(what: string, fn: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('scale-down stabilization across a leader change', () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let api: FakeKubeApi;
  let queue: Queue;
  const ops: Operator[] = [];
  const replicas = () =>
    (api.get('apps/v1/deployments', ns, 'p-runner') as V1Deployment | undefined)?.spec?.replicas;
  const start = async (identity: string) => {
    const op = await startOperator({
      config: operatorConfigSchema.parse({
        ISLET_NAMESPACE: ns,
        ISLET_OPERATOR_METRICS_PORT: '0',
        ISLET_OPERATOR_HOST: '127.0.0.1',
        ISLET_OPERATOR_IDENTITY: identity,
        ISLET_OPERATOR_LEASE_DURATION_MS: '1500',
        ISLET_OPERATOR_RETRY_PERIOD_MS: '200',
        ISLET_OPERATOR_RESYNC_INTERVAL_MS: '200',
      }),
      kubeConfig: api.kubeConfig(),
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
    queue = new Queue(runQueueName(MODE), { connection: redis, prefix: QUEUE_PREFIX });
  });
  afterAll(async () => {
    for (const op of ops) await op.stop();
    await queue?.close();
    await api?.stop();
    redis?.disconnect();
    await redisServer?.stop();
  });

  it('the new leader holds replicas for the rest of the window, then scales down', async () => {
    const a = await start('op-a');
    await waitFor('a leads', () => a.elector.isLeader);
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'run', data: { i } })));
    api.apply(POOLS, ns, {
      apiVersion: 'islet.dev/v1alpha1',
      kind: 'RunnerPool',
      metadata: { name: 'p', namespace: ns },
      spec: {
        mode: MODE,
        minReplicas: 1,
        maxReplicas: 10,
        targetWaitingPerReplica: 2,
        image: 'islet/runner:test',
        scaleDownStabilizationSeconds: WINDOW_S,
      },
    } satisfies RunnerPool);
    await waitFor('6 replicas', () => replicas() === 6);
    const persisted = () => (api.get(POOLS, ns, 'p') as RunnerPool).status?.recommendations ?? [];
    await waitFor('history in status', () => persisted().some((r) => r.replicas === 6));
    // Demand goes away, and the leader with it.
    await queue.obliterate({ force: true });
    const dropAt = Date.now();
    await a.stop();
    const b = await start('op-b');
    await waitFor('b leads', () => b.elector.isLeader);
    // Until the window has passed since the last high recommendation, replicas hold.
    while (Date.now() < dropAt + (WINDOW_S - 1) * 1000) {
      expect(replicas()).toBe(6);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Then down (history times are rounded up by up to 15 s: never earlier, somewhat later).
    await waitFor('scaled down', () => replicas() === 1, 30_000);
  }, 60_000);
});
