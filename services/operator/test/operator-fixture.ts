/**
 * What the operator's end-to-end tests share: a REAL Redis (with BullMQ queues per mode), the FAKE
 * Kubernetes API (fake-kube-api.ts), operators started against both with short test timings, and
 * the polling and lookup helpers. `stop()` ends everything it started, in order, even when a test
 * failed half way (call it from `afterAll`). Test code only: never shipped in an image.
 */
import { QUEUE_PREFIX, runQueueName, type SandboxMode } from '@islet/protocol';
import { type RedisServer, startRedis } from '@islet/testkit';
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { type OperatorConfig, operatorConfigSchema } from '../src/config.ts';
import { type Operator, startOperator } from '../src/operator.ts';
import type { Condition, RunnerPool } from '../src/runner-pool.ts';
import { FakeKubeApi, type FakeKubeApiOptions } from './fake-kube-api.ts';

export const NS = 'islet';
export const POOLS = 'islet.dev/v1alpha1/runnerpools';
export const DEPLOYS = 'apps/v1/deployments';
export const silentLog = { info() {}, warn() {}, error() {} };

/**
 * Operator configuration with test timings (1.5 s lease, 200 ms retry and resync, failed reconciles
 * retried after 200 ms doubling up to 2 s: a few request timeouts on a loaded machine must not park a
 * pool for the production backoff's minutes).
 */
export function testOperatorConfig(over: Partial<Record<keyof OperatorConfig, string>> = {}): OperatorConfig {
  return operatorConfigSchema.parse({
    ISLET_NAMESPACE: NS,
    ISLET_OPERATOR_METRICS_PORT: '0',
    ISLET_OPERATOR_HOST: '127.0.0.1',
    ISLET_OPERATOR_LEASE_DURATION_MS: '1500',
    ISLET_OPERATOR_RETRY_PERIOD_MS: '200',
    ISLET_OPERATOR_RESYNC_INTERVAL_MS: '200',
    ISLET_OPERATOR_RETRY_BACKOFF_INITIAL_MS: '200',
    ISLET_OPERATOR_RETRY_BACKOFF_MAX_MS: '2000',
    ...over,
  });
}

/**
 * Leader timings for a test that is not about losing the lease, on a loaded box: the production
 * default lease (15 s: a 10 s renew deadline, 5 s API calls; config.ts). The 1.5 s test lease above
 * gives a 1 s renew deadline and 500 ms calls, which the fake API in this same process missed at
 * load 18–26: the leader stepped down 10 times in a 15 s file and its reconciles timed out, so a
 * pool's next scale came after the test's wait (test/bench/README.md, round 52 `flaky-load`). A
 * stopped leader still frees the Lease, so a successor takes over at its next retry (200 ms).
 */
export const STEADY_LEADER = { ISLET_OPERATOR_LEASE_DURATION_MS: '15000' } as const;

/** A RunnerPool in the test namespace (spec defaults: read-only, 1..10 replicas, target 2). */
export function runnerPool(
  name: string,
  spec: Record<string, unknown> = {},
  metadata: Partial<RunnerPool['metadata']> = {},
): RunnerPool {
  return {
    apiVersion: 'islet.dev/v1alpha1',
    kind: 'RunnerPool',
    metadata: { name, namespace: NS, ...metadata },
    spec: {
      mode: 'read-only',
      minReplicas: 1,
      maxReplicas: 10,
      targetWaitingPerReplica: 2,
      image: 'islet/runner:test',
      scaleUpStabilizationSeconds: 0,
      scaleDownStabilizationSeconds: 0,
      // What the CRD's default gives a pool on an API server that applies it (the fake does not).
      replicas: 0,
      ...spec,
    },
  };
}

/**
 * Polls `fn` every `intervalMs` until it returns something truthy (errors count as not yet); throws
 * naming `what`. The kube tests (test/kube) poll a real API server, less often.
 */
export async function waitFor<T>(
  what: string,
  fn: () => T | Promise<T>,
  timeoutMs = 15_000,
  intervalMs = 25,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

export interface OperatorFixture {
  redisServer: RedisServer;
  redis: Redis;
  api: FakeKubeApi;
  /** The mode's run queue (BullMQ, the gateway's prefix), opened once. */
  queue(mode: SandboxMode): Queue;
  /** Starts an operator (stopped by `stop()`); `identity` also names its fake-API client. */
  startOperator(over?: Partial<Record<keyof OperatorConfig, string>>, identity?: string): Promise<Operator>;
  deployment(pool: string): V1Deployment | undefined;
  replicasOf(pool: string): number | undefined;
  podsOf(pool: string): V1Pod[];
  pool(name: string): RunnerPool | undefined;
  condition(pool: string, type: string): Condition | undefined;
  stop(): Promise<void>;
}

export async function startOperatorFixture(
  opts: FakeKubeApiOptions = { simulateWorkloads: true },
): Promise<OperatorFixture> {
  const redisServer = await startRedis({ appendOnly: false });
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  // Tests stop Redis on purpose (readiness); the operator's own client reports it.
  redis.on('error', () => {});
  let api: FakeKubeApi;
  try {
    api = await FakeKubeApi.start(opts);
  } catch (err) {
    redis.disconnect();
    await redisServer.stop();
    throw err;
  }
  const queues = new Map<SandboxMode, Queue>();
  const operators: Operator[] = [];
  const pool = (name: string) => api.get(POOLS, NS, name) as RunnerPool | undefined;
  const deployment = (name: string) => api.get(DEPLOYS, NS, `${name}-runner`) as V1Deployment | undefined;
  return {
    redisServer,
    redis,
    api,
    queue(mode) {
      let q = queues.get(mode);
      if (!q) {
        q = new Queue(runQueueName(mode), { connection: redis, prefix: QUEUE_PREFIX });
        queues.set(mode, q);
      }
      return q;
    },
    async startOperator(over = {}, identity) {
      const op = await startOperator({
        config: testOperatorConfig({ ...(identity ? { ISLET_OPERATOR_IDENTITY: identity } : {}), ...over }),
        kubeConfig: api.kubeConfig(identity),
        redis,
        log: silentLog,
        defaultMetrics: false,
      });
      operators.push(op);
      return op;
    },
    deployment,
    replicasOf: (name) => deployment(name)?.spec?.replicas,
    podsOf: (name) => api.list('v1/pods', NS, `islet.dev/pool=${name}`) as V1Pod[],
    pool,
    condition: (name, type) => pool(name)?.status?.conditions?.find((c) => c.type === type),
    async stop() {
      for (const op of operators.splice(0)) await op.stop().catch(() => {});
      for (const q of queues.values()) await q.close().catch(() => {});
      queues.clear();
      await api.stop();
      redis.disconnect();
      await redisServer.stop();
    },
  };
}
