// The kernel sandbox enforcement the chart requires: full by default (a partially enforcing node
// would let a sandboxed program read the pod's secret files), partial only as an explicit opt-out.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART, helm, type K8sObject, ROOT, render, renderArgs } from './helm.ts';
import { find } from './runners.ts';

const DEFAULT = join(CHART, 'ci/default-values.yaml');
const PRODUCTION = join(ROOT, 'deploy/production/values.yaml');

function required(objs: K8sObject[]): string | undefined {
  const cm = find(objs, 'ConfigMap', (o) => 'ISLET_SANDBOX_JAIL' in (o.data ?? {}))[0];
  return cm?.data?.ISLET_SANDBOX_ENFORCEMENT_REQUIRED;
}

describe('ISLET_SANDBOX_ENFORCEMENT_REQUIRED', () => {
  it('is full by default, in the chart and in deploy/production', () => {
    expect(required(render({ valuesFiles: [DEFAULT] }))).toBe('full');
    expect(required(render({ valuesFiles: [PRODUCTION], namespace: 'islet' }))).toBe('full');
  });

  it('partial only when runners.sandboxEnforcementRequired says so', () => {
    const objs = render({ valuesFiles: [DEFAULT], set: ['runners.sandboxEnforcementRequired=partial'] });
    expect(required(objs)).toBe('partial');
  });

  it('refuses any other value, and refuses it through extraEnv (it would be overridden unseen)', () => {
    const bad = helm(
      renderArgs({ valuesFiles: [DEFAULT], set: ['runners.sandboxEnforcementRequired=none'] }),
    );
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/sandboxEnforcementRequired/);
    const viaEnv = helm(
      renderArgs({ valuesFiles: [DEFAULT], set: ['extraEnv.ISLET_SANDBOX_ENFORCEMENT_REQUIRED=partial'] }),
    );
    expect(viaEnv.status).not.toBe(0);
    expect(viaEnv.stderr).toContain(
      'set runners.sandboxEnforcementRequired instead of extraEnv.ISLET_SANDBOX_ENFORCEMENT_REQUIRED',
    );
  });
});
