// The plain manifests under deploy/ validate like the chart's output.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { type K8sObject, podSpecs, ROOT, render, validateObject } from './helm.ts';

describe('deploy/ manifests', () => {
  it('production namespaces: islet enforces restricted, the installer namespace alone is privileged', async () => {
    const docs = parseAllDocuments(readFileSync(join(ROOT, 'deploy/production/namespaces.yaml'), 'utf8')).map(
      (d) => d.toJS() as K8sObject,
    );
    for (const d of docs) await validateObject(d);
    const ns = Object.fromEntries(
      docs.map((d) => [d.metadata.name, d.metadata.labels['pod-security.kubernetes.io/enforce']]),
    );
    expect(ns).toEqual({ islet: 'restricted', 'islet-system': 'privileged' });
    // The chart puts only the seccomp installer into the privileged namespace.
    const objs = render({ valuesFiles: [join(ROOT, 'deploy/production/values.yaml')], namespace: 'islet' });
    const inSystem = podSpecs(objs).filter((p) => p.obj.metadata.namespace === 'islet-system');
    expect(inSystem.map((p) => `${p.obj.kind}/${p.obj.metadata.name}`)).toEqual(['DaemonSet/islet-seccomp']);
  });

  it('the kind cluster config has workers for anti-affinity and PDBs', () => {
    const kind = parseYaml(readFileSync(join(ROOT, 'deploy/dev/kind-cluster.yaml'), 'utf8'));
    expect(kind.kind).toBe('Cluster');
    expect(kind.nodes.filter((n: { role: string }) => n.role === 'worker').length).toBeGreaterThanOrEqual(2);
  });

  it('every environment has its values file', () => {
    for (const env of readdirSync(join(ROOT, 'deploy'), { withFileTypes: true }).filter((d) =>
      d.isDirectory(),
    )) {
      expect(readdirSync(join(ROOT, 'deploy', env.name)), env.name).toContain('values.yaml');
    }
  });
});
