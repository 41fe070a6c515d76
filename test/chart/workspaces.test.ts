// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON, checked by the assertions
// Session workspaces (`<root>/<tenant>/<session>`): the gateway's files API and the runners'
// files.* bindings and run_code skills must see ONE volume at ONE path, ISLET_WORKSPACE_ROOT.
import { join } from 'node:path';
import { buildDeployment, parseSpec, podDefaultsFromConfig, type RunnerPool } from '@islet/operator';
import { describe, expect, it } from 'vitest';
import { CHART, helm, type K8sObject, render, renderArgs, scenarioFiles } from './helm.ts';
import { find, operatorConfigOf, runnerDeployments } from './runners.ts';

const SHARED = join(CHART, 'ci/shared-workspaces-values.yaml');
const DEFAULT = join(CHART, 'ci/default-values.yaml');

const workspaceRoot = (objs: K8sObject[]) =>
  find(objs, 'ConfigMap', (o) => o.metadata.name === 'islet-config')[0]!.data.ISLET_WORKSPACE_ROOT;

const gatewayOf = (objs: K8sObject[]) =>
  find(objs, 'Deployment', (o) => o.metadata.labels['app.kubernetes.io/component'] === 'gateway')[0]!;

/** The workspace mount and volume of a Deployment's only container. */
function workspaceOf(d: K8sObject): { mountPath: string; volume: any; readOnlyRoot: boolean } {
  const spec = d.spec.template.spec;
  const c = spec.containers[0];
  const mounts = c.volumeMounts.filter((m: { name: string }) => m.name === 'workspace');
  expect(mounts, d.metadata.name).toHaveLength(1);
  const volume = JSON.parse(
    JSON.stringify(spec.volumes.find((v: { name: string }) => v.name === 'workspace')),
  );
  return {
    mountPath: mounts[0].mountPath,
    volume,
    readOnlyRoot: c.securityContext.readOnlyRootFilesystem,
  };
}

/** Gateway + every runner Deployment (helm-rendered and operator-built) of a release. */
const workloads = (objs: K8sObject[]) => [gatewayOf(objs), ...runnerDeployments(objs)];

