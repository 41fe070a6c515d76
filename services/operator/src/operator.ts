/**
 * Wires the operator together: metrics server, leader election, and the controller that runs
 * only while this replica leads. Separate from main.ts so tests start whole operators in-process
 * against the fake API server with explicit options.
 */
import type { Server } from 'node:http';
import {
  CoordinationV1Api,
  type KubeConfig,
  type V1Affinity,
  type V1TopologySpreadConstraint,
  type V1Volume,
  type V1VolumeMount,
  Watch,
} from '@kubernetes/client-node';
import type { Redis } from 'ioredis';
import { leaderTimings, type OperatorConfig } from './config.ts';
import { type Logger, PoolController } from './controller.ts';
import type { PodDefaults } from './deployment.ts';
import { createDepthReader } from './depth.ts';
import { createKubeClient } from './kube.ts';
import { LeaderElector } from './leader.ts';
import { createOperatorMetrics, type OperatorMetrics, startMetricsServer } from './metrics.ts';
import { createReadinessCheck } from './readiness.ts';
import { withTimeouts } from './timeout.ts';

export interface Operator {
  metrics: OperatorMetrics;
  elector: LeaderElector;
  /** The controller while leading, else undefined. */
  controller(): PoolController | undefined;
  metricsPort(): number;
  stop(): Promise<void>;
}

/** What every runner pod gets, from the operator's configuration (the chart sets it from values). */
export function podDefaultsFromConfig(config: OperatorConfig): PodDefaults {
  return {
    envConfigMap: config.ISLET_RUNNER_ENV_CONFIGMAP,
    envSecret: config.ISLET_RUNNER_ENV_SECRET,
    serviceAccountName: config.ISLET_RUNNER_SERVICE_ACCOUNT,
    priorityClassName: config.ISLET_RUNNER_PRIORITY_CLASS,
    imagePullPolicy: config.ISLET_RUNNER_IMAGE_PULL_POLICY,
    metricsPort: config.ISLET_RUNNER_METRICS_PORT,
    nodeSelector: config.ISLET_RUNNER_NODE_SELECTOR,
    tolerations: config.ISLET_RUNNER_TOLERATIONS,
    runtimeClassName: config.ISLET_RUNNER_RUNTIME_CLASS,
    affinity: Object.keys(config.ISLET_RUNNER_AFFINITY).length
      ? (config.ISLET_RUNNER_AFFINITY as V1Affinity)
      : undefined,
    topologySpreadConstraints: config.ISLET_RUNNER_TOPOLOGY_SPREAD.length
      ? (config.ISLET_RUNNER_TOPOLOGY_SPREAD as unknown as V1TopologySpreadConstraint[])
      : undefined,
    imagePullSecrets: config.ISLET_RUNNER_IMAGE_PULL_SECRETS,
    podAnnotations: config.ISLET_RUNNER_POD_ANNOTATIONS,
    podLabels: config.ISLET_RUNNER_POD_LABELS,
    extraVolumes: config.ISLET_RUNNER_EXTRA_VOLUMES as unknown as V1Volume[],
    extraVolumeMounts: config.ISLET_RUNNER_EXTRA_VOLUME_MOUNTS as unknown as V1VolumeMount[],
    workspaceMountPath: config.ISLET_RUNNER_WORKSPACE_MOUNT_PATH,
    workspaceClaim: config.ISLET_RUNNER_WORKSPACE_CLAIM,
    workspaceSizeLimit: config.ISLET_RUNNER_WORKSPACE_SIZE_LIMIT,
    redisPasswordSecret: config.ISLET_RUNNER_REDIS_PASSWORD_SECRET
      ? { name: config.ISLET_RUNNER_REDIS_PASSWORD_SECRET, key: config.ISLET_RUNNER_REDIS_PASSWORD_KEY }
      : undefined,
    redisCaSecret: config.ISLET_RUNNER_REDIS_CA_SECRET
      ? { name: config.ISLET_RUNNER_REDIS_CA_SECRET, key: config.ISLET_RUNNER_REDIS_CA_KEY }
      : undefined,
  };
}

export async function startOperator(deps: {
  config: OperatorConfig;
  kubeConfig: KubeConfig;
  redis: Redis;
  log: Logger;
  /** Default true; tests turn default process metrics off to keep registries small. */
  defaultMetrics?: boolean;
}): Promise<Operator> {
  const { config, kubeConfig, redis, log } = deps;
  const metrics = createOperatorMetrics({ defaults: deps.defaultMetrics });
  const timings = leaderTimings(config);
  // Every API call times out (watches have their own restart logic): a hung call must not hold
  // a reconcile, or a Lease renewal, past the renew deadline.
  const kube = withTimeouts(createKubeClient(kubeConfig), timings.requestTimeoutMs);
  const depth = createDepthReader(redis);
  let controller: PoolController | undefined;
  const newController = () =>
    new PoolController({
      kube,
      watch: new Watch(kubeConfig),
      depth,
      metrics,
      namespace: config.ISLET_NAMESPACE,
      defaults: podDefaultsFromConfig(config),
      resyncIntervalMs: config.ISLET_OPERATOR_RESYNC_INTERVAL_MS,
      watchBackoff: {
        initialMs: config.ISLET_OPERATOR_WATCH_BACKOFF_INITIAL_MS,
        maxMs: config.ISLET_OPERATOR_WATCH_BACKOFF_MAX_MS,
      },
      retryBackoff: {
        initialMs: config.ISLET_OPERATOR_RETRY_BACKOFF_INITIAL_MS,
        maxMs: config.ISLET_OPERATOR_RETRY_BACKOFF_MAX_MS,
      },
      log,
      identity: config.ISLET_OPERATOR_IDENTITY,
    });
  const leaseApi = withTimeouts(kubeConfig.makeApiClient(CoordinationV1Api), timings.requestTimeoutMs);
  const elector = new LeaderElector({
    api: leaseApi,
    namespace: config.ISLET_NAMESPACE,
    name: config.ISLET_OPERATOR_LEASE_NAME,
    identity: config.ISLET_OPERATOR_IDENTITY,
    leaseDurationMs: timings.leaseDurationMs,
    renewDeadlineMs: timings.renewDeadlineMs,
    retryPeriodMs: timings.retryPeriodMs,
    onStartedLeading: () => {
      log.info({ identity: config.ISLET_OPERATOR_IDENTITY }, 'started leading');
      metrics.leader.set(1);
      controller = newController();
      controller.start();
    },
    onStoppedLeading: () => {
      log.warn({ identity: config.ISLET_OPERATOR_IDENTITY }, 'stopped leading');
      metrics.leader.set(0);
      const c = controller;
      controller = undefined;
      void c?.stop();
    },
    onError: (err) => log.warn({ err: String(err) }, 'lease update failed'),
  });
  const server: Server = await startMetricsServer(
    metrics,
    config.ISLET_OPERATOR_METRICS_PORT,
    config.ISLET_OPERATOR_HOST,
    createReadinessCheck({
      kubeProbe: () =>
        leaseApi.readNamespacedLease({
          name: config.ISLET_OPERATOR_LEASE_NAME,
          namespace: config.ISLET_NAMESPACE,
        }),
      redis,
      timeoutMs: Math.min(timings.requestTimeoutMs, 2_000),
    }),
  );
  elector.start();
  return {
    metrics,
    elector,
    controller: () => controller,
    metricsPort: () => {
      const a = server.address();
      return a && typeof a === 'object' ? a.port : 0;
    },
    async stop() {
      await elector.stop();
      await controller?.stop();
      await depth.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
