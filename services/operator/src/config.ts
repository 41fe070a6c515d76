/**
 * Operator configuration: one zod schema over the environment, units in the names.
 * `loadOperatorConfig(env)` is called from main.ts only.
 */
import { redisConfigProblems, redisConfigShape, resolveSecretFiles } from '@islet/core';
import { z } from 'zod';

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
const optional = z
  .string()
  .optional()
  .transform((s) => (s ? s : undefined));

/** An env var holding JSON, parsed and validated; empty means the default. */
function json<T extends z.ZodType>(schema: T, def: z.infer<T>) {
  return z
    .string()
    .default('')
    .transform((text, ctx): z.infer<T> => {
      if (!text) return def;
      try {
        const r = schema.safeParse(JSON.parse(text));
        if (r.success) return r.data;
        ctx.addIssue({ code: 'custom', message: r.error.issues.map((i) => i.message).join('; ') });
      } catch {
        ctx.addIssue({ code: 'custom', message: 'not valid JSON' });
      }
      return z.NEVER;
    });
}

export const operatorConfigSchema = z.object({
  /** Namespace whose RunnerPools this operator manages (the chart sets it to its own). */
  ISLET_NAMESPACE: z.string().min(1).default('default'),
  /** Redis: the same configuration as the gateway and runners (redis-connection.ts in core). */
  ...redisConfigShape,
  ISLET_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** /metrics, /healthz, /readyz. */
  ISLET_OPERATOR_METRICS_PORT: int(9090),
  ISLET_OPERATOR_HOST: z.string().default('0.0.0.0'),
  /** Holder identity in the Lease; the pod name in a cluster. */
  ISLET_OPERATOR_IDENTITY: z
    .string()
    .min(1)
    .default(process.env.HOSTNAME ?? 'islet-operator'),
  ISLET_OPERATOR_LEASE_NAME: z.string().min(1).default('islet-operator'),
  ISLET_OPERATOR_LEASE_DURATION_MS: int(15_000, 1000),
  ISLET_OPERATOR_RETRY_PERIOD_MS: int(2_000, 100),
  /**
   * A leader that has not renewed its Lease for this long stops acting (client-go's renew deadline).
   * 0 = two thirds of the lease duration (10 000 for the default 15 000). Must be below the lease.
   */
  ISLET_OPERATOR_RENEW_DEADLINE_MS: int(0),
  /**
   * Timeout of every Kubernetes API call (watches excepted). 0 = min(5 000, lease - renew deadline),
   * so a write that started before a step-down ends before a successor can take the Lease.
   */
  ISLET_OPERATOR_REQUEST_TIMEOUT_MS: int(0),
  /** Queue depth changes produce no Kubernetes event: every pool is reconciled this often. */
  ISLET_OPERATOR_RESYNC_INTERVAL_MS: int(5_000, 100),
  ISLET_OPERATOR_WATCH_BACKOFF_INITIAL_MS: int(250, 10),
  ISLET_OPERATOR_WATCH_BACKOFF_MAX_MS: int(30_000, 100),
  /**
   * A pool whose reconcile failed is retried after this long, doubling per further failure up to
   * the max (client-go's per-item rate limiter); a spec change retries at once, a success resets it.
   */
  ISLET_OPERATOR_RETRY_BACKOFF_INITIAL_MS: int(1_000, 10),
  ISLET_OPERATOR_RETRY_BACKOFF_MAX_MS: int(300_000, 100),
  /** What runner pods get: env from this ConfigMap and Secret, this ServiceAccount. */
  ISLET_RUNNER_ENV_CONFIGMAP: optional,
  ISLET_RUNNER_ENV_SECRET: optional,
  ISLET_RUNNER_SERVICE_ACCOUNT: optional,
  ISLET_RUNNER_PRIORITY_CLASS: optional,
  ISLET_RUNNER_IMAGE_PULL_POLICY: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'),
  ISLET_RUNNER_METRICS_PORT: int(9464, 1),
  /** JSON object: nodeSelector of runner pods. */
  ISLET_RUNNER_NODE_SELECTOR: json(z.record(z.string(), z.string()), {}),
  /** JSON array: tolerations of runner pods. */
  ISLET_RUNNER_TOLERATIONS: json(
    z.array(
      z.object({
        key: z.string().optional(),
        operator: z.string().optional(),
        value: z.string().optional(),
        effect: z.string().optional(),
        tolerationSeconds: z.number().int().optional(),
      }),
    ),
    [],
  ),
  /** RuntimeClass of runner pods (gVisor `gvisor`, Kata `kata`…); empty = the node's default runtime. */
  ISLET_RUNNER_RUNTIME_CLASS: optional,
  /** JSON object: affinity of runner pods (core/v1 Affinity, passed through as written). */
  ISLET_RUNNER_AFFINITY: json(z.record(z.string(), z.unknown()), {}),
  /** JSON array: topologySpreadConstraints of runner pods (core/v1, passed through as written). */
  ISLET_RUNNER_TOPOLOGY_SPREAD: json(z.array(z.record(z.string(), z.unknown())), []),
  /** JSON object: extra annotations of runner pods (the chart's podAnnotations + runners.podAnnotations). */
  ISLET_RUNNER_POD_ANNOTATIONS: json(z.record(z.string(), z.string()), {}),
  /** JSON object: extra labels of runner pods; the operator's own labels (pool, mode, component) win. */
  ISLET_RUNNER_POD_LABELS: json(z.record(z.string(), z.string()), {}),
  /** JSON array: extra volumes of runner pods (core/v1 Volume, passed through as written). */
  ISLET_RUNNER_EXTRA_VOLUMES: json(z.array(z.record(z.string(), z.unknown())), []),
  /** JSON array: extra volumeMounts of the runner container (core/v1 VolumeMount). */
  ISLET_RUNNER_EXTRA_VOLUME_MOUNTS: json(z.array(z.record(z.string(), z.unknown())), []),
  /** Mount path of the session workspace volume in runner pods (= ISLET_WORKSPACE_ROOT). */
  ISLET_RUNNER_WORKSPACE_MOUNT_PATH: z.string().regex(/^\/./, 'an absolute path').default('/workspace'),
  /** ReadWriteMany PVC holding the workspaces, shared with the gateway; empty = an emptyDir per pod. */
  ISLET_RUNNER_WORKSPACE_CLAIM: optional,
  /** sizeLimit of the per-pod workspace emptyDir (Kubernetes quantity) when there is no claim. */
  ISLET_RUNNER_WORKSPACE_SIZE_LIMIT: z
    .string()
    .regex(/^[0-9]+(Ki|Mi|Gi|Ti)$/, 'a quantity like 1Gi')
    .default('1Gi'),
  /**
   * Secret (and key) holding the Redis password: runner pods get it as the file
   * /var/run/secrets/islet/redis/password (ISLET_REDIS_PASSWORD_FILE). Empty = no password file.
   */
  ISLET_RUNNER_REDIS_PASSWORD_SECRET: optional,
  ISLET_RUNNER_REDIS_PASSWORD_KEY: z.string().min(1).default('ISLET_REDIS_PASSWORD'),
  /** Secret (and key) with the PEM CA of a rediss:// Redis: /var/run/secrets/islet/redis/ca.crt (ISLET_REDIS_CA_FILE). */
  ISLET_RUNNER_REDIS_CA_SECRET: optional,
  ISLET_RUNNER_REDIS_CA_KEY: z.string().min(1).default('ca.crt'),
  /** Comma-separated image pull Secret names for runner pods. */
  ISLET_RUNNER_IMAGE_PULL_SECRETS: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    ),
});

