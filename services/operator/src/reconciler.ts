/**
 * One reconcile of one RunnerPool, as a pure function: (pool, deployment, pods, queue depth, now,
 * history) → actions + status. The controller fetches the inputs and executes the actions; all
 * decisions (how many replicas, which pods to drain, which conditions) are made here.
 */
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { buildDeployment, type PodDefaults, templateHashOf } from './deployment.ts';
import type { Condition, ConditionType, RunnerPool, RunnerPoolStatus } from './runner-pool.ts';
import { POOL_LABEL, parseSpec } from './runner-pool.ts';
import {
  persistableHistory,
  type QueueDepth,
  type Recommendation,
  recommendReplicas,
  stabilize,
} from './scaling.ts';

/** The ReplicaSet controller removes the pods with the lowest cost first when replicas drop. */
export const DELETION_COST_ANNOTATION = 'controller.kubernetes.io/pod-deletion-cost';
/** Marks a pod chosen for scale-in; its runner is expected to drain on SIGTERM. */
export const DRAINING_ANNOTATION = 'islet.dev/draining';
export const DRAIN_COST = '-1000';

export type Action =
  | { type: 'create-deployment'; deployment: V1Deployment }
  /** Server-side apply of the fields the operator owns (others' fields survive). */
  | { type: 'apply-deployment'; deployment: V1Deployment }
  | { type: 'mark-draining'; pods: string[] }
  | { type: 'unmark-draining'; pods: string[] }
  | { type: 'update-status'; status: RunnerPoolStatus };

/** A Kubernetes Event about the pool (`kubectl describe runnerpool` shows them). */
export interface PoolEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

interface ReconcileInput {
  pool: RunnerPool;
  deployment: V1Deployment | undefined;
  pods: V1Pod[];
  /** Queue depth of the pool's mode, or why it could not be read. */
  depth: QueueDepth | { error: string };
  /** Active BullMQ jobs per worker name (= pod name). */
  activeByPod: ReadonlyMap<string, number>;
  nowMs: number;
  /** This leader's history; undefined for a pool it has not reconciled yet (read from status). */
  history: readonly Recommendation[] | undefined;
  defaults: PodDefaults;
}

interface ReconcileOutput {
  actions: Action[];
  events: PoolEvent[];
  history: Recommendation[];
  desiredReplicas: number | undefined;
  scale: 'up' | 'down' | undefined;
  result: 'ok' | 'invalid-spec' | 'depth-unavailable' | 'not-owned';
}

function isLive(p: V1Pod): boolean {
  return !p.metadata?.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
}

/**
 * Chooses which pods go when scaling in: least busy first, then not-ready ones, then youngest
 * (fewest warm sandbox processes). Deterministic: ties break on name.
 */
