/**
 * One control plane for every kube test file (each installs the chart into its own namespace):
 * started before the files, stopped after them whatever happened.
 */
import type { TestProject } from 'vitest/node';
import { type KubeAccess, kubeBinDir, liveGroups, startControlPlane } from './control-plane.ts';
import { startKubeletStandin } from './kubelet-standin.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kube: KubeAccess;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const found = kubeBinDir();
  if ('missing' in found) throw new Error(found.missing);
  const cp = await startControlPlane(found.bin);
  const kubelet = startKubeletStandin(cp.access);
  project.provide('kube', cp.access);
  process.stdout.write(`[kube] ${cp.access.version} at ${cp.access.server} (${found.bin})\n`);
  return async () => {
    const groups = cp.groups();
    try {
      await kubelet.stop();
    } finally {
      await cp.stop();
    }
    // Nothing of the control plane may outlive the run (CI runs more after it): say so if it did.
    const left = liveGroups(groups);
    if (left.length > 0)
      throw new Error(`control plane process groups still alive after stop: ${left.join(', ')}`);
    process.stdout.write(`[kube] control plane stopped (${groups.length} process groups, none left)\n`);
  };
}
