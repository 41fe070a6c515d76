/**
 * What only a real API server showed, each as a scenario that failed before its fix: field
 * ownership left by a plain create (an emptyDir that made every apply fail once the workspace
 * became a claim), a refused write reported as Ready, an Event per retry, a Stalled pool taking a
 * share of its mode's depth, PDBs that blocked or serialized node drains, and status rewritten
 * with nothing changed.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildDeployment } from '../../services/operator/src/deployment.ts';
import { podDefaultsFromConfig } from '../../services/operator/src/operator.ts';
import { parseSpec } from '../../services/operator/src/runner-pool.ts';
import { type Install, installIslet, waitFor } from './islet-install.ts';

const access = inject('kube');
let islet: Install;
let op: Awaited<ReturnType<Install['operator']>>['op'];
const MODE = 'danger-full-access' as const;

const replicasOf = async (pool: string) =>
  (await islet.apps.readNamespacedDeployment({ namespace: islet.namespace, name: `${pool}-runner` })).spec
    ?.replicas;
const condition = async (pool: string, type: string) =>
  (await islet.pool(pool)).status?.conditions?.find((c) => c.type === type);

beforeAll(async () => {
  islet = await installIslet(access, 'op-defects', [
    'runners.pools.read-only.minReplicas=4',
    'runners.pools.read-only.maxReplicas=4',
    'runners.pools.workspace-write.enabled=false',
  ]);
  // A Deployment as operator versions before server-side-apply creation left it: a plain POST by
  // the islet-operator manager, with the per-pod emptyDir workspace.
  const legacy = await islet.createPool('legacy', { mode: 'read-only' });
  const parsed = parseSpec(legacy.spec);
  if (!parsed.ok) throw new Error(parsed.message);
  const oldDefaults = podDefaultsFromConfig(islet.config({}));
  await islet.apps.createNamespacedDeployment({
    namespace: islet.namespace,
    fieldManager: 'islet-operator',
    body: buildDeployment(legacy, parsed.spec, 1, oldDefaults),
  });
  // This operator's pods mount a shared claim instead (workspaces.existingClaim switched).
  op = (await islet.operator({ env: { ISLET_RUNNER_WORKSPACE_CLAIM: 'islet-workspaces' } })).op;
});

afterAll(async () => {
  await islet?.stop();
});

describe('defects a real API server showed', () => {
  it('moves a plain create’s field ownership to apply once, so dropped fields go (emptyDir → claim)', async () => {
    const d = await waitFor('workspace is the claim', async () => {
      const dep = await islet.apps.readNamespacedDeployment({
        namespace: islet.namespace,
        name: 'legacy-runner',
      });
      const ws = dep.spec?.template.spec?.volumes?.find((v) => v.name === 'workspace');
      return ws?.persistentVolumeClaim ? dep : undefined;
    });
    const ws = d.spec?.template.spec?.volumes?.find((v) => v.name === 'workspace');
    expect(ws).toEqual({ name: 'workspace', persistentVolumeClaim: { claimName: 'islet-workspaces' } });
    const ours = (d.metadata?.managedFields ?? []).filter((f) => f.manager === 'islet-operator');
    expect(ours.map((f) => f.operation)).toEqual(['Apply']);
    // The Deployment is applied before the pool's status is written: wait for the condition.
    const stalled = await waitFor('Stalled reported', () => condition('legacy', 'Stalled'));
    expect(stalled.status).toBe('False');
  });

  it('a Deployment the API refuses: Ready=False, Stalled=True with the API’s reason; one aggregated Event; backoff', async () => {
    // Valid to the CRD and the operator, refused by the API server's Deployment validation (422).
    await islet.createPool('refused', { resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } });
    const stalled = await waitFor('Stalled=True', async () => {
      const c = await condition('refused', 'Stalled');
      return c?.status === 'True' ? c : undefined;
    });
    expect(stalled.reason).toBe('Invalid');
    expect(stalled.message).toContain('must be less than or equal to cpu limit');
    const ready = await condition('refused', 'Ready');
    expect(ready?.status).toBe('False');
    expect(ready?.reason).toBe(stalled.reason);
    expect(stalled.reason).toMatch(/^[A-Z][A-Za-z]+$/);
    // Retries back off: each delay longer than the one before.
    const first = await waitFor('first retry', () => op.controller()?.retryState('refused'));
    const later = await waitFor(
      'third failure',
      () => {
        const r = op.controller()?.retryState('refused');
        return r && r.failures >= 3 ? r : undefined;
      },
      60_000,
    );
    expect(later.delayMs).toBeGreaterThan(first.delayMs);
    // One Event, counted, with the API's reason and message and nothing from the response headers.
    const events = await waitFor('ReconcileFailed counted', async () => {
      const list = await islet.core.listNamespacedEvent({
        namespace: islet.namespace,
        fieldSelector: 'involvedObject.name=refused,reason=ReconcileFailed',
      });
      return list.items.length === 1 && (list.items[0]?.count ?? 0) >= 2 ? list.items : undefined;
    });
    expect(events[0]?.message).toMatch(/^Invalid: /);
    expect(events[0]?.message).toContain('must be less than or equal to cpu limit');
    expect(events[0]?.message).not.toMatch(/GMT|date|Headers/i);
  });

  it('a Stalled pool takes no share of its mode’s depth', async () => {
    await islet.createPool('healthy', { maxReplicas: 10, targetWaitingPerReplica: 4 });
    await islet.queue(MODE, 16);
    // 16 runs, target 4: the healthy pool serves all of them (the refused pool cannot serve any).
    await waitFor('4 replicas', async () => (await replicasOf('healthy')) === 4);
    await islet.drainQueue(MODE);
    await waitFor('back to 1', async () => (await replicasOf('healthy')) === 1);
  });

  it('writes a pool’s status only when it changes', async () => {
    await waitFor('healthy settled', async () => (await condition('healthy', 'Ready'))?.status === 'True');
    // A write may still come after the settle with something in it (the scale-down just before
    // leaves recommendations that age out of the history): the defect is a write with nothing
    // changed, so each write is compared with the pool as it was before it.
    type Seen = { metadata?: { name?: string; resourceVersion?: string }; spec?: unknown; status?: unknown };
    const content = (o: Seen) => JSON.stringify({ spec: o.spec, status: o.status });
    const last = new Map<string, string>();
    const pools = (await islet.custom.listNamespacedCustomObject({
      group: 'islet.dev',
      version: 'v1alpha1',
      namespace: islet.namespace,
      plural: 'runnerpools',
    })) as { items: Seen[] };
    for (const p of pools.items) last.set(p.metadata?.name ?? '', content(p));
    const writes: string[] = [];
    const unchanged: string[] = [];
    const watch = new k8s.Watch(islet.admin);
    const req = await watch.watch(
      `/apis/islet.dev/v1alpha1/namespaces/${islet.namespace}/runnerpools`,
      {},
      (type, obj: Seen) => {
        if (type !== 'MODIFIED') return;
        const name = obj.metadata?.name ?? '';
        const now = content(obj);
        writes.push(`${name}@${obj.metadata?.resourceVersion}`);
        if (last.get(name) === now) unchanged.push(`${name}@${obj.metadata?.resourceVersion}`);
        last.set(name, now);
      },
      () => {},
    );
    try {
      // Longer than the persisted history's granularity (15 s), forty resyncs, and the refused pool's retries.
      await new Promise((r) => setTimeout(r, 20_000));
    } finally {
      req.abort();
    }
    expect(unchanged).toEqual([]);
    // Nothing changes the pools in this window but the history's own ageing: a write or two, never
    // one per resync (forty).
    expect(writes.length).toBeLessThanOrEqual(3);
  });

  it('the bundled Redis can be evicted (a drain moves it) and runner drains are not one at a time', async () => {
    // client-node has no policy/v1beta1 client: the generic object API reads 1.20's PDBs.
    const objects = k8s.KubernetesObjectApi.makeApiClient(islet.admin);
    const allowed = (name: string, n: number) =>
      waitFor(
        `${name} allows ${n}`,
        async () => {
          const pdb = (await objects.read({
            apiVersion: 'policy/v1beta1',
            kind: 'PodDisruptionBudget',
            metadata: { name, namespace: islet.namespace },
          })) as { status?: { disruptionsAllowed?: number } };
          return (pdb.status?.disruptionsAllowed ?? 0) >= n;
        },
        60_000,
      );
    const evict = (name: string) =>
      islet.core.createNamespacedPodEviction({
        namespace: islet.namespace,
        name,
        body: {
          apiVersion: 'policy/v1beta1',
          kind: 'Eviction',
          metadata: { name, namespace: islet.namespace },
        },
      });
    const pdbs = islet.objects.filter((o) => o.kind === 'PodDisruptionBudget');
    const redisPdb = pdbs.find((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'redis');
    const runnerPdb = pdbs.find((o) => o.metadata.name === 'islet-read-only-runner');
    expect(redisPdb?.apiVersion).toBe('policy/v1beta1');
    await allowed(redisPdb?.metadata.name ?? '', 1);
    const redisPods = await islet.core.listNamespacedPod({
      namespace: islet.namespace,
      labelSelector: 'app.kubernetes.io/component=redis',
    });
    await evict(redisPods.items[0]?.metadata?.name ?? '');

    await waitFor('4 runners', async () => (await replicasOf('islet-read-only')) === 4);
    await allowed(runnerPdb?.metadata.name ?? '', 2);
    const runners = await islet.core.listNamespacedPod({
      namespace: islet.namespace,
      labelSelector: 'islet.dev/pool=islet-read-only',
    });
    const live = runners.items.filter((p) => !p.metadata?.deletionTimestamp);
    // Two runners of the pool on one node go at once (maxUnavailable 50%), not one per grace period.
    await evict(live[0]?.metadata?.name ?? '');
    await evict(live[1]?.metadata?.name ?? '');
  });
});
