/**
 * The runner Deployment a RunnerPool becomes. The pod's security posture is the product: every
 * field below is what the Helm chart renders for a helm-managed pool too (test/chart checks
 * both agree), and what Pod Security `restricted` demands.
 */
import { createHash } from 'node:crypto';
import type {
  V1Affinity,
  V1Container,
  V1Deployment,
  V1PodSpec,
  V1PodTemplateSpec,
  V1Toleration,
  V1TopologySpreadConstraint,
  V1Volume,
  V1VolumeMount,
  V1VolumeProjection,
} from '@kubernetes/client-node';
import {
  API_VERSION,
  deploymentNameFor,
  KIND,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MODE_LABEL,
  POOL_LABEL,
  type RunnerPool,
  type RunnerPoolSpec,
} from './runner-pool.ts';

/** Longest run (600 s, the contract's ceiling) plus time to hand back and flush: 660 s. */
export const TERMINATION_GRACE_SECONDS = 660;
/** How long the runner lets runs finish after SIGTERM before handing them back: 630 s. */
const RUNNER_SHUTDOWN_GRACE_MS = 630_000;
const TEMPLATE_HASH_ANNOTATION = 'islet.dev/template-hash';
const RUNNER_UID = 10001;

export interface PodDefaults {
  /** ConfigMap with the runner's non-secret environment (REDIS_URL, gateway URL…). */
  envConfigMap?: string;
  /** Secret with the runner's secrets (seal keys, token…), mounted at SECRET_MOUNT_PATH. */
  envSecret?: string;
  serviceAccountName?: string;
  imagePullPolicy?: string;
  /** Port the runner serves /metrics and /healthz on. */
  metricsPort: number;
  priorityClassName?: string;
  /** Where runner pods may go (dedicated nodes for untrusted code). */
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
  /** RuntimeClass (gVisor, Kata): a second isolation layer around the whole runner pod. */
  runtimeClassName?: string;
  affinity?: V1Affinity;
  topologySpreadConstraints?: V1TopologySpreadConstraint[];
  imagePullSecrets?: string[];
  /** Extra pod annotations and labels (the chart's podAnnotations/podLabels); Islet's own win. */
  podAnnotations?: Record<string, string>;
  podLabels?: Record<string, string>;
  /** Extra volumes of the pod and mounts of the runner container (CA bundles, a socket…). */
  extraVolumes?: V1Volume[];
  extraVolumeMounts?: V1VolumeMount[];
  /**
   * Where session workspaces are mounted (the runner's ISLET_WORKSPACE_ROOT, from the chart's
   * ConfigMap); the gateway mounts the same volume at the same path. Default `/workspace`.
   */
  workspaceMountPath?: string;
  /** ReadWriteMany PVC shared by the gateway and every runner pod; unset = an emptyDir per pod. */
  workspaceClaim?: string;
  /** sizeLimit of that per-pod emptyDir (Kubernetes quantity). Default `1Gi`. */
  workspaceSizeLimit?: string;
  /** Secret key holding the Redis password, mounted as REDIS_PASSWORD_FILE. */
  redisPasswordSecret?: { name: string; key: string };
  /** Secret key holding the PEM CA of a rediss:// Redis, mounted as REDIS_CA_FILE. */
  redisCaSecret?: { name: string; key: string };
}

const DEFAULT_WORKSPACE_MOUNT_PATH = '/workspace';
const DEFAULT_WORKSPACE_SIZE_LIMIT = '1Gi';

/** The `workspace` volume; mirrors the chart's `islet.workspace.volume` helper. */
function workspaceVolume(defaults: PodDefaults): V1Volume {
  if (defaults.workspaceClaim)
    return { name: 'workspace', persistentVolumeClaim: { claimName: defaults.workspaceClaim } };
  return {
    name: 'workspace',
    emptyDir: { sizeLimit: defaults.workspaceSizeLimit ?? DEFAULT_WORKSPACE_SIZE_LIMIT },
  };
}

/**
 * The runner container's Localhost seccomp profile. The broker in the container needs TCP (Redis,
 * the gateway), so the container gets `runner.json` (the mode profiles' denials, plus inet sockets);
 * every sandbox process the broker starts runs under islet-jail, which stacks the mode's own
 * profile (`<mode>.json`: no sockets at all) on top. A mode profile at container level would cut the
 * broker off from Redis. See services/kernel-sandbox/README.md ("Which profile goes on the pod").
 */
const RUNNER_SECCOMP_PROFILE = 'islet/runner.json';

