/**
 * Stands in for the kubelet and scheduler the test control plane does not have: every pod becomes
 * Running and Ready, and a pod the ReplicaSet (or an eviction) deleted is finished at once, as a
 * kubelet would after its grace period. It records the pods it finished, in order, so drain
 * scenarios can say which pods a scale-in or a drain removed. Test code only.
 */
import * as k8s from '@kubernetes/client-node';
import type { KubeAccess } from './control-plane.ts';
import { adminConfig } from './kube-clients.ts';

export interface KubeletStandin {
  /** `namespace/name` of every pod finished after a delete, oldest first. */
  finished(): string[];
  stop(): Promise<void>;
}

export function startKubeletStandin(access: KubeAccess, intervalMs = 200): KubeletStandin {
  const core = adminConfig(access).makeApiClient(k8s.CoreV1Api);
  const finished: string[] = [];
  let running = true;
  const tick = async () => {
    const pods = await core.listPodForAllNamespaces();
    for (const pod of pods.items) {
      const ns = pod.metadata?.namespace ?? '';
      const name = pod.metadata?.name ?? '';
      if (pod.metadata?.deletionTimestamp) {
        await core.deleteNamespacedPod({ namespace: ns, name, gracePeriodSeconds: 0 }).catch(() => {});
        if (!finished.includes(`${ns}/${name}`)) finished.push(`${ns}/${name}`);
        continue;
      }
      const ready = (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
      if (ready) continue;
      const now = new Date();
      await core
        .replaceNamespacedPodStatus({
          namespace: ns,
          name,
          body: {
            ...pod,
            status: {
              ...pod.status,
              phase: 'Running',
              startTime: pod.status?.startTime ?? now,
              podIP: '10.244.0.10',
              conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
                type,
                status: 'True',
                lastTransitionTime: now,
              })),
            },
          },
        })
        .catch(() => {});
    }
  };
  const loop = (async () => {
    while (running) {
      await tick().catch(() => {});
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    finished: () => [...finished],
    async stop() {
      running = false;
      await loop;
    },
  };
}
