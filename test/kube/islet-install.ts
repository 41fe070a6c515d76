// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON
/**
 * The chart on the test control plane. The chart targets Kubernetes >= 1.27; the newest API server
 * Debian builds is 1.20, so the rendered objects are converted for it, and only in two ways: PDBs
 * go to policy/v1beta1 (same fields; policy/v1 came in 1.21) and the CRD loses its CEL rule (CEL
 * came in 1.23; the operator's own spec check still answers InvalidSpec). This 1.20 build also stores
 * CRDs without their schemas' `default` and `enum` (a build defect: the operator defaults and checks
 * them itself, and gives a pool without spec.replicas its 0). Applied object by object as the test's admin (helm hooks excepted:
 * they need a kubelet), and operators started in-process with the env the chart gives the operator
 * Deployment, authenticated as the chart's operator ServiceAccount by a bound token.
 */
import { runQueueName, type SandboxMode } from '@islet/protocol';
import { type RedisServer, startRedis } from '@islet/testkit';
import * as k8s from '@kubernetes/client-node';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { parseAllDocuments } from 'yaml';
import type { OperatorConfig } from '../../services/operator/src/config.ts';
import { type Operator, startOperator } from '../../services/operator/src/operator.ts';
import type { RunnerPool } from '../../services/operator/src/runner-pool.ts';
import {
  waitFor as fixtureWaitFor,
  silentLog,
  testOperatorConfig,
} from '../../services/operator/test/operator-fixture.ts';
import { helm, type K8sObject, renderArgs } from '../chart/helm.ts';
import type { KubeAccess } from './control-plane.ts';
import { type HangProxy, startHangProxy } from './hang-proxy.ts';
import { adminConfig, serviceAccountConfig } from './kube-clients.ts';

export const RELEASE = 'islet';
export { silentLog };

/** helm template, converted for a 1.20 API server (see the header). */
export function renderFor120(namespace: string, set: string[] = []): K8sObject[] {
  const r = helm(renderArgs({ namespace, release: RELEASE, set }));
  if (r.status !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((d): d is K8sObject => !!d && typeof d === 'object' && 'kind' in d)
    .map((o) => {
      if (o.kind === 'PodDisruptionBudget' && o.apiVersion === 'policy/v1')
        return { ...o, apiVersion: 'policy/v1beta1' };
      if (o.kind === 'CustomResourceDefinition') return withoutCel(o);
      return o;
    });
}

/** The CRD as a 1.20 API server takes it: without x-kubernetes-validations (CEL came in 1.23). */
export function withoutCel<T>(o: T): T {
  if (Array.isArray(o)) return o.map(withoutCel) as T;
  if (o && typeof o === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) if (k !== 'x-kubernetes-validations') out[k] = withoutCel(v);
    return out as T;
  }
  return o;
}

/** The operator tests' waitFor, with a real API server's patience: 30 s, polled every 100 ms. */
export function waitFor<T>(
  what: string,
  fn: () => T | Promise<T>,
  timeoutMs = 30_000,
): Promise<NonNullable<T>> {
  return fixtureWaitFor(what, fn, timeoutMs, 100);
}

export interface Install {
  namespace: string;
  objects: K8sObject[];
  admin: k8s.KubeConfig;
  apps: k8s.AppsV1Api;
  core: k8s.CoreV1Api;
  custom: k8s.CustomObjectsApi;
  redisServer: RedisServer;
  redis: Redis;
  /** Queues BullMQ jobs on a mode's run queue (the depth the operator scales on). */
  queue(mode: SandboxMode, n: number): Promise<void>;
  drainQueue(mode: SandboxMode): Promise<void>;
  bullQueue(mode: SandboxMode): Queue;
  /** Starts an operator as the chart's ServiceAccount; `viaProxy` puts a hang-able proxy in front of the API. */
  operator(opts?: { identity?: string; env?: Record<string, string>; viaProxy?: boolean }): Promise<{
    op: Operator;
    proxy: HangProxy | undefined;
  }>;
  /** The operator configuration the chart renders, with test timings and `env` on top. */
  config(env: Record<string, string>): OperatorConfig;
  pool(name: string): Promise<RunnerPool>;
  createPool(name: string, spec: Record<string, unknown>): Promise<RunnerPool>;
  stop(): Promise<void>;
}

/**
 * On top of the operator fixture's test configuration (testOperatorConfig): a real API server's
 * timings, a 6 s lease (renew deadline 4 s, requests 2 s), 500 ms retry and resync.
 */
const TEST_TIMINGS = {
  ISLET_OPERATOR_LEASE_DURATION_MS: '6000',
  ISLET_OPERATOR_RENEW_DEADLINE_MS: '4000',
  ISLET_OPERATOR_RETRY_PERIOD_MS: '500',
  ISLET_OPERATOR_REQUEST_TIMEOUT_MS: '2000',
  ISLET_OPERATOR_RESYNC_INTERVAL_MS: '500',
  ISLET_OPERATOR_RETRY_BACKOFF_INITIAL_MS: '500',
  ISLET_OPERATOR_RETRY_BACKOFF_MAX_MS: '8000',
};

/**
 * The chart's operator env without what belongs to the pod (its metrics port and listen address):
 * the fixture's port 0 on loopback applies here, so several operators of a file can run at once.
 */
