// The operator writes only the Deployment fields it owns (server-side apply) and leaves alone a
// Deployment it does not own (fake Kubernetes API with field ownership, real Redis).
import type { CoreV1Event } from '@kubernetes/client-node';
import {
  AppsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { RunnerPool } from '../src/runner-pool.ts';
import type { FakeKubeApi } from './fake-kube-api.ts';
import { onOperatorFixture } from './on-operator-fixture.ts';
import { DEPLOYS, NS as ns, POOLS, STEADY_LEADER, waitFor } from './operator-fixture.ts';

const RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt';

const pool = (name: string, image: string, annotations: Record<string, string> = {}): RunnerPool => ({
  apiVersion: 'islet.dev/v1alpha1',
  kind: 'RunnerPool',
  metadata: { name, namespace: ns, annotations },
  spec: { mode: 'read-only', minReplicas: 1, maxReplicas: 3, image },
});

describe('Deployment ownership', () => {
  let api: FakeKubeApi;
  const fx = onOperatorFixture((f) => {
    api = f.api;
    return f.startOperator(STEADY_LEADER);
  });
  const deployment = (name: string) => fx.deployment(name);

  it('`kubectl rollout restart` and others’ labels survive a reconcile that changes the template', async () => {
    api.apply(POOLS, ns, pool('rr', 'islet/runner:1', { 'checksum/config': 'aaa' }));
    await waitFor('deployment', () => deployment('rr'));
    // What `kubectl rollout restart` sends: a strategic merge patch of one pod-template annotation.
    const apps = api.kubeConfig().makeApiClient(AppsV1Api);
    const at = '2026-11-30T18:00:00Z';
    await apps.patchNamespacedDeployment(
      {
        namespace: ns,
        name: 'rr-runner',
        fieldManager: 'kubectl-rollout',
        body: { spec: { template: { metadata: { annotations: { [RESTARTED_AT]: at } } } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    await apps.patchNamespacedDeployment(
      { namespace: ns, name: 'rr-runner', body: { metadata: { labels: { team: 'infra' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    // A new image and no more config checksum: the operator must write the template.
    api.apply(POOLS, ns, pool('rr', 'islet/runner:2'));
    const d = await waitFor('new image', () => {
      const d = deployment('rr');
      return d?.spec?.template.spec?.containers[0]?.image === 'islet/runner:2' ? d : undefined;
    });
    const annotations = d.spec?.template.metadata?.annotations ?? {};
    expect(annotations[RESTARTED_AT]).toBe(at);
    expect(annotations['checksum/config']).toBeUndefined(); // its own field, no longer applied
    expect(d.metadata?.labels?.team).toBe('infra');
    const writes = api.requests.filter(
      (r) => r.path.endsWith('/deployments/rr-runner') && r.method !== 'GET',
    );
    expect(writes.some((r) => r.method === 'PUT')).toBe(false);
    expect(
      writes.filter((r) => r.contentType === 'application/apply-patch+yaml').map((r) => r.query),
    ).toContainEqual({ fieldManager: 'islet-operator', force: 'true' });
  });
  it('refuses a same-named Deployment it does not own: Stalled condition, one Warning Event, untouched', async () => {
    const foreign = api.apply(DEPLOYS, ns, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'theirs-runner', labels: { app: 'theirs' } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'theirs' } },
        template: {
          metadata: { labels: { app: 'theirs' } },
          spec: { containers: [{ name: 'web', image: 'nginx' }] },
        },
      },
    });
    api.apply(POOLS, ns, pool('theirs', 'islet/runner:1'));
    const stalled = () =>
      (api.get(POOLS, ns, 'theirs') as RunnerPool | undefined)?.status?.conditions?.find(
        (c) => c.type === 'Stalled' && c.status === 'True',
      );
    const cond = await waitFor('Stalled', stalled);
    expect(cond.reason).toBe('DeploymentNotOwned');
    expect(cond.message).toContain('theirs-runner');
    // Several resyncs later: still untouched, and one Event, not one per resync.
    await new Promise((r) => setTimeout(r, 1000));
    const after = deployment('theirs') as V1Deployment;
    // (Its status moves: the simulated ReplicaSet runs its pods. Its spec and metadata do not.)
    expect(after.spec).toEqual(foreign.spec);
    expect(after.metadata?.generation).toBe(1);
    expect(after.metadata?.labels).toEqual({ app: 'theirs' });
    expect(after.metadata?.ownerReferences).toBeUndefined();
    expect(after.spec?.template.spec?.containers[0]?.image).toBe('nginx');
    const events = (api.list('v1/events', ns) as unknown as CoreV1Event[]).filter(
      (e) => e.involvedObject.name === 'theirs' && e.reason === 'DeploymentNotOwned',
    );
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'Warning', involvedObject: { kind: 'RunnerPool' } });
    // Once the name is free, the pool gets its own Deployment and recovers.
    api.remove(DEPLOYS, ns, 'theirs-runner');
    await waitFor(
      'own deployment',
      () => deployment('theirs')?.metadata?.ownerReferences?.[0]?.kind === 'RunnerPool',
    );
    await waitFor('not stalled', () => !stalled());
  });

  it('records Events for what it does (Deployment created)', async () => {
    const events = api.list('v1/events', ns) as unknown as CoreV1Event[];
    expect(events.find((e) => e.involvedObject.name === 'rr' && e.reason === 'Created')).toMatchObject({
      type: 'Normal',
      source: { component: 'islet-operator' },
    });
  });
  it('/scale (kubectl scale, HPA, KEDA) sets a floor within min/max; status carries the selector', async () => {
    api.apply(POOLS, ns, pool('sc', 'islet/runner:1'));
    await waitFor('1 replica', () => deployment('sc')?.spec?.replicas === 1);
    const custom = api.kubeConfig().makeApiClient(CustomObjectsApi);
    const target = {
      group: 'islet.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'runnerpools',
      name: 'sc',
    };
    const scaleTo = (replicas: number) =>
      custom.patchNamespacedCustomObjectScale(
        { ...target, body: { spec: { replicas } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    await scaleTo(3);
    await waitFor('3 replicas', () => deployment('sc')?.spec?.replicas === 3);
    const scale = (await waitFor('scale status', async () => {
      const s = (await custom.getNamespacedCustomObjectScale(target)) as {
        status: { replicas: number; selector?: string };
      };
      return s.status.replicas === 3 ? s : undefined;
    })) as { status: { selector?: string } };
    expect(scale.status.selector).toBe('islet.dev/pool=sc');
    await scaleTo(9); // above maxReplicas 3: clamped
    await new Promise((r) => setTimeout(r, 600));
    expect(deployment('sc')?.spec?.replicas).toBe(3);
    await scaleTo(0); // floor removed: back to what the (empty) queue asks, within min
    await waitFor('back to 1', () => deployment('sc')?.spec?.replicas === 1);
    const reasons = () =>
      new Set(
        (api.list('v1/events', ns) as unknown as CoreV1Event[])
          .filter((e) => e.involvedObject.name === 'sc')
          .map((e) => e.reason),
      );
    await waitFor('events', () =>
      ['Created', 'ScaledUp', 'ScaledDown', 'Draining'].every((r) => reasons().has(r)),
    );
  });
});
