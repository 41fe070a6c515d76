// The fake's own contract: the behaviours of the real API server the operator relies on.
import {
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  Watch,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusOf } from '../src/kube.ts';
import { FakeKubeApi } from './fake-kube-api.ts';

const ns = 'islet';
const deployment = (name: string, replicas = 1): V1Deployment => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, labels: { app: name } },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
  },
});

describe('FakeKubeApi (test double of the Kubernetes API)', () => {
  let api: FakeKubeApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  beforeAll(async () => {
    api = await FakeKubeApi.start({ simulateWorkloads: true });
    apps = api.kubeConfig().makeApiClient(AppsV1Api);
    core = api.kubeConfig().makeApiClient(CoreV1Api);
  });
  afterAll(() => api.stop());

  it('creates with generation 1, ignores status on create, 409 AlreadyExists on a second create', async () => {
    const d = deployment('a');
    d.status = { replicas: 99 };
    const created = await apps.createNamespacedDeployment({ namespace: ns, body: d });
    expect(created.metadata?.generation).toBe(1);
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.status?.replicas).toBeUndefined();
    const err = await apps
      .createNamespacedDeployment({ namespace: ns, body: deployment('a') })
      .catch((e: unknown) => e);
    expect(statusOf(err)).toBe(409);
  });

  it('PUT with a stale resourceVersion gets 409; generation moves only with spec', async () => {
    const cur = await apps.readNamespacedDeployment({ namespace: ns, name: 'a' });
    const labelled = { ...cur, metadata: { ...cur.metadata, labels: { app: 'a', x: 'y' } } };
    const after = await apps.replaceNamespacedDeployment({ namespace: ns, name: 'a', body: labelled });
    expect(after.metadata?.generation).toBe(cur.metadata?.generation);
    const stale = await apps
      .replaceNamespacedDeployment({ namespace: ns, name: 'a', body: cur })
      .catch((e: unknown) => e);
    expect(statusOf(stale)).toBe(409);
    const scaled = { ...after, spec: { ...after.spec!, replicas: 3 } };
    const s = await apps.replaceNamespacedDeployment({ namespace: ns, name: 'a', body: scaled });
    expect(s.metadata?.generation).toBe((cur.metadata?.generation ?? 0) + 1);
  });

  it('simulated workloads: pods follow replicas; scale-in deletes the lowest deletion cost first', async () => {
    await waitFor(
      async () =>
        (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=a' })).items.length === 3,
    );
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=a' })).items;
    const victim = pods[1]!.metadata!.name!;
    await core.patchNamespacedPod(
      {
        namespace: ns,
        name: victim,
        body: { metadata: { annotations: { 'controller.kubernetes.io/pod-deletion-cost': '-5' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(api.requests.at(-1)?.contentType).toBe('application/merge-patch+json');
    const cur = await apps.readNamespacedDeployment({ namespace: ns, name: 'a' });
    await apps.replaceNamespacedDeployment({
      namespace: ns,
      name: 'a',
      body: { ...cur, spec: { ...cur.spec!, replicas: 2 } },
    });
    await waitFor(
      async () =>
        (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=a' })).items.length === 2,
    );
    expect(api.deletedPods).toEqual([victim]);
    const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'a' });
    expect(d.status?.readyReplicas).toBe(2);
  });

  it('JSON patch (client-node default content type) applies RFC 6902 ops', async () => {
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=a' })).items;
    const name = pods[0]!.metadata!.name!;
    await core.patchNamespacedPod({
      namespace: ns,
      name,
      body: [{ op: 'add', path: '/metadata/labels/z', value: '1' }],
    });
    expect(api.requests.at(-1)?.contentType).toBe('application/json-patch+json');
    expect((await core.readNamespacedPod({ namespace: ns, name })).metadata?.labels?.z).toBe('1');
  });

  it('watch streams events from a resourceVersion, and answers a compacted one with ERROR 410', async () => {
    const list = await apps.listNamespacedDeployment({ namespace: ns });
    const rv = list.metadata!.resourceVersion!;
    const events: string[] = [];
    const watch = new Watch(api.kubeConfig());
    let done: unknown = 'open';
    await watch.watch(
      `/apis/apps/v1/namespaces/${ns}/deployments`,
      { resourceVersion: rv },
      (type, obj) => events.push(`${type}:${obj.metadata.name}`),
      (err) => {
        done = err;
      },
    );
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('b') });
    await waitFor(async () => events.includes('ADDED:b'));
    expect(api.dropWatches()).toBe(1);
    await waitFor(async () => done !== 'open');
    expect(done).toBeNull();

    api.compact();
    const errors: { type: string; code?: number }[] = [];
    await watch.watch(
      `/apis/apps/v1/namespaces/${ns}/deployments`,
      { resourceVersion: rv },
      (type, obj) => errors.push({ type, code: obj.code }),
      () => {},
    );
    await waitFor(async () => errors.length > 0);
    expect(errors[0]).toEqual({ type: 'ERROR', code: 410 });
  });
  it('server-side apply: owns what it applies, keeps others’ fields, conflicts unless forced', async () => {
    const ssa = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
    const mine = deployment('ssa', 2);
    mine.metadata = { ...mine.metadata, annotations: { mine: 'x', dropped: 'y' } };
    await apps.patchNamespacedDeployment(
      { namespace: ns, name: 'ssa', body: mine, fieldManager: 'me', force: true },
      ssa,
    );
    await apps.patchNamespacedDeployment(
      {
        namespace: ns,
        name: 'ssa',
        fieldManager: 'other',
        body: { metadata: { annotations: { theirs: 'z' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await apps.patchNamespacedDeployment(
      { namespace: ns, name: 'ssa', fieldManager: 'other', body: { spec: { replicas: 5 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    mine.metadata = { ...mine.metadata, annotations: { mine: 'x' } };
    const err = await apps
      .patchNamespacedDeployment({ namespace: ns, name: 'ssa', body: mine, fieldManager: 'me' }, ssa)
      .catch((e: unknown) => e);
    expect(statusOf(err)).toBe(409); // spec.replicas now belongs to "other"
    const forced = await apps.patchNamespacedDeployment(
      { namespace: ns, name: 'ssa', body: mine, fieldManager: 'me', force: true },
      ssa,
    );
    expect(forced.metadata?.annotations).toEqual({ mine: 'x', theirs: 'z' });
    expect(forced.spec?.replicas).toBe(2);
    const missing = await apps
      .patchNamespacedDeployment({ namespace: ns, name: 'ssa', body: mine }, ssa)
      .catch((e: unknown) => e);
    expect(statusOf(missing)).toBe(422); // apply needs a field manager
  });
});

async function waitFor(cond: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('condition not met in time');
}