function podOnly(env: Record<string, string>): Record<string, string> {
  const { ISLET_OPERATOR_METRICS_PORT: _port, ISLET_OPERATOR_HOST: _host, ...rest } = env;
  return rest;
}

/** The operator Deployment's literal env (values as the chart renders them). */
function operatorEnv(objects: K8sObject[]): Record<string, string> {
  const d = objects.find(
    (o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'operator',
  );
  const env: Record<string, string> = {};
  for (const e of d?.spec.template.spec.containers[0].env ?? [])
    if (typeof e.value === 'string') env[e.name] = e.value;
  return env;
}

export async function installIslet(
  access: KubeAccess,
  namespace: string,
  set: string[] = [],
): Promise<Install> {
  const admin = adminConfig(access);
  const objectsApi = k8s.KubernetesObjectApi.makeApiClient(admin);
  const apps = admin.makeApiClient(k8s.AppsV1Api);
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const custom = admin.makeApiClient(k8s.CustomObjectsApi);
  const objects = renderFor120(namespace, [
    'redis.bundled.enabled=true',
    'monitoring.serviceMonitor.enabled=false',
    'monitoring.prometheusRule.enabled=false',
    ...set,
  ]);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  for (const o of objects) {
    if (o.metadata.annotations?.['helm.sh/hook']) continue;
    try {
      await objectsApi.create(o as k8s.KubernetesObject);
    } catch (err) {
      // Cluster-scoped objects (the CRD) are shared by every file's install.
      if ((err as { code?: number }).code !== 409 || o.metadata.namespace) {
        throw new Error(
          `apply ${o.kind}/${o.metadata.name}: ${(err as Error).message.split('\nHeaders')[0]}`,
        );
      }
    }
    if (o.kind === 'CustomResourceDefinition') {
      await waitFor('CRD established', async () => {
        const r = await objectsApi.read({
          apiVersion: o.apiVersion,
          kind: o.kind,
          metadata: { name: o.metadata.name },
        });
        return (r as any).status?.conditions?.some(
          (c: any) => c.type === 'Established' && c.status === 'True',
        );
      });
    }
  }
  const redisServer = await startRedis();
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  const queues = new Map<SandboxMode, Queue>();
  const queueOf = (mode: SandboxMode) => {
    let q = queues.get(mode);
    if (!q) {
      q = new Queue(runQueueName(mode), { connection: redis, prefix: 'islet' });
      queues.set(mode, q);
    }
    return q;
  };
  const started: { op: Operator; proxy: HangProxy | undefined }[] = [];
  const env = operatorEnv(objects);
  const operatorSa = objects.find(
    (o) => o.kind === 'ServiceAccount' && o.metadata.labels?.['app.kubernetes.io/component'] === 'operator',
  )?.metadata.name;
  if (!operatorSa) throw new Error('the chart rendered no operator ServiceAccount');
  const configWith = (over: Record<string, string>): OperatorConfig =>
    testOperatorConfig({
      ...podOnly(env),
      ...TEST_TIMINGS,
      ISLET_NAMESPACE: namespace,
      ISLET_REDIS_URL: redisServer.url,
      ...over,
    } as Parameters<typeof testOperatorConfig>[0]);
  return {
    namespace,
    objects,
    admin,
    apps,
    core,
    custom,
    redisServer,
    redis,
    async queue(mode, n) {
      await queueOf(mode).addBulk(Array.from({ length: n }, (_, i) => ({ name: 'run', data: { i } })));
    },
    async drainQueue(mode) {
      await queueOf(mode).obliterate({ force: true });
    },
    bullQueue: queueOf,
    async operator(opts = {}) {
      const proxy = opts.viaProxy ? await startHangProxy(access.server) : undefined;
      const kubeConfig = await serviceAccountConfig(
        access,
        namespace,
        operatorSa,
        proxy?.server ?? access.server,
      );
      const config = configWith({
        ISLET_OPERATOR_IDENTITY: opts.identity ?? `operator-${started.length}`,
        ...opts.env,
      });
      const op = await startOperator({ config, kubeConfig, redis, log: silentLog, defaultMetrics: false });
      const entry = { op, proxy };
      started.push(entry);
      return entry;
    },
    config: configWith,
    async pool(name) {
      return (await custom.getNamespacedCustomObject({
        group: 'islet.dev',
        version: 'v1alpha1',
        namespace,
        plural: 'runnerpools',
        name,
      })) as RunnerPool;
    },
    async createPool(name, spec) {
      return (await custom.createNamespacedCustomObject({
        group: 'islet.dev',
        version: 'v1alpha1',
        namespace,
        plural: 'runnerpools',
        body: {
          apiVersion: 'islet.dev/v1alpha1',
          kind: 'RunnerPool',
          metadata: { name, namespace },
          spec: {
            mode: 'danger-full-access',
            minReplicas: 1,
            maxReplicas: 5,
            targetWaitingPerReplica: 4,
            image: 'islet/runner:test',
            scaleDownStabilizationSeconds: 0,
            ...spec,
          },
        },
      })) as RunnerPool;
    },
    async stop() {
      for (const { op, proxy } of started.reverse()) {
        proxy?.release();
        await op.stop().catch(() => {});
        await proxy?.stop();
      }
      for (const q of queues.values()) await q.close();
      redis.disconnect();
      await redisServer.stop();
      await core.deleteNamespace({ name: namespace }).catch(() => {});
    },
  };
}