describe('session workspaces', () => {
  it('with existingClaim the gateway and every runner pod mount that claim at ISLET_WORKSPACE_ROOT', () => {
    // With the operator (RunnerPools → operator-built pods) and without (helm-rendered Deployments).
    for (const set of [[], ['operator.enabled=false']]) {
      const objs = render({ valuesFiles: [SHARED], set });
      expect(workspaceRoot(objs)).toBe('/var/lib/islet/workspaces');
      const all = workloads(objs);
      // gateway + read-only, workspace-write and danger-full-access
      expect(all).toHaveLength(4);
      for (const d of all) {
        const w = workspaceOf(d);
        expect(w.mountPath, d.metadata.name).toBe('/var/lib/islet/workspaces');
        expect(w.volume, d.metadata.name).toEqual({
          name: 'workspace',
          persistentVolumeClaim: { claimName: 'islet-workspaces' },
        });
        expect(w.readOnlyRoot, d.metadata.name).toBe(true);
      }
    }
  });

  it('every scenario: gateway and runners agree on the path and the volume, and it is ISLET_WORKSPACE_ROOT', () => {
    for (const s of scenarioFiles()) {
      const objs = render({ valuesFiles: [s.file], apiVersions: s.apiVersions });
      const root = workspaceRoot(objs);
      const ws = workloads(objs).map(workspaceOf);
      for (const w of ws) {
        expect(w.mountPath, s.name).toBe(root);
        expect(w.volume, s.name).toEqual(ws[0]!.volume);
      }
      // The production example shares a claim; single-node scenarios fall back to emptyDirs.
      if (s.name === 'deploy/production' || s.name === 'ci/shared-workspaces')
        expect(ws[0]!.volume.persistentVolumeClaim, s.name).toBeDefined();
    }
  });

  it('without a claim every pod gets its own emptyDir at /workspace, sized by workspaces.sizeLimit', () => {
    for (const [set, size] of [
      [[], '1Gi'],
      [['workspaces.sizeLimit=3Gi'], '3Gi'],
      [['workspaces.sizeLimit=3Gi', 'operator.enabled=false'], '3Gi'],
    ] as const) {
      const objs = render({ valuesFiles: [DEFAULT], set: [...set] });
      expect(workspaceRoot(objs)).toBe('/workspace');
      for (const d of workloads(objs)) {
        const w = workspaceOf(d);
        expect(w.mountPath, d.metadata.name).toBe('/workspace');
        expect(w.volume, d.metadata.name).toEqual({ name: 'workspace', emptyDir: { sizeLimit: size } });
      }
    }
  });

  it('the operator gets the mount path, the claim and the size limit from the chart', () => {
    const shared = podDefaultsFromConfig(operatorConfigOf(render({ valuesFiles: [SHARED] }))!);
    expect(shared).toMatchObject({
      workspaceMountPath: '/var/lib/islet/workspaces',
      workspaceClaim: 'islet-workspaces',
    });
    const dev = podDefaultsFromConfig(operatorConfigOf(render({ valuesFiles: [DEFAULT] }))!);
    expect(dev).toMatchObject({ workspaceMountPath: '/workspace', workspaceSizeLimit: '1Gi' });
    expect(dev.workspaceClaim).toBeUndefined();
  });

  it('a helm-managed runner pod equals the operator-built one with a shared claim too', () => {
    const withOperator = render({ valuesFiles: [SHARED] });
    const helmOnly = render({ valuesFiles: [SHARED], set: ['operator.enabled=false'] });
    const defaults = podDefaultsFromConfig(operatorConfigOf(withOperator)!);
    const helmDeploy = find(
      helmOnly,
      'Deployment',
      (o) => o.metadata.labels['islet.dev/sandbox-mode'] === 'workspace-write',
    )[0]!;
    const parsed = parseSpec({ mode: 'workspace-write', maxReplicas: 2, image: 'x' });
    if (!parsed.ok) throw new Error(parsed.message);
    const pool = { apiVersion: 'islet.dev/v1alpha1', kind: 'RunnerPool', metadata: { name: 'p' }, spec: {} };
    const op = buildDeployment(pool as RunnerPool, parsed.spec, 1, defaults).spec!.template.spec!;
    const hs = helmDeploy.spec.template.spec;
    expect(hs.containers[0].volumeMounts).toEqual(JSON.parse(JSON.stringify(op.containers[0]!.volumeMounts)));
    expect(hs.volumes).toEqual(JSON.parse(JSON.stringify(op.volumes)));
    expect(hs.securityContext).toEqual(JSON.parse(JSON.stringify(op.securityContext)));
  });

  it('NOTES warn when the gateway and runners share no claim', () => {
    const notes = (files: string[]) => {
      const r = helm([
        'install',
        'islet',
        CHART,
        '-n',
        'islet',
        '--dry-run=client',
        ...files.flatMap((f) => ['-f', f]),
      ]);
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.slice(r.stdout.indexOf('NOTES:'));
    };
    expect(notes([DEFAULT])).toContain('WARNING: the gateway and the runners do not share it');
    const shared = notes([SHARED]);
    expect(shared).not.toContain('WARNING');
    expect(shared).toContain('on the shared ReadWriteMany claim islet-workspaces');
  });

  it('helm refuses unknown keys under workspaces, a relative mount path and extraEnv.ISLET_WORKSPACE_ROOT', () => {
    for (const bad of [
      'workspaces.claim=x',
      'workspaces.storageClass=nfs',
      'workspaces.mountPath=workspace',
    ]) {
      const r = helm(renderArgs({ valuesFiles: [DEFAULT], set: [bad] }));
      expect(r.status, bad).not.toBe(0);
      expect(r.stderr, bad).toMatch(/additional propert|does not match pattern/i);
    }
    // The per-pool size limit is folded into workspaces.sizeLimit (one size for helm and operator pods).
    const pool = helm(
      renderArgs({ valuesFiles: [DEFAULT], set: ['runners.pools.read-only.workspaceSizeLimit=2Gi'] }),
    );
    expect(pool.status).not.toBe(0);
    const env = helm(renderArgs({ valuesFiles: [DEFAULT], set: ['extraEnv.ISLET_WORKSPACE_ROOT=/data'] }));
    expect(env.status).not.toBe(0);
    expect(env.stderr).toContain('set workspaces.mountPath instead of extraEnv.ISLET_WORKSPACE_ROOT');
  });
});
