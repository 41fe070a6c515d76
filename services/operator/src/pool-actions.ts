/**
 * A reconcile's actions (reconciler.ts) carried out against the API server, in order, for the
 * controller (controller.ts).
 */
import type { KubeClient } from './kube.ts';
import { statusOf } from './kube.ts';
import {
  DELETION_COST_ANNOTATION,
  DRAIN_COST,
  DRAINING_ANNOTATION,
  type PoolEvent,
  type reconcile,
} from './reconciler.ts';
import type { RunnerPool } from './runner-pool.ts';

export interface ActionTarget {
  kube: KubeClient;
  namespace: string;
  /** Still leading: once false, no further write is made. */
  running: () => boolean;
  /** Writes one of the pool's Events (best effort). */
  emit: (pool: RunnerPool, e: PoolEvent) => Promise<void>;
}

/** Runs the actions in order; the Events go out once the Deployment/pod writes are done (before the status write, which may conflict and be retried without them). */
export async function executeActions(
  target: ActionTarget,
  pool: RunnerPool,
  actions: ReturnType<typeof reconcile>['actions'],
  events: readonly PoolEvent[],
  deploymentWritten: () => void,
): Promise<void> {
  const { kube, namespace } = target;
  let emitted = false;
  const emitAll = async () => {
    if (emitted) return;
    emitted = true;
    for (const e of events) await target.emit(pool, e);
  };
  for (const a of actions) {
    if (a.type === 'update-status') await emitAll();
    // Stopped leading mid-reconcile (e.g. renew deadline passed): no further writes.
    if (!target.running()) throw new Error('stopped leading: reconcile abandoned');
    switch (a.type) {
      case 'create-deployment':
        await kube.createDeployment(namespace, a.deployment);
        deploymentWritten();
        break;
      case 'apply-deployment':
        await kube.applyDeployment(namespace, a.deployment);
        deploymentWritten();
        break;
      case 'mark-draining':
        // Before replicas drop: the ReplicaSet deletes the lowest pod-deletion-cost first.
        for (const pod of a.pods) {
          await kube.patchPodAnnotations(namespace, pod, {
            [DELETION_COST_ANNOTATION]: DRAIN_COST,
            [DRAINING_ANNOTATION]: 'true',
          });
        }
        break;
      case 'unmark-draining':
        for (const pod of a.pods) {
          await kube
            .patchPodAnnotations(namespace, pod, {
              [DELETION_COST_ANNOTATION]: null,
              [DRAINING_ANNOTATION]: null,
            })
            .catch((err: unknown) => {
              if (statusOf(err) !== 404) throw err;
            });
        }
        break;
      case 'update-status':
        await kube.replacePoolStatus(pool, a.status);
        break;
    }
  }
  await emitAll();
}