/** Where the Secret is mounted; mirrors the chart's `islet.secretMountPath`. */
const SECRET_MOUNT_PATH = '/var/run/secrets/islet';
/**
 * The Redis password and CA, projected into the same directory from whatever Secret holds them (the
 * release's, or the external Redis's own): one directory for islet-jail to wall off from sandboxes.
 * Mirrors the chart's `islet.redisSecretSources`.
 */
export const REDIS_PASSWORD_FILE = `${SECRET_MOUNT_PATH}/redis/password`;
export const REDIS_CA_FILE = `${SECRET_MOUNT_PATH}/redis/ca.crt`;
/** Secret keys handed to the process as `<KEY>_FILE` paths (services/core/src/config.ts). */
const SECRET_FILE_KEYS = ['ISLET_SEAL_KEYS', 'ISLET_INTERNAL_TOKEN', 'ISLET_JOURNAL_ARGS_KEY'];

/**
 * The secret variables: files in the mounted Secret, never environment values (which leak into
 * /proc/<pid>/environ and child processes). Mirrors the chart's `islet.secretEnv`.
 */
function secretEnv(secret: string): NonNullable<V1Container['env']> {
  return [
    ...SECRET_FILE_KEYS.map((k) => ({ name: `${k}_FILE`, value: `${SECRET_MOUNT_PATH}/${k}` })),
    {
      name: 'ISLET_SEAL_ACTIVE_KEY_ID',
      valueFrom: { secretKeyRef: { name: secret, key: 'ISLET_SEAL_ACTIVE_KEY_ID', optional: true } },
    },
    {
      name: 'ISLET_REDIS_URL',
      valueFrom: { secretKeyRef: { name: secret, key: 'ISLET_REDIS_URL', optional: true } },
    },
  ];
}

/** ISLET_REDIS_PASSWORD_FILE / ISLET_REDIS_CA_FILE where the pod has them. Mirrors `islet.redisEnv`. */
function redisFileEnv(defaults: PodDefaults): NonNullable<V1Container['env']> {
  return [
    ...(defaults.redisPasswordSecret
      ? [{ name: 'ISLET_REDIS_PASSWORD_FILE', value: REDIS_PASSWORD_FILE }]
      : []),
    ...(defaults.redisCaSecret ? [{ name: 'ISLET_REDIS_CA_FILE', value: REDIS_CA_FILE }] : []),
  ];
}

/**
 * The `secrets` volume: the release's Secret (every key) plus the Redis password and CA items, one
 * read-only directory (0440; the pod's fsGroup reads it). Mirrors the chart's `islet.secretVolume`.
 */
function secretsVolume(defaults: PodDefaults): V1Volume | undefined {
  const sources: V1VolumeProjection[] = [];
  if (defaults.envSecret) sources.push({ secret: { name: defaults.envSecret } });
  const item = (s: { name: string; key: string }, path: string): V1VolumeProjection => ({
    secret: { name: s.name, items: [{ key: s.key, path }] },
  });
  if (defaults.redisPasswordSecret) sources.push(item(defaults.redisPasswordSecret, 'redis/password'));
  if (defaults.redisCaSecret) sources.push(item(defaults.redisCaSecret, 'redis/ca.crt'));
  if (sources.length === 0) return undefined;
  return { name: 'secrets', projected: { sources, defaultMode: 0o440 } };
}

