/**
 * The RunnerPool custom resource (islet.dev/v1alpha1): one pool of runner pods for one sandbox
 * mode. The CRD's OpenAPI schema lives in charts/islet/crds/runnerpools.islet.dev.yaml; this zod
 * schema mirrors it so a pool the API server accepted but the operator cannot use (e.g. min > max)
 * becomes a `Stalled` condition instead of a crash.
 */
import { SANDBOX_MODES, type SandboxMode } from '@islet/protocol';
import type { V1ObjectMeta, V1ResourceRequirements } from '@kubernetes/client-node';
import { z } from 'zod';

export const GROUP = 'islet.dev';
export const VERSION = 'v1alpha1';
export const PLURAL = 'runnerpools';
export const KIND = 'RunnerPool';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Label every object the operator creates carries, so its watches select only its own. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'islet-operator';
export const POOL_LABEL = 'islet.dev/pool';
export const MODE_LABEL = 'islet.dev/sandbox-mode';

// Quantities as strings ('500m', '1Gi'); numbers are accepted and kept as their decimal text. The
// API server's own pattern: a Deployment with another string fails to convert, which the API
// answers with a 500 (not a refusal), so it is caught here as InvalidSpec instead.
const QUANTITY = /^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$/;
const quantity = z.union([
  z.string().regex(QUANTITY, 'a Kubernetes quantity like 500m or 1Gi'),
  z.number().transform((n) => String(n)),
]);
const resourceList = z.record(z.string(), quantity);

const runnerPoolSpecSchema = z
  .object({
    mode: z.enum(SANDBOX_MODES),
    minReplicas: z.number().int().min(0).default(1),
    maxReplicas: z.number().int().min(1).max(1000),
    /**
     * Set through the /scale subresource (KEDA, HPA, `kubectl scale`): a floor on top of the queue
     * depth's recommendation, clamped to [minReplicas, maxReplicas]. Unset = queue depth alone.
     */
    replicas: z.number().int().min(0).optional(),
    /**
     * Queue depth (waiting + prioritized + active + delayed runs; runs paused for a decision are
     * not counted) one replica is expected to carry. Pools of one mode split the depth.
     */
    targetWaitingPerReplica: z.number().int().min(1).default(4),
    image: z.string().min(1),
    resources: z.object({ requests: resourceList.optional(), limits: resourceList.optional() }).optional(),
    /** Size of the runner's in-memory /tmp (sandbox scratch, skill programs). Default 64Mi. */
    tmpSizeLimit: z.string().min(1).default('64Mi'),
    /** A higher recommendation must persist this long before replicas go up. Default 0 (immediate). */
    scaleUpStabilizationSeconds: z.number().int().min(0).max(3600).default(0),
    /** A lower recommendation must persist this long before replicas go down. Default 300. */
    scaleDownStabilizationSeconds: z.number().int().min(0).max(3600).default(300),
  })
  .refine((s) => s.minReplicas <= s.maxReplicas, { message: 'minReplicas must not exceed maxReplicas' });

export type RunnerPoolSpec = z.infer<typeof runnerPoolSpecSchema>;

export type ConditionType = 'Ready' | 'Reconciling' | 'Stalled';
export interface Condition {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration: number;
  lastTransitionTime: string;
}

export interface RunnerPoolStatus {
  replicas?: number;
  desiredReplicas?: number;
  observedGeneration?: number;
  conditions?: Condition[];
  lastScaleTime?: string;
  /** Label selector of the pool's pods (the /scale subresource's labelSelectorPath). */
  selector?: string;
  /**
   * The scale stabilization history (latest time of each run of equal recommendations), so a new
   * leader honours the windows instead of scaling straight down. Times are rounded UP by
   * HISTORY_GRANULARITY_MS so the history needs a write only when a run changes or goes stale.
   */
  recommendations?: PersistedRecommendation[];
}

interface PersistedRecommendation {
  time: string;
  replicas: number;
}

export interface RunnerPool {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta;
  spec: unknown;
  status?: RunnerPoolStatus;
}

type ParsedSpec = { ok: true; spec: RunnerPoolSpec } | { ok: false; message: string };

export function parseSpec(spec: unknown): ParsedSpec {
  const r = runnerPoolSpecSchema.safeParse(spec);
  if (r.success) return { ok: true, spec: r.data };
  const message = r.error.issues.map((i) => `${i.path.join('.') || 'spec'}: ${i.message}`).join('; ');
  return { ok: false, message };
}

export function deploymentNameFor(poolName: string): string {
  return `${poolName}-runner`;
}

export type { SandboxMode, V1ResourceRequirements };