export type OperatorConfig = z.infer<typeof operatorConfigSchema>;

interface LeaderTimings {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  requestTimeoutMs: number;
}

/** Effective leader-election timings; throws when they cannot keep two leaders apart. */
export function leaderTimings(c: OperatorConfig): LeaderTimings {
  const leaseDurationMs = c.ISLET_OPERATOR_LEASE_DURATION_MS;
  const renewDeadlineMs = c.ISLET_OPERATOR_RENEW_DEADLINE_MS || Math.round((leaseDurationMs * 2) / 3);
  const retryPeriodMs = c.ISLET_OPERATOR_RETRY_PERIOD_MS;
  const requestTimeoutMs =
    c.ISLET_OPERATOR_REQUEST_TIMEOUT_MS || Math.min(5_000, leaseDurationMs - renewDeadlineMs);
  if (renewDeadlineMs >= leaseDurationMs)
    throw new Error('ISLET_OPERATOR_RENEW_DEADLINE_MS must be below ISLET_OPERATOR_LEASE_DURATION_MS');
  if (retryPeriodMs >= renewDeadlineMs)
    throw new Error('ISLET_OPERATOR_RETRY_PERIOD_MS must be below the renew deadline');
  if (requestTimeoutMs <= 0) throw new Error('ISLET_OPERATOR_REQUEST_TIMEOUT_MS must be positive');
  return { leaseDurationMs, renewDeadlineMs, retryPeriodMs, requestTimeoutMs };
}

/** The operator's only secrets: the Redis URL (it may carry a password) and the Redis password, as `_FILE`s. */
export const OPERATOR_SECRET_VARIABLES = ['ISLET_REDIS_URL', 'ISLET_REDIS_PASSWORD'] as const;

export function loadOperatorConfig(env: Record<string, string | undefined> = process.env): OperatorConfig {
  const resolved = resolveSecretFiles(env, OPERATOR_SECRET_VARIABLES);
  const parsed = operatorConfigSchema.safeParse(resolved.env);
  const lines = [
    ...resolved.problems,
    ...(parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)),
    ...(parsed.success ? redisConfigProblems(parsed.data) : []),
  ];
  if (lines.length > 0 || !parsed.success) {
    throw new Error(`invalid operator configuration:\n  ${lines.join('\n  ')}`);
  }
  return parsed.data;
}