function buildPodSpec(spec: RunnerPoolSpec, defaults: PodDefaults): V1PodSpec {
  const secrets = secretsVolume(defaults);
  const envFrom: NonNullable<V1Container['envFrom']> = [];
  if (defaults.envConfigMap) envFrom.push({ configMapRef: { name: defaults.envConfigMap } });
  const container: V1Container = {
    name: 'runner',
    image: spec.image,
    imagePullPolicy: defaults.imagePullPolicy ?? 'IfNotPresent',
    env: [
      { name: 'ISLET_RUNNER_MODES', value: spec.mode },
      // Sandbox processes start under islet-jail with the mode's profile, Landlock and rlimits.
      { name: 'ISLET_SANDBOX_JAIL', value: 'on' },
      { name: 'ISLET_RUNNER_METRICS_PORT', value: String(defaults.metricsPort) },
      // Runs in flight finish on SIGTERM (scale-in drain); the pod's grace period covers this.
      { name: 'ISLET_RUNNER_SHUTDOWN_GRACE_MS', value: String(RUNNER_SHUTDOWN_GRACE_MS) },
      // The pod name names the BullMQ worker, which is how the operator sees which pod is busy.
      { name: 'ISLET_RUNNER_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ...(defaults.envSecret ? secretEnv(defaults.envSecret) : []),
      ...redisFileEnv(defaults),
    ],
    envFrom,
    ports: [{ name: 'metrics', containerPort: defaults.metricsPort, protocol: 'TCP' }],
    resources: spec.resources ?? {
      requests: { cpu: '500m', memory: '512Mi' },
      limits: { cpu: '2', memory: '2Gi' },
    },
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: RUNNER_UID,
      runAsGroup: RUNNER_UID,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'Localhost', localhostProfile: RUNNER_SECCOMP_PROFILE },
    },
    livenessProbe: { httpGet: { path: '/healthz', port: 'metrics' }, periodSeconds: 10, failureThreshold: 3 },
    readinessProbe: { httpGet: { path: '/readyz', port: 'metrics' }, periodSeconds: 5, failureThreshold: 2 },
    volumeMounts: [
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'workspace', mountPath: defaults.workspaceMountPath ?? DEFAULT_WORKSPACE_MOUNT_PATH },
      ...(secrets ? [{ name: 'secrets', mountPath: SECRET_MOUNT_PATH, readOnly: true }] : []),
      ...(defaults.extraVolumeMounts ?? []),
    ],
  };
  return {
    serviceAccountName: defaults.serviceAccountName,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
    priorityClassName: defaults.priorityClassName,
    imagePullSecrets: defaults.imagePullSecrets?.length
      ? defaults.imagePullSecrets.map((name) => ({ name }))
      : undefined,
    nodeSelector:
      defaults.nodeSelector && Object.keys(defaults.nodeSelector).length ? defaults.nodeSelector : undefined,
    tolerations: defaults.tolerations?.length ? defaults.tolerations : undefined,
    runtimeClassName: defaults.runtimeClassName || undefined,
    affinity: defaults.affinity,
    topologySpreadConstraints: defaults.topologySpreadConstraints?.length
      ? defaults.topologySpreadConstraints
      : undefined,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: RUNNER_UID,
      runAsGroup: RUNNER_UID,
      fsGroup: RUNNER_UID,
      seccompProfile: { type: 'Localhost', localhostProfile: RUNNER_SECCOMP_PROFILE },
    },
    containers: [container],
    volumes: [
      { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: spec.tmpSizeLimit } },
      workspaceVolume(defaults),
      ...(secrets ? [secrets] : []),
      ...(defaults.extraVolumes ?? []),
    ],
  };
}

function templateHash(template: V1PodTemplateSpec): string {
  return createHash('sha256').update(JSON.stringify(template)).digest('hex').slice(0, 16);
}

const NOT_INHERITED_LABELS = new Set(['helm.sh/chart', MANAGED_BY_LABEL]);

function poolLabels(poolName: string, mode: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'islet',
    'app.kubernetes.io/component': 'runner',
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [POOL_LABEL]: poolName,
    [MODE_LABEL]: mode,
  };
}

export function buildDeployment(
  pool: RunnerPool,
  spec: RunnerPoolSpec,
  replicas: number,
  defaults: PodDefaults,
): V1Deployment {
  const name = pool.metadata.name ?? '';
  // The pool's own labels (release, part-of…) carry over, so NetworkPolicies and dashboards that
  // select the release's runner pods also select the operator's.
  const inherited = Object.fromEntries(
    Object.entries(pool.metadata.labels ?? {}).filter(([k]) => !NOT_INHERITED_LABELS.has(k)),
  );
  const labels = { ...inherited, ...poolLabels(name, spec.mode) };
  const template: V1PodTemplateSpec = {
    metadata: {
      labels: { ...defaults.podLabels, ...labels },
      annotations: {
        ...defaults.podAnnotations,
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': String(defaults.metricsPort),
        // `checksum/*` annotations of the pool (the chart's config checksum) roll the pods
        // when the runner configuration changes, as they do for helm-managed Deployments.
        ...Object.fromEntries(
          Object.entries(pool.metadata.annotations ?? {}).filter(([k]) => k.startsWith('checksum/')),
        ),
      },
    },
    spec: buildPodSpec(spec, defaults),
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: deploymentNameFor(name),
      namespace: pool.metadata.namespace,
      labels,
      annotations: { [TEMPLATE_HASH_ANNOTATION]: templateHash(template) },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: KIND,
          name,
          uid: pool.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      replicas,
      selector: { matchLabels: { [POOL_LABEL]: name } },
      // Never more than one extra pod during a rollout; never fewer: runs in flight keep their pod.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template,
    },
  };
}

export function templateHashOf(d: V1Deployment | undefined): string | undefined {
  return d?.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION];
}
