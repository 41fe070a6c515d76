/**
 * The Kubernetes calls the operator makes, behind one small interface so the controller does not
 * care how they travel. The implementation uses @kubernetes/client-node's typed APIs; errors are
 * turned into data (`status`) at this boundary, never matched by class.
 */
import {
  AppsV1Api,
  CoreV1Api,
  type CoreV1Event,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { GROUP, PLURAL, type RunnerPool, type RunnerPoolStatus, VERSION } from './runner-pool.ts';

/** The operator's field manager for every write (server-side apply ownership). */
export const FIELD_MANAGER = 'islet-operator';

export interface Listed<T> {
  items: T[];
  resourceVersion: string;
}

export interface KubeClient {
  listPools(namespace: string): Promise<Listed<RunnerPool>>;
  getPool(namespace: string, name: string): Promise<RunnerPool | undefined>;
  /** PUT on the status subresource with the pool's resourceVersion (409 when it moved). */
  replacePoolStatus(pool: RunnerPool, status: RunnerPoolStatus): Promise<RunnerPool>;
  listDeployments(namespace: string, labelSelector: string): Promise<Listed<V1Deployment>>;
  getDeployment(namespace: string, name: string): Promise<V1Deployment | undefined>;
  createDeployment(namespace: string, d: V1Deployment): Promise<V1Deployment>;
  /**
   * Server-side apply as FIELD_MANAGER (forced): sets the fields the operator owns, removes the
   * ones it stopped applying, and keeps everyone else's (e.g. `kubectl rollout restart`'s
   * `kubectl.kubernetes.io/restartedAt` pod-template annotation).
   */
  applyDeployment(namespace: string, d: V1Deployment): Promise<V1Deployment>;
  listPods(namespace: string, labelSelector: string): Promise<V1Pod[]>;
  /** A core/v1 Event about an object (shown by `kubectl describe` and `kubectl get events`). */
  createEvent(namespace: string, event: CoreV1Event): Promise<void>;
  /** JSON merge patch of metadata.annotations; a null value removes the annotation. */
  patchPodAnnotations(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
  ): Promise<void>;
}

/** HTTP status of a failed Kubernetes call, or undefined when it is not an API error. */
export function statusOf(err: unknown): number | undefined {
  if (err && typeof err === 'object') {
    const e = err as { code?: unknown; statusCode?: unknown };
    if (typeof e.code === 'number') return e.code;
    if (typeof e.statusCode === 'number') return e.statusCode;
  }
  return undefined;
}

async function orUndefined<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    throw err;
  }
}

export function createKubeClient(kc: KubeConfig): KubeClient {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const serverSideApply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
  return {
    async listPools(namespace) {
      const list = (await custom.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
      })) as {
        items: RunnerPool[];
        metadata?: { resourceVersion?: string };
      };
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    getPool(namespace, name) {
      return orUndefined(
        custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
        }) as Promise<RunnerPool>,
      );
    },
    async replacePoolStatus(pool, status) {
      const body = { ...pool, status };
      return (await custom.replaceNamespacedCustomObjectStatus({
        group: GROUP,
        version: VERSION,
        namespace: pool.metadata.namespace ?? '',
        plural: PLURAL,
        name: pool.metadata.name ?? '',
        body,
      })) as RunnerPool;
    },
    async listDeployments(namespace, labelSelector) {
      const list = await apps.listNamespacedDeployment({ namespace, labelSelector });
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    getDeployment(namespace, name) {
      return orUndefined(apps.readNamespacedDeployment({ namespace, name }));
    },
    createDeployment(namespace, body) {
      return apps.createNamespacedDeployment({ namespace, body, fieldManager: FIELD_MANAGER });
    },
    applyDeployment(namespace, body) {
      return apps.patchNamespacedDeployment(
        {
          namespace,
          name: body.metadata?.name ?? '',
          body,
          fieldManager: FIELD_MANAGER,
          force: true,
        },
        serverSideApply,
      );
    },
    async listPods(namespace, labelSelector) {
      return (await core.listNamespacedPod({ namespace, labelSelector })).items;
    },
    async createEvent(namespace, body) {
      await core.createNamespacedEvent({ namespace, body });
    },
    async patchPodAnnotations(namespace, name, annotations) {
      await core.patchNamespacedPod({ namespace, name, body: { metadata: { annotations } } }, mergePatch);
    },
  };
}
