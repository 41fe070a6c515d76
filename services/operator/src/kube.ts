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
  type V1ManagedFieldsEntry,
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
  /**
   * Sets `spec.replicas: 0` on a pool that has none (JSON patch guarded by its resourceVersion:
   * 409/422 when it moved, e.g. a scaler wrote a floor meanwhile), so its /scale subresource can be
   * read: the API server answers GET /scale with an InternalError while specReplicasPath is unset.
   */
  defaultPoolReplicas(namespace: string, name: string, resourceVersion: string): Promise<RunnerPool>;
  /** PUT on the status subresource with the pool's resourceVersion (409 when it moved). */
  replacePoolStatus(pool: RunnerPool, status: RunnerPoolStatus): Promise<RunnerPool>;
  listDeployments(namespace: string, labelSelector: string): Promise<Listed<V1Deployment>>;
  getDeployment(namespace: string, name: string): Promise<V1Deployment | undefined>;
  /**
   * Creates the Deployment by server-side apply (not forced: a Deployment someone else created
   * meanwhile makes it fail with 409), so every field it sets is owned by an Apply entry and a
   * later apply that drops a field removes it.
   */
  createDeployment(namespace: string, d: V1Deployment): Promise<V1Deployment>;
  /**
   * JSON patch of metadata.managedFields, guarded by the resourceVersion the new list was computed
   * from (a `test` op: 422/409 when the object moved, and the reconcile retries).
   */
  replaceManagedFields(
    namespace: string,
    name: string,
    resourceVersion: string,
    managedFields: V1ManagedFieldsEntry[],
  ): Promise<void>;
  /**
   * Server-side apply as FIELD_MANAGER (forced): sets the fields the operator owns, removes the
   * ones it stopped applying, and keeps everyone else's (e.g. `kubectl rollout restart`'s
   * `kubectl.kubernetes.io/restartedAt` pod-template annotation).
   */
  applyDeployment(namespace: string, d: V1Deployment): Promise<V1Deployment>;
  listPods(namespace: string, labelSelector: string): Promise<V1Pod[]>;
  /** A core/v1 Event about an object (shown by `kubectl describe` and `kubectl get events`). */
  createEvent(namespace: string, event: CoreV1Event): Promise<void>;
  /** A repeat of an Event already written: its count, lastTimestamp and message (client-go's recorder). */
  patchEventCount(
    namespace: string,
    name: string,
    update: { count: number; lastTimestamp: Date; message: string },
  ): Promise<void>;
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

/**
 * The API server answered and refused (400, 403, 422, …): retrying the same write will not help until
 * someone changes something. Timeouts, network errors, 5xx, 408, 429 and a vanished object (404,
 * 410: the next reconcile reads the new state) are transient.
 */
export function refusedByApi(err: unknown): boolean {
  const code = statusOf(err);
  return code !== undefined && code >= 400 && code < 500 && ![404, 408, 409, 410, 429].includes(code);
}

/** The API's own `reason` and `message` (a metav1.Status body), without the response headers. */
export function apiFailureOf(err: unknown): { reason: string; message: string } {
  let body: unknown = err && typeof err === 'object' ? (err as { body?: unknown }).body : undefined;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      // not JSON: fall through to the generic text
    }
  }
  if (body && typeof body === 'object') {
    const b = body as { reason?: unknown; message?: unknown };
    if (typeof b.message === 'string') {
      const reason =
        typeof b.reason === 'string' && /^[A-Z][A-Za-z]*$/.test(b.reason) ? b.reason : 'WriteFailed';
      return { reason, message: b.message };
    }
  }
  const code = statusOf(err);
  const text = err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err);
  return { reason: code ? `HTTP${code}` : 'RequestFailed', message: text };
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
  const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
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
    async defaultPoolReplicas(namespace, name, resourceVersion) {
      return (await custom.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
          body: [
            { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
            { op: 'add', path: '/spec/replicas', value: 0 },
          ],
        },
        jsonPatch,
      )) as RunnerPool;
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
      return apps.patchNamespacedDeployment(
        { namespace, name: body.metadata?.name ?? '', body, fieldManager: FIELD_MANAGER, force: false },
        serverSideApply,
      );
    },
    async replaceManagedFields(namespace, name, resourceVersion, managedFields) {
      await apps.patchNamespacedDeployment(
        {
          namespace,
          name,
          body: [
            { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
            { op: 'replace', path: '/metadata/managedFields', value: managedFields },
          ],
        },
        jsonPatch,
      );
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
    async patchEventCount(namespace, name, update) {
      await core.patchNamespacedEvent(
        {
          namespace,
          name,
          body: { count: update.count, lastTimestamp: update.lastTimestamp, message: update.message },
        },
        mergePatch,
      );
    },
    async patchPodAnnotations(namespace, name, annotations) {
      await core.patchNamespacedPod({ namespace, name, body: { metadata: { annotations } } }, mergePatch);
    },
  };
}
