// The hand-off's liveness check (ISLET_HANDOFF_LIVE_CHECK, core config.ts; @islet/runs handoff-live.ts):
// on by default since the release after 6b60376a (round 47), whose runners and 6b60376a's hold the live
// channel; `gateway.handoffLiveCheck: false` for an upgrade from 9f886855 or older (charts/islet/README.md,
// upgrading). One value in the config ConfigMap every gateway pod reads.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART, helm, type K8sObject, ROOT, render, renderArgs } from './helm.ts';
import { find } from './runners.ts';

const DEFAULT = join(CHART, 'ci/default-values.yaml');
const PRODUCTION = join(ROOT, 'deploy/production/values.yaml');

function config(objs: K8sObject[]): K8sObject {
  return find(objs, 'ConfigMap', (o) => 'ISLET_SANDBOX_JAIL' in (o.data ?? {}))[0]!;
}

describe('gateway.handoffLiveCheck (ISLET_HANDOFF_LIVE_CHECK)', () => {
  it('is "on" by default, in the chart and in deploy/production, in the ConfigMap the gateway reads', () => {
    const objs = render({ valuesFiles: [DEFAULT] });
    const cm = config(objs);
    expect(cm.data.ISLET_HANDOFF_LIVE_CHECK).toBe('on');
    const production = config(render({ valuesFiles: [PRODUCTION], namespace: 'islet' }));
    expect(production.data.ISLET_HANDOFF_LIVE_CHECK).toBe('on');
    const gateway = find(objs, 'Deployment', (o) => o.metadata.name.endsWith('-gateway'))[0]!;
    const refs = gateway.spec.template.spec.containers.flatMap((c: K8sObject) =>
      (c.envFrom ?? []).map((e: K8sObject) => e.configMapRef?.name),
    );
    expect(refs).toContain(cm.metadata.name);
  });

  it('"off" when false (an upgrade from 9f886855 or older)', () => {
    const objs = render({ valuesFiles: [DEFAULT], set: ['gateway.handoffLiveCheck=false'] });
    expect(config(objs).data.ISLET_HANDOFF_LIVE_CHECK).toBe('off');
  });

  it('refuses a string, and the setting through extraEnv (naming gateway.handoffLiveCheck)', () => {
    const text = helm(renderArgs({ valuesFiles: [DEFAULT], setString: ['gateway.handoffLiveCheck=off'] }));
    expect(text.status).not.toBe(0);
    expect(text.stderr).toContain('handoffLiveCheck');
    const viaEnv = helm(
      renderArgs({ valuesFiles: [DEFAULT], setString: ['extraEnv.ISLET_HANDOFF_LIVE_CHECK=on'] }),
    );
    expect(viaEnv.status).not.toBe(0);
    expect(viaEnv.stderr).toContain(
      'set gateway.handoffLiveCheck instead of extraEnv.ISLET_HANDOFF_LIVE_CHECK',
    );
  });
});