export function choosePodsToDrain(
  pods: V1Pod[],
  activeByPod: ReadonlyMap<string, number>,
  count: number,
): string[] {
  const ready = (p: V1Pod) =>
    (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return pods
    .filter(isLive)
    .slice()
    .sort((a, b) => {
      const an = a.metadata?.name ?? '';
      const bn = b.metadata?.name ?? '';
      return (
        (activeByPod.get(an) ?? 0) - (activeByPod.get(bn) ?? 0) ||
        Number(ready(a)) - Number(ready(b)) ||
        created(b) - created(a) ||
        an.localeCompare(bn)
      );
    })
    .slice(0, Math.max(0, count))
    .map((p) => p.metadata?.name ?? '');
}

/** True when the Deployment's controller reference is this pool (by uid: a re-created pool is another). */
export function ownedBy(deployment: V1Deployment, pool: RunnerPool): boolean {
  return (deployment.metadata?.ownerReferences ?? []).some(
    (r) => r.controller === true && r.kind === 'RunnerPool' && r.uid === pool.metadata.uid,
  );
}

function condition(
  prev: Condition[] | undefined,
  type: ConditionType,
  status: Condition['status'],
  reason: string,
  message: string,
  generation: number,
  nowIso: string,
): Condition {
  const old = prev?.find((c) => c.type === type);
  const lastTransitionTime = old && old.status === status ? old.lastTransitionTime : nowIso;
  return { type, status, reason, message, observedGeneration: generation, lastTransitionTime };
}

export function reconcile(input: ReconcileInput): ReconcileOutput {
  const { pool, deployment, nowMs } = input;
  const generation = pool.metadata.generation ?? 0;
  const nowIso = new Date(nowMs).toISOString();
  const prev = pool.status?.conditions;
  const cond = (t: ConditionType, s: Condition['status'], reason: string, message: string) =>
    condition(prev, t, s, reason, message, generation, nowIso);
  const currentReplicas = deployment?.spec?.replicas ?? 0;
  const readyReplicas = deployment?.status?.readyReplicas ?? 0;

  const stalledReason = prev?.find((c) => c.type === 'Stalled' && c.status === 'True')?.reason;
  const startHistory = () => input.history ?? takeOverHistory(pool.status, nowMs);
  const parsed = parseSpec(pool.spec);
  if (!parsed.ok) {
    return {
      events:
        stalledReason === 'InvalidSpec'
          ? []
          : [{ type: 'Warning', reason: 'InvalidSpec', message: parsed.message }],
      actions: [
        {
          type: 'update-status',
          status: {
            ...pool.status,
            observedGeneration: generation,
            replicas: readyReplicas,
            conditions: [
              cond('Ready', 'False', 'InvalidSpec', parsed.message),
              cond('Reconciling', 'False', 'InvalidSpec', 'waiting for a valid spec'),
              cond('Stalled', 'True', 'InvalidSpec', parsed.message),
            ],
          },
        },
      ],
      history: [...startHistory()],
      desiredReplicas: undefined,
      scale: undefined,
      result: 'invalid-spec',
    };
  }
  const spec = parsed.spec;
  const actions: Action[] = [];
  const events: PoolEvent[] = [];

  if (deployment && !ownedBy(deployment, pool)) {
    // Someone else's Deployment under our name: never take it over (it may be serving).
    const message = `Deployment ${deployment.metadata?.name} exists and is not controlled by RunnerPool ${pool.metadata.name}; refusing to overwrite it (delete or rename it)`;
    const status: RunnerPoolStatus = {
      ...pool.status,
      observedGeneration: generation,
      conditions: [
        cond('Ready', 'False', 'DeploymentNotOwned', message),
        cond('Reconciling', 'False', 'DeploymentNotOwned', 'waiting for the name to be free'),
        cond('Stalled', 'True', 'DeploymentNotOwned', message),
      ],
    };
    return {
      actions: sameStatus(pool.status, status) ? [] : [{ type: 'update-status', status }],
      events:
        stalledReason === 'DeploymentNotOwned'
          ? []
          : [{ type: 'Warning', reason: 'DeploymentNotOwned', message }],
      history: [...startHistory()],
      desiredReplicas: undefined,
      scale: undefined,
      result: 'not-owned',
    };
  }

  // Replicas: without a depth reading, hold what we have (never scale on missing data).
  let desired: number;
  let history = [...startHistory()];
  const depthError = 'error' in input.depth ? input.depth.error : undefined;
  const floor = spec.replicas ?? 0;
  if ('error' in input.depth) {
    desired = Math.min(
      spec.maxReplicas,
      Math.max(spec.minReplicas, floor, deployment ? currentReplicas : spec.minReplicas),
    );
  } else {
    const recommended = recommendReplicas(input.depth, spec);
    const s = stabilize({
      current: deployment ? currentReplicas : spec.minReplicas,
      recommended,
      history,
      nowMs,
      upWindowMs: spec.scaleUpStabilizationSeconds * 1000,
      downWindowMs: spec.scaleDownStabilizationSeconds * 1000,
    });
    // min/max and the /scale floor apply at once, whatever the history says.
    desired = Math.min(spec.maxReplicas, Math.max(spec.minReplicas, floor, s.desired));
    history = s.history;
  }

  const want = buildDeployment(pool, spec, desired, input.defaults);
  let scale: ReconcileOutput['scale'];
  const live = input.pods.filter(isLive);
  const marked = live.filter((p) => p.metadata?.annotations?.[DRAINING_ANNOTATION] === 'true');
  if (!deployment) {
    actions.push({ type: 'create-deployment', deployment: want });
    if (desired > 0) scale = 'up';
  } else {
    if (desired < currentReplicas) {
      // Mark exactly the pods that must go, before replicas drop, so the ReplicaSet removes them.
      const drain = choosePodsToDrain(live, input.activeByPod, currentReplicas - desired);
      const toMark = drain.filter((n) => !marked.some((p) => p.metadata?.name === n));
      const toUnmark = marked.map((p) => p.metadata?.name ?? '').filter((n) => !drain.includes(n));
      if (toUnmark.length) actions.push({ type: 'unmark-draining', pods: toUnmark });
      if (toMark.length) {
        actions.push({ type: 'mark-draining', pods: toMark });
        events.push({ type: 'Normal', reason: 'Draining', message: `draining pods ${toMark.join(', ')}` });
      }
      scale = 'down';
    } else if (marked.length && desired >= live.length) {
      // Scale-in abandoned (demand came back) or done: the survivors are ordinary pods again.
      actions.push({ type: 'unmark-draining', pods: marked.map((p) => p.metadata?.name ?? '') });
    }
    if (desired > currentReplicas) scale = 'up';
    if (desired !== currentReplicas || templateHashOf(deployment) !== templateHashOf(want)) {
      actions.push({ type: 'apply-deployment', deployment: want });
    }
  }

  if (scale && deployment) {
    events.push({
      type: 'Normal',
      reason: scale === 'up' ? 'ScaledUp' : 'ScaledDown',
      message: `replicas ${currentReplicas} → ${desired}`,
    });
  } else if (!deployment) {
    events.push({
      type: 'Normal',
      reason: 'Created',
      message: `Deployment created with ${desired} replicas`,
    });
  }
  if (depthError && stalledReason !== 'QueueDepthUnavailable') {
    events.push({
      type: 'Warning',
      reason: 'QueueDepthUnavailable',
      message: `${depthError}; holding replicas`,
    });
  }
  const changing = actions.some((a) => a.type !== 'update-status');
  const rollingOut =
    !!deployment &&
    ((deployment.status?.observedGeneration ?? 0) < (deployment.metadata?.generation ?? 0) ||
      (deployment.status?.updatedReplicas ?? 0) < currentReplicas ||
      readyReplicas < currentReplicas);
  const ready = !!deployment && !changing && !rollingOut && readyReplicas >= desired;
  const conditions: Condition[] = [
    ready
      ? cond('Ready', 'True', 'ReplicasReady', `${readyReplicas}/${desired} replicas ready`)
      : cond(
          'Ready',
          'False',
          changing ? 'Scaling' : 'ReplicasNotReady',
          `${readyReplicas}/${desired} replicas ready`,
        ),
    changing || rollingOut
      ? cond(
          'Reconciling',
          'True',
          changing ? 'Scaling' : 'RollingOut',
          `replicas ${currentReplicas} → ${desired}`,
        )
      : cond('Reconciling', 'False', 'Idle', 'deployment matches the pool'),
    depthError
      ? cond('Stalled', 'True', 'QueueDepthUnavailable', depthError)
      : cond('Stalled', 'False', 'Progressing', 'queue depth read'),
  ];
  const status: RunnerPoolStatus = {
    replicas: readyReplicas,
    desiredReplicas: desired,
    selector: `${POOL_LABEL}=${pool.metadata.name}`,
    observedGeneration: generation,
    conditions,
    lastScaleTime: scale ? nowIso : pool.status?.lastScaleTime,
    recommendations: persistableHistory(historyFromStatus(pool.status), history).map((r) => ({
      time: new Date(r.atMs).toISOString(),
      replicas: r.replicas,
    })),
  };
  if (!sameStatus(pool.status, status)) actions.push({ type: 'update-status', status });
  return {
    actions,
    events,
    history,
    desiredReplicas: desired,
    scale,
    result: depthError ? 'depth-unavailable' : 'ok',
  };
}

/**
 * The history a leader starts from for a pool it has not reconciled yet. The latest persisted run
 * is not refreshed while it holds (that would rewrite the status every few seconds with nothing
 * changed), so it is taken to have lasted until now: the previous leader recommended it until it
 * stopped, which is no later than now. A successor may hold longer, never shorter.
 */
function takeOverHistory(status: RunnerPoolStatus | undefined, nowMs: number): Recommendation[] {
  const h = historyFromStatus(status);
  const last = h[h.length - 1];
  if (last && last.atMs < nowMs) h[h.length - 1] = { atMs: nowMs, replicas: last.replicas };
  return h;
}

/**
 * The pool's status after a write the API server refused (the Deployment could not be created or
 * applied): Ready=False and Stalled=True with the API's own reason and message, the rest kept.
 */
export function writeFailedStatus(
  pool: RunnerPool,
  reason: string,
  message: string,
  nowMs: number,
): RunnerPoolStatus | undefined {
  const generation = pool.metadata.generation ?? 0;
  const nowIso = new Date(nowMs).toISOString();
  const prev = pool.status?.conditions;
  const cond = (t: ConditionType, st: Condition['status'], r: string, m: string) =>
    condition(prev, t, st, r, m, generation, nowIso);
  const status: RunnerPoolStatus = {
    ...pool.status,
    conditions: [
      cond('Ready', 'False', reason, message),
      cond('Reconciling', 'False', reason, 'the API server refused the Deployment'),
      cond('Stalled', 'True', reason, message),
    ],
  };
  return sameStatus(pool.status, status) ? undefined : status;
}

/** Stalled for a reason of its own (not the mode-wide QueueDepthUnavailable): it cannot serve its share. */
export function stalledOnItsOwn(pool: RunnerPool): boolean {
  return (pool.status?.conditions ?? []).some(
    (c) => c.type === 'Stalled' && c.status === 'True' && c.reason !== 'QueueDepthUnavailable',
  );
}

/** The persisted stabilization history; entries that do not parse are dropped. */
function historyFromStatus(status: RunnerPoolStatus | undefined): Recommendation[] {
  return (status?.recommendations ?? [])
    .map((r) => ({ atMs: Date.parse(r.time), replicas: r.replicas }))
    .filter((r) => Number.isFinite(r.atMs) && Number.isInteger(r.replicas));
}

function sameStatus(a: RunnerPoolStatus | undefined, b: RunnerPoolStatus): boolean {
  return JSON.stringify(normalize(a)) === JSON.stringify(normalize(b));
}

function normalize(s: RunnerPoolStatus | undefined) {
  if (!s) return undefined;
  return {
    replicas: s.replicas,
    desiredReplicas: s.desiredReplicas,
    selector: s.selector,
    observedGeneration: s.observedGeneration,
    lastScaleTime: s.lastScaleTime,
    recommendations: (s.recommendations ?? []).map((r) => [r.time, r.replicas]),
    conditions: [...(s.conditions ?? [])]
      .sort((x, y) => x.type.localeCompare(y.type))
      .map((c) => [c.type, c.status, c.reason, c.message, c.observedGeneration, c.lastTransitionTime]),
  };
}
