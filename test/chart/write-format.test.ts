// The stored format gateways and runners write (ISLET_WRITE_FORMAT, core config.ts): `2` by default
// since the release after e807b91; `1` selectable for an upgrade straight from an older release
// (charts/islet/README.md, upgrading). One value for every pod, through the config ConfigMap.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART, helm, type K8sObject, ROOT, render, renderArgs } from './helm.ts';
import { find, runnerDeployments } from './runners.ts';

const DEFAULT = join(CHART, 'ci/default-values.yaml');
const PRODUCTION = join(ROOT, 'deploy/production/values.yaml');

function config(objs: K8sObject[]): K8sObject {
  return find(objs, 'ConfigMap', (o) => 'ISLET_SANDBOX_JAIL' in (o.data ?? {}))[0]!;
}

describe('writeFormat (ISLET_WRITE_FORMAT)', () => {
  it('is "2" by default, in the chart and in deploy/production, for the gateway and every runner pod', () => {
    const objs = render({ valuesFiles: [DEFAULT] });
    const cm = config(objs);
    expect(cm.data.ISLET_WRITE_FORMAT).toBe('2');
    expect(config(render({ valuesFiles: [PRODUCTION], namespace: 'islet' })).data.ISLET_WRITE_FORMAT).toBe(
      '2',
    );
    const gateway = find(objs, 'Deployment', (o) => o.metadata.name.endsWith('-gateway'))[0]!;
    const runners = runnerDeployments(objs);
    expect(runners.length).toBeGreaterThan(0);
    for (const d of [gateway, ...runners]) {
      const refs = d.spec.template.spec.containers.flatMap((c: K8sObject) =>
        (c.envFrom ?? []).map((e: K8sObject) => e.configMapRef?.name),
      );
      expect(refs, d.metadata.name).toContain(cm.metadata.name);
    }
  });

  it('"1" when set (an upgrade from a release older than e807b91)', () => {
    const objs = render({ valuesFiles: [DEFAULT], setString: ['writeFormat=1'] });
    expect(config(objs).data.ISLET_WRITE_FORMAT).toBe('1');
  });

  it('refuses any other value, a number, and the setting through extraEnv (naming writeFormat)', () => {
    for (const bad of [{ setString: ['writeFormat=3'] }, { set: ['writeFormat=1'] }]) {
      const r = helm(renderArgs({ valuesFiles: [DEFAULT], ...bad }));
      expect(r.status, JSON.stringify(bad)).not.toBe(0);
      expect(r.stderr, JSON.stringify(bad)).toContain('/writeFormat');
    }
    const viaEnv = helm(renderArgs({ valuesFiles: [DEFAULT], setString: ['extraEnv.ISLET_WRITE_FORMAT=2'] }));
    expect(viaEnv.status).not.toBe(0);
    expect(viaEnv.stderr).toContain('set writeFormat instead of extraEnv.ISLET_WRITE_FORMAT');
  });
});
