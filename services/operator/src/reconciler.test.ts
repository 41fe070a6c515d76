import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { buildDeployment, TERMINATION_GRACE_SECONDS } from './deployment.ts';
import {
  type Action,
  choosePodsToDrain,
  DELETION_COST_ANNOTATION,
  DRAINING_ANNOTATION,
  reconcile,
} from './reconciler.ts';
import { parseSpec, type RunnerPool } from './runner-pool.ts';

const defaults = { metricsPort: 9464, envConfigMap: 'islet-runner-env', envSecret: 'islet-seal' };
const spec = {
  mode: 'workspace-write',
  minReplicas: 1,
  maxReplicas: 5,
  targetWaitingPerReplica: 2,
  image: 'islet/runner:1',
  scaleDownStabilizationSeconds: 0,
};
const pool = (over: Partial<RunnerPool> = {}): RunnerPool => ({
  apiVersion: 'islet.dev/v1alpha1',
  kind: 'RunnerPool',
  metadata: { name: 'ww', namespace: 'islet', uid: 'u1', generation: 3, resourceVersion: '7' },
  spec,
  ...over,
});
const depth = (waiting: number, active = 0) => ({ waiting, prioritized: 0, active, delayed: 0, paused: 0 });
const pod = (name: string, ready = true, annotations: Record<string, string> = {}): V1Pod => ({
  metadata: { name, annotations, creationTimestamp: new Date(0) },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
function existing(replicas: number, ready = replicas): V1Deployment {
  const parsed = parseSpec(spec);
  if (!parsed.ok) throw new Error(parsed.message);
  const d = buildDeployment(pool(), parsed.spec, replicas, defaults);
  d.metadata = { ...d.metadata, resourceVersion: '42', generation: 1 };
  d.status = { observedGeneration: 1, replicas, readyReplicas: ready, updatedReplicas: replicas };
  return d;
}
const base = { pods: [], activeByPod: new Map<string, number>(), nowMs: 1_000_000, history: [], defaults };
const ofType = <T extends Action['type']>(actions: Action[], t: T) =>
  actions.filter((a): a is Extract<Action, { type: T }> => a.type === t);

describe('reconcile', () => {
  it('creates the Deployment with the mode’s security profile and owner reference', () => {
    const out = reconcile({ ...base, pool: pool(), deployment: undefined, depth: depth(5) });
    const [create] = ofType(out.actions, 'create-deployment');
    expect(create).toBeDefined();
    const d = create!.deployment;
    expect(d.spec?.replicas).toBe(3); // ceil(5 / 2)
    expect(d.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'RunnerPool',
      name: 'ww',
      uid: 'u1',
      controller: true,
    });
    const podSpec = d.spec?.template.spec;
    expect(podSpec?.terminationGracePeriodSeconds).toBe(TERMINATION_GRACE_SECONDS);
    expect(podSpec?.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(600);
    const sc = podSpec?.containers[0]?.securityContext;
    expect(sc).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'Localhost', localhostProfile: 'islet/runner.json' },
    });
    expect(podSpec?.automountServiceAccountToken).toBe(false);
    expect(out.scale).toBe('up');
  });

  it('reports Stalled with observedGeneration for an invalid spec and touches nothing else', () => {
    const out = reconcile({
      ...base,
      pool: pool({ spec: { ...spec, minReplicas: 9 } }),
      deployment: undefined,
      depth: depth(0),
    });
    expect(out.actions.map((a) => a.type)).toEqual(['update-status']);
    const [st] = ofType(out.actions, 'update-status');
    const stalled = st!.status.conditions?.find((c) => c.type === 'Stalled');
    expect(stalled).toMatchObject({ status: 'True', reason: 'InvalidSpec', observedGeneration: 3 });
    expect(stalled?.message).toContain('minReplicas must not exceed maxReplicas');
    expect(out.result).toBe('invalid-spec');
  });

  it('a resource quantity the API server cannot parse is an invalid spec, not a write to retry', () => {
    const out = reconcile({
      ...base,
      pool: pool({ spec: { ...spec, resources: { limits: { cpu: 'lots' } } } }),
      deployment: undefined,
      depth: depth(0),
    });
    expect(out.result).toBe('invalid-spec');
    const [st] = ofType(out.actions, 'update-status');
    expect(st!.status.conditions?.find((c) => c.type === 'Stalled')?.message).toContain(
      'a Kubernetes quantity like 500m or 1Gi',
    );
  });

  it('holds replicas when Redis cannot be read (never scales on missing data)', () => {
    const out = reconcile({
      ...base,
      pool: pool(),
      deployment: existing(4),
      depth: { error: 'redis: ECONNREFUSED' },
    });
    expect(ofType(out.actions, 'apply-deployment')).toEqual([]);
    const [st] = ofType(out.actions, 'update-status');
    expect(st!.status.conditions?.find((c) => c.type === 'Stalled')).toMatchObject({
      status: 'True',
      reason: 'QueueDepthUnavailable',
    });
  });

  it('scale-in marks the idle pods with the lowest deletion cost before lowering replicas', () => {
    const pods = [pod('a'), pod('b'), pod('c'), pod('d')];
    const out = reconcile({
      ...base,
      pool: pool(),
      deployment: existing(4),
      pods,
      depth: depth(0, 2), // 2 active → 1 replica
      activeByPod: new Map([
        ['a', 1],
        ['c', 1],
      ]),
    });
    const types = out.actions.map((a) => a.type);
    expect(types.indexOf('mark-draining')).toBeLessThan(types.indexOf('apply-deployment'));
    // the idle b and d first; then one busy pod (tie broken by name): it finishes its run on SIGTERM
    expect(ofType(out.actions, 'mark-draining')[0]!.pods).toEqual(['b', 'd', 'a']);
    expect(ofType(out.actions, 'apply-deployment')[0]!.deployment.spec?.replicas).toBe(1);
    expect(out.scale).toBe('down');
  });

  it('clears drain marks when demand returns', () => {
    const pods = [
      pod('a'),
      pod('b', true, { [DRAINING_ANNOTATION]: 'true', [DELETION_COST_ANNOTATION]: '-1000' }),
    ];
    const out = reconcile({ ...base, pool: pool(), deployment: existing(2), pods, depth: depth(4) });
    expect(ofType(out.actions, 'unmark-draining')[0]!.pods).toEqual(['b']);
  });

  it('is Ready and not Reconciling when the Deployment matches and all replicas are ready', () => {
    const out = reconcile({ ...base, pool: pool(), deployment: existing(2), depth: depth(4) });
    expect(ofType(out.actions, 'apply-deployment')).toEqual([]);
    const st = ofType(out.actions, 'update-status')[0]!.status;
    expect(st.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      observedGeneration: 3,
    });
    expect(st.conditions?.find((c) => c.type === 'Reconciling')).toMatchObject({ status: 'False' });
    expect(st.desiredReplicas).toBe(2);
  });

  it('writes no status when nothing changed (no write storms on resync)', () => {
    const first = reconcile({ ...base, pool: pool(), deployment: existing(2), depth: depth(4) });
    const status = ofType(first.actions, 'update-status')[0]!.status;
    const again = reconcile({
      ...base,
      pool: pool({ status }),
      deployment: existing(2),
      depth: depth(4),
      nowMs: 1_010_000,
    });
    expect(again.actions).toEqual([]);
  });

  it('keeps the stabilization history in the status, not rewritten while the latest recommendation holds', () => {
    const first = reconcile({ ...base, pool: pool(), deployment: existing(2), depth: depth(4) });
    const status = ofType(first.actions, 'update-status')[0]!.status;
    // Rounded up: a reader of this copy waits at least as long as the writer would have.
    expect(status.recommendations).toEqual([{ time: new Date(1_015_000).toISOString(), replicas: 2 }]);
    const later = reconcile({
      ...base,
      pool: pool({ status }),
      deployment: existing(2),
      depth: depth(4),
      history: first.history,
      nowMs: 1_060_000,
    });
    expect(ofType(later.actions, 'update-status')).toEqual([]);
    // A new run (the recommendation changed) is written, with the finished run's end rounded up.
    const changed = reconcile({
      ...base,
      pool: pool({ status }),
      deployment: existing(2),
      depth: depth(12),
      history: later.history,
      nowMs: 1_070_000,
    });
    expect(changed.desiredReplicas).toBeGreaterThan(2);
    expect(ofType(changed.actions, 'update-status')[0]!.status.recommendations).toContainEqual({
      time: new Date(1_085_000).toISOString(),
      replicas: changed.desiredReplicas,
    });
  });

  it('a new leader (no history of its own) reads the history from the status and holds replicas', () => {
    const withWindow = { ...spec, scaleDownStabilizationSeconds: 300 };
    const status = {
      recommendations: [{ time: new Date(1_000_000 - 60_000).toISOString(), replicas: 4 }],
    };
    const out = reconcile({
      ...base,
      pool: pool({ spec: withWindow, status }),
      deployment: existing(4),
      depth: depth(0),
      history: undefined,
    });
    expect(out.desiredReplicas).toBe(4);
    expect(ofType(out.actions, 'apply-deployment')).toEqual([]);
    // The latest persisted run is taken to have lasted until the takeover: the window runs from there.
    const held = reconcile({
      ...base,
      pool: pool({ spec: withWindow, status }),
      deployment: existing(4),
      depth: depth(0),
      history: out.history,
      nowMs: 1_000_000 + 299_000,
    });
    expect(held.desiredReplicas).toBe(4);
    const after = reconcile({
      ...base,
      pool: pool({ spec: withWindow, status }),
      deployment: existing(4),
      depth: depth(0),
      history: held.history,
      nowMs: 1_000_000 + 301_000,
    });
    expect(after.desiredReplicas).toBe(1);
  });

  it('rolls the Deployment when the pool’s config checksum changes', () => {
    const out = reconcile({
      ...base,
      pool: pool({ metadata: { ...pool().metadata, annotations: { 'checksum/config': 'abc', other: 'x' } } }),
      deployment: existing(2),
      depth: depth(4),
    });
    const [rep] = ofType(out.actions, 'apply-deployment');
    expect(rep!.deployment.spec?.template.metadata?.annotations?.['checksum/config']).toBe('abc');
    expect(rep!.deployment.spec?.template.metadata?.annotations?.other).toBeUndefined();
  });

  it('rolls the Deployment when the pod template changes (new image)', () => {
    const out = reconcile({
      ...base,
      pool: pool({ spec: { ...spec, image: 'islet/runner:2' } }),
      deployment: existing(2),
      depth: depth(4),
    });
    const [rep] = ofType(out.actions, 'apply-deployment');
    expect(rep!.deployment.spec?.template.spec?.containers[0]?.image).toBe('islet/runner:2');
  });
});

describe('choosePodsToDrain', () => {
  it('prefers idle, then not-ready, then youngest pods, and skips terminating ones', () => {
    const young = { ...pod('young'), metadata: { name: 'young', creationTimestamp: new Date(5000) } };
    const terminating = { ...pod('t'), metadata: { name: 't', deletionTimestamp: new Date() } };
    const chosen = choosePodsToDrain(
      [pod('busy'), pod('old'), young, pod('unready', false), terminating],
      new Map([['busy', 3]]),
      3,
    );
    expect(chosen).toEqual(['unready', 'young', 'old']);
  });
});
