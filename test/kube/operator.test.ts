/**
 * The operator on a real API server, as the chart's ServiceAccount (its Role is all it may do):
 * creation by server-side apply, scaling on a real Redis queue, the /scale subresource (read and
 * floor), `kubectl rollout restart` surviving a scale, drain marks before a scale-in, a foreign
 * Deployment refused, and garbage collection through the owner reference.
 */
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import * as k8s from '@kubernetes/client-node';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DELETION_COST_ANNOTATION, DRAINING_ANNOTATION } from '../../services/operator/src/reconciler.ts';
import { type Install, installIslet, waitFor } from './islet-install.ts';

const access = inject('kube');
let islet: Install;
const MODE = 'danger-full-access' as const;

const replicasOf = async (pool: string) =>
  (await islet.apps.readNamespacedDeployment({ namespace: islet.namespace, name: `${pool}-runner` })).spec
    ?.replicas;
const condition = async (pool: string, type: string) =>
  (await islet.pool(pool)).status?.conditions?.find((c) => c.type === type);

beforeAll(async () => {
  islet = await installIslet(access, 'op-lifecycle');
  await islet.operator();
});

afterAll(async () => {
  await islet?.stop();
});

describe('the operator on a real API server', () => {
  it('creates the chart’s pools’ Deployments by server-side apply, owned by the pool, and reports Ready', async () => {
    const name = `${'islet'}-read-only`;
    const d = await waitFor('chart pool Deployment', () =>
      islet.apps.readNamespacedDeployment({ namespace: islet.namespace, name: `${name}-runner` }),
    );
    const pool = await islet.pool(name);
    expect(d.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'RunnerPool',
        uid: pool.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      }),
    ]);
    // Every field the operator set is owned by an Apply entry: nothing it stops setting can linger.
    const ours = (d.metadata?.managedFields ?? []).filter((f) => f.manager === 'islet-operator');
    expect(ours.map((f) => f.operation)).toEqual(['Apply']);
    expect(d.spec?.template.spec?.securityContext?.seccompProfile).toEqual({
      type: 'Localhost',
      localhostProfile: 'islet/runner.json',
    });
    const ready = await waitFor('Ready=True', async () => {
      const c = await condition(name, 'Ready');
      return c?.status === 'True' ? c : undefined;
    });
    expect(ready.reason).toBe('ReplicasReady');
  });

  it('scales on queue depth from a real Redis, and /scale is readable with spec.replicas unset', async () => {
    await islet.createPool('depth', { maxReplicas: 5, targetWaitingPerReplica: 4 });
    await waitFor('1 replica', async () => (await replicasOf('depth')) === 1);
    // HPA and KEDA GET the Scale first: it must answer for a pool nobody has scaled.
    const scale = (await islet.custom.getNamespacedCustomObjectScale({
      group: 'islet.dev',
      version: 'v1alpha1',
      namespace: islet.namespace,
      plural: 'runnerpools',
      name: 'depth',
    })) as { spec?: { replicas?: number }; status?: { selector?: string } };
    // autoscaling/v1 Scale omits a zero `replicas`; the pool itself says 0 (defaulted by the operator
    // where the API server did not apply the CRD's default).
    expect(scale.spec?.replicas ?? 0).toBe(0);
    expect(((await islet.pool('depth')).spec as { replicas?: number }).replicas).toBe(0);
    await waitFor('selector', async () => {
      const s = (await islet.custom.getNamespacedCustomObjectScale({
        group: 'islet.dev',
        version: 'v1alpha1',
        namespace: islet.namespace,
        plural: 'runnerpools',
        name: 'depth',
      })) as { status?: { selector?: string } };
      return s.status?.selector === 'islet.dev/pool=depth';
    });
    await islet.queue(MODE, 16);
    await waitFor('4 replicas for 16 runs', async () => (await replicasOf('depth')) === 4);
    await islet.drainQueue(MODE);
    await waitFor('back to 1', async () => (await replicasOf('depth')) === 1);
  });

  it('/scale sets a floor within min/max (kubectl scale, HPA, KEDA)', async () => {
    await islet.custom.patchNamespacedCustomObjectScale(
      {
        group: 'islet.dev',
        version: 'v1alpha1',
        namespace: islet.namespace,
        plural: 'runnerpools',
        name: 'depth',
        body: { spec: { replicas: 3 } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await waitFor('3 replicas from the floor', async () => (await replicasOf('depth')) === 3);
    await islet.custom.patchNamespacedCustomObjectScale(
      {
        group: 'islet.dev',
        version: 'v1alpha1',
        namespace: islet.namespace,
        plural: 'runnerpools',
        name: 'depth',
        body: { spec: { replicas: 0 } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await waitFor('queue in charge again', async () => (await replicasOf('depth')) === 1);
  });

  it('keeps `kubectl rollout restart`’s annotation through a scale event', async () => {
    const restartedAt = new Date().toISOString();
    await islet.apps.patchNamespacedDeployment(
      {
        namespace: islet.namespace,
        name: 'depth-runner',
        fieldManager: 'kubectl-rollout',
        body: {
          spec: {
            template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': restartedAt } } },
          },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
    await islet.queue(MODE, 8);
    await waitFor('2 replicas', async () => (await replicasOf('depth')) === 2);
    const d = await islet.apps.readNamespacedDeployment({ namespace: islet.namespace, name: 'depth-runner' });
    expect(d.spec?.template.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt']).toBe(restartedAt);
    await islet.drainQueue(MODE);
    await waitFor('back to 1', async () => (await replicasOf('depth')) === 1);
  });

  it('the Deployment goes with its pool (garbage collector, owner reference)', async () => {
    await islet.custom.deleteNamespacedCustomObject({
      group: 'islet.dev',
      version: 'v1alpha1',
      namespace: islet.namespace,
      plural: 'runnerpools',
      name: 'depth',
    });
    await waitFor(
      'Deployment collected',
      async () => {
        try {
          await islet.apps.readNamespacedDeployment({ namespace: islet.namespace, name: 'depth-runner' });
          return false;
        } catch (err) {
          return (err as { code?: number }).code === 404;
        }
      },
      60_000,
    );
  });

  it('marks the idle pods for draining before it lowers replicas, and keeps the busy one', async () => {
    await islet.createPool('drain', { maxReplicas: 4, targetWaitingPerReplica: 1 });
    await islet.queue(MODE, 4);
    await waitFor('4 ready pods', async () => {
      const pods = await islet.core.listNamespacedPod({
        namespace: islet.namespace,
        labelSelector: 'islet.dev/pool=drain',
      });
      return pods.items.filter((p) => !p.metadata?.deletionTimestamp).length === 4;
    });
    const pods = await islet.core.listNamespacedPod({
      namespace: islet.namespace,
      labelSelector: 'islet.dev/pool=drain',
    });
    const busy = pods.items[0]?.metadata?.name ?? '';
    // Order of what the API server saw: pod marks vs the Deployment's replicas.
    const seen: string[] = [];
    const watch = new k8s.Watch(islet.admin);
    const reqs = await Promise.all([
      watch.watch(
        `/api/v1/namespaces/${islet.namespace}/pods`,
        { labelSelector: 'islet.dev/pool=drain' },
        (_t, p: k8s.V1Pod) => {
          if (p.metadata?.annotations?.[DRAINING_ANNOTATION] === 'true') seen.push(`mark ${p.metadata.name}`);
        },
        () => {},
      ),
      watch.watch(
        `/apis/apps/v1/namespaces/${islet.namespace}/deployments`,
        {},
        (_t, d: k8s.V1Deployment) => {
          if (d.metadata?.name === 'drain-runner') seen.push(`replicas ${d.spec?.replicas}`);
        },
        () => {},
      ),
    ]);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    // One run goes active on a worker named after `busy` (BullMQ processedBy), then the waiting ones go.
    const worker = new Worker(runQueueName(MODE), () => held, {
      connection: { host: '127.0.0.1', port: islet.redisServer.port, maxRetriesPerRequest: null },
      prefix: QUEUE_PREFIX,
      name: busy,
      concurrency: 1,
    });
    try {
      const q = islet.bullQueue(MODE);
      await waitFor('1 active run', async () => (await q.getJobCounts('active')).active === 1);
      await q.drain();
      await waitFor('1 replica', async () => (await replicasOf('drain')) === 1);
      const now = await islet.core.listNamespacedPod({
        namespace: islet.namespace,
        labelSelector: 'islet.dev/pool=drain',
      });
      const marked = now.items.filter((p) => p.metadata?.annotations?.[DRAINING_ANNOTATION] === 'true');
      const byName = new Map(now.items.map((p) => [p.metadata?.name, p]));
      expect(byName.get(busy)?.metadata?.annotations?.[DRAINING_ANNOTATION]).toBeUndefined();
      for (const p of marked) expect(p.metadata?.annotations?.[DELETION_COST_ANNOTATION]).toBe('-1000');
      const firstDrop = seen.indexOf('replicas 1');
      const marks = seen.filter((s) => s.startsWith('mark '));
      expect(new Set(marks).size).toBe(3);
      expect(marks.every((m) => seen.indexOf(m) < firstDrop)).toBe(true);
      expect(marks).not.toContain(`mark ${busy}`);
    } finally {
      release();
      await worker.close();
      for (const r of reqs) r.abort();
    }
  });

  it('refuses a Deployment of the same name it does not own, and leaves it untouched', async () => {
    await islet.apps.createNamespacedDeployment({
      namespace: islet.namespace,
      body: {
        metadata: { name: 'foreign-runner', labels: { team: 'other' } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'foreign' } },
          template: {
            metadata: { labels: { app: 'foreign' } },
            spec: { containers: [{ name: 'c', image: 'other:1' }] },
          },
        },
      },
    });
    await islet.createPool('foreign', { mode: 'read-only' });
    const stalled = await waitFor('Stalled', async () => {
      const c = await condition('foreign', 'Stalled');
      return c?.status === 'True' ? c : undefined;
    });
    expect(stalled.reason).toBe('DeploymentNotOwned');
    const d = await islet.apps.readNamespacedDeployment({
      namespace: islet.namespace,
      name: 'foreign-runner',
    });
    expect(d.spec?.replicas).toBe(2);
    expect(d.metadata?.ownerReferences).toBeUndefined();
    expect(d.spec?.template.spec?.containers[0]?.image).toBe('other:1');
  });
});
