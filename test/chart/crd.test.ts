// The RunnerPool CRD (what the API server admits) and the operator's zod schema (what it
// reconciles) must describe the same resource.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSpec, reconcile } from '@islet/operator';
import { SANDBOX_MODES } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART, validateObject } from './helm.ts';

const crd = parseYaml(readFileSync(join(CHART, 'crds/runnerpools.islet.dev.yaml'), 'utf8'));
const specSchema = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
const pool = (spec: Record<string, unknown>) => ({
  apiVersion: 'islet.dev/v1alpha1',
  kind: 'RunnerPool',
  metadata: { name: 'p', namespace: 'islet' },
  spec,
});

describe('offline validation', () => {
  const deployment = (containerSc: Record<string, unknown>) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x' },
    spec: {
      selector: { matchLabels: { a: 'b' } },
      template: {
        metadata: { labels: { a: 'b' } },
        spec: { containers: [{ name: 'c', image: 'i', securityContext: containerSc }] },
      },
    },
  });
  it('rejects wrong types and unknown fields (a misspelt security setting must not pass silently)', async () => {
    await expect(validateObject(deployment({ readOnlyRootFilesystem: true }))).resolves.toBeUndefined();
    await expect(validateObject(deployment({ readOnlyRootFs: true }))).rejects.toThrow(
      'unknown fields .spec.template.spec.containers[0].securityContext.readOnlyRootFs',
    );
    await expect(validateObject(deployment({ runAsUser: 'root' }))).rejects.toThrow(/must be integer/);
  });
});

describe('RunnerPool CRD vs operator schema', () => {
  it('has the same modes, required fields, defaults and bounds', () => {
    expect(specSchema.properties.mode.enum).toEqual([...SANDBOX_MODES]);
    expect(specSchema.required).toEqual(['mode', 'maxReplicas', 'image']);
    const parsed = parseSpec({ mode: 'read-only', maxReplicas: 3, image: 'x' });
    if (!parsed.ok) throw new Error(parsed.message);
    for (const k of [
      'minReplicas',
      'targetWaitingPerReplica',
      'scaleUpStabilizationSeconds',
      'scaleDownStabilizationSeconds',
    ] as const) {
      expect(specSchema.properties[k].default, k).toBe(parsed.spec[k]);
    }
    expect(specSchema.properties.maxReplicas.maximum).toBe(1000);
    expect(crd.spec.versions[0].subresources).toEqual({
      status: {},
      scale: {
        specReplicasPath: '.spec.replicas',
        statusReplicasPath: '.status.replicas',
        labelSelectorPath: '.status.selector',
      },
    });
  });

  it('the status the operator writes fits the CRD’s status schema', async () => {
    const p = {
      ...pool({ mode: 'read-only', maxReplicas: 3, image: 'x' }),
      metadata: { name: 'p', namespace: 'islet', generation: 2 },
    };
    for (const depth of [
      { waiting: 5, prioritized: 0, active: 0, delayed: 0, paused: 0 },
      { error: 'redis: down' },
    ]) {
      const out = reconcile({
        pool: p,
        deployment: undefined,
        pods: [],
        depth,
        activeByPod: new Map(),
        nowMs: Date.now(),
        history: [],
        defaults: { metricsPort: 9464 },
      });
      const status = out.actions.find((a) => a.type === 'update-status');
      expect(status).toBeDefined();
      await expect(
        validateObject({ ...p, status: (status as { status: unknown }).status }),
      ).resolves.toBeUndefined();
    }
    const invalid = reconcile({
      pool: { ...p, spec: { mode: 'x' } },
      deployment: undefined,
      pods: [],
      depth: { error: 'n/a' },
      activeByPod: new Map(),
      nowMs: Date.now(),
      history: [],
      defaults: { metricsPort: 9464 },
    });
    const st = invalid.actions[0] as { status: unknown };
    await expect(validateObject({ ...p, status: st.status })).resolves.toBeUndefined();
  });

  it('both reject the same bad pools', async () => {
    const bad = [
      { mode: 'root', maxReplicas: 3, image: 'x' },
      { mode: 'read-only', maxReplicas: 0, image: 'x' },
      { mode: 'read-only', maxReplicas: 3, image: '' },
      { mode: 'read-only', minReplicas: 5, maxReplicas: 3, image: 'x' },
      { mode: 'read-only', maxReplicas: 3, image: 'x', targetWaitingPerReplica: 0 },
    ];
    for (const spec of bad) {
      expect(parseSpec(spec).ok, JSON.stringify(spec)).toBe(false);
      await expect(validateObject(pool(spec)), JSON.stringify(spec)).rejects.toThrow();
    }
    const good = {
      mode: 'danger-full-access',
      minReplicas: 0,
      maxReplicas: 2,
      image: 'x',
      resources: { limits: { cpu: '2' } },
    };
    expect(parseSpec(good).ok).toBe(true);
    await expect(validateObject(pool(good))).resolves.toBeUndefined();
  });
});
