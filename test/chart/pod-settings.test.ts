// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON, checked by the assertions
// The pod settings the usual charts have (ci/pod-settings-values.yaml), with the real helm: pod
// annotations and labels, RuntimeClasses, extra volumes, topology spread, the gateway HPA and the
// operator's retry backoff, on every pod they are meant for — the runner pods the operator builds
// from the rendered RunnerPools included — and nothing of it by default.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART, helm, type K8sObject, podSpecs, render, renderArgs } from './helm.ts';
import { find, operatorConfigOf, runnerDeployments } from './runners.ts';

const values = (name: string) => join(CHART, 'ci', `${name}-values.yaml`);
const objs = render({ valuesFiles: [values('pod-settings')] });
const byComponent = (list: K8sObject[], component: string) =>
  list.filter(
    (o) =>
      ['Deployment', 'StatefulSet', 'DaemonSet', 'Job'].includes(o.kind) &&
      o.metadata.labels?.['app.kubernetes.io/component'] === component,
  );
const template = (o: K8sObject) => JSON.parse(JSON.stringify(o.spec.template));
const runners = runnerDeployments(objs);

describe('pod annotations and labels', () => {
  it('the global ones reach every pod, the operator’s runner pods included; a component adds its own', () => {
    const pods = [...podSpecs(objs).map((p) => p.obj), ...runners];
    expect(pods.map((o) => o.metadata.labels?.['app.kubernetes.io/component']).sort()).toEqual(
      // two operator-built pools (read-only, workspace-write)
      ['gateway', 'operator', 'redis', 'runner', 'runner', 'seccomp-installer', 'secret-init'],
    );
    for (const o of pods) {
      const t = template(o);
      expect(t.metadata.labels['example.com/cost-center'], o.metadata.name).toBe('42');
      expect(t.metadata.annotations?.['example.com/team'], o.metadata.name).toBe('agents');
    }
    const gateway = template(byComponent(objs, 'gateway')[0]!);
    expect(gateway.metadata.labels['example.com/tier']).toBe('api');
    const redis = template(byComponent(objs, 'redis')[0]!);
    expect(redis.metadata.annotations['backup.velero.io/backup-volumes']).toBe('data');
    for (const r of runners) expect(template(r).metadata.annotations['example.com/sandbox']).toBe('true');
    // Islet's own annotations stay beside them.
    expect(gateway.metadata.annotations['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('never override the labels and annotations Islet sets (selectors, components, checksums)', () => {
    const list = render({
      valuesFiles: [values('default')],
      setJson: [
        'podLabels={"app.kubernetes.io/component":"evil","islet.dev/pool":"evil","team":"a"}',
        'podAnnotations={"checksum/config":"0","prometheus.io/port":"1","team":"a"}',
      ],
    });
    const gateway = template(byComponent(list, 'gateway')[0]!);
    expect(gateway.metadata.labels['app.kubernetes.io/component']).toBe('gateway');
    expect(gateway.metadata.labels.team).toBe('a');
    expect(gateway.metadata.annotations['checksum/config']).not.toBe('0');
    for (const r of runnerDeployments(list)) {
      const t = template(r);
      expect(t.metadata.labels['islet.dev/pool']).toBe(r.metadata.name.replace(/-runner$/, ''));
      expect(t.metadata.labels['app.kubernetes.io/component']).toBe('runner');
      expect(t.metadata.annotations['prometheus.io/port']).toBe('9464');
      expect(t.metadata.labels.team).toBe('a');
    }
  });
});

describe('runtime classes', () => {
  it('the global RuntimeClass for gateway, operator and Redis; runners under their own, the operator’s pods too', () => {
    for (const c of ['gateway', 'operator', 'redis'])
      expect(template(byComponent(objs, c)[0]!).spec.runtimeClassName, c).toBe('kata');
    expect(runners.length).toBe(2);
    for (const r of runners) expect(template(r).spec.runtimeClassName).toBe('gvisor');
    // The installer writes into the node's kubelet directory: always the node's own runtime.
    for (const c of ['seccomp-installer', 'secret-init'])
      expect(template(byComponent(objs, c)[0]!).spec.runtimeClassName, c).toBeUndefined();
  });

  it('the global one reaches runner pods when runners set none, helm’s static Deployments too', () => {
    for (const file of ['default', 'minimal']) {
      const list = render({ valuesFiles: [values(file)], set: ['runtimeClassName=gvisor'] });
      const rs = runnerDeployments(list);
      expect(rs.length, file).toBeGreaterThan(0);
      for (const r of rs) expect(template(r).spec.runtimeClassName, file).toBe('gvisor');
    }
  });
});

describe('extra volumes, placement and the gateway HPA', () => {
  it('extra volumes and mounts reach the gateway and every runner pod, helm’s and the operator’s alike', () => {
    const gw = template(byComponent(objs, 'gateway')[0]!).spec;
    expect(gw.volumes).toContainEqual({ name: 'app-ca', configMap: { name: 'app-ca-bundle' } });
    expect(gw.containers[0].volumeMounts).toContainEqual({
      name: 'app-ca',
      mountPath: '/etc/islet/app-ca',
      readOnly: true,
    });
    const statics = runnerDeployments(
      render({
        valuesFiles: [values('minimal')],
        setJson: [
          'runners.extraVolumes=[{"name":"pip-cache","emptyDir":{"sizeLimit":"256Mi"}}]',
          'runners.extraVolumeMounts=[{"name":"pip-cache","mountPath":"/cache"}]',
        ],
      }),
    );
    for (const r of runners) {
      const spec = template(r).spec;
      expect(spec.volumes).toContainEqual({ name: 'extra-ca', configMap: { name: 'extra-ca-bundle' } });
      expect(spec.containers[0].volumeMounts).toContainEqual({
        name: 'extra-ca',
        mountPath: '/etc/ssl/islet-extra',
        readOnly: true,
      });
    }
    for (const r of statics) {
      const spec = template(r).spec;
      expect(spec.volumes).toContainEqual({ name: 'pip-cache', emptyDir: { sizeLimit: '256Mi' } });
      expect(spec.containers[0].volumeMounts).toContainEqual({ name: 'pip-cache', mountPath: '/cache' });
    }
  });

  it('topologySpreadConstraints for the gateway, affinity for the operator', () => {
    expect(template(byComponent(objs, 'gateway')[0]!).spec.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'gateway' } },
      },
    ]);
    expect(
      template(byComponent(objs, 'operator')[0]!).spec.affinity.nodeAffinity
        .preferredDuringSchedulingIgnoredDuringExecution[0].weight,
    ).toBe(50);
  });

  it('the gateway HPA owns the replica count (none rendered); refused when min > max', () => {
    const [hpa] = find(objs, 'HorizontalPodAutoscaler');
    expect(hpa?.apiVersion).toBe('autoscaling/v2');
    expect(hpa?.spec).toEqual({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'islet-gateway' },
      minReplicas: 3,
      maxReplicas: 12,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } },
        },
      ],
      behavior: { scaleDown: { stabilizationWindowSeconds: 600 } },
    });
    expect(byComponent(objs, 'gateway')[0]!.spec.replicas).toBeUndefined();
    const r = helm(
      renderArgs({
        valuesFiles: [values('default')],
        set: [
          'gateway.autoscaling.enabled=true',
          'gateway.autoscaling.minReplicas=5',
          'gateway.autoscaling.maxReplicas=3',
        ],
      }),
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(
      'gateway.autoscaling.minReplicas must not exceed gateway.autoscaling.maxReplicas',
    );
  });

  it('the operator’s retry backoff comes from values and cannot be set through extraEnv', () => {
    const config = operatorConfigOf(objs)!;
    expect(config.ISLET_OPERATOR_RETRY_BACKOFF_INITIAL_MS).toBe(500);
    expect(config.ISLET_OPERATOR_RETRY_BACKOFF_MAX_MS).toBe(60_000);
    const r = helm(
      renderArgs({
        valuesFiles: [values('default')],
        setString: ['extraEnv.ISLET_OPERATOR_RETRY_BACKOFF_MAX_MS=5'],
      }),
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('operator.retryBackoffMaxSeconds');
  });

  it('none of it by default', () => {
    const list = render({ valuesFiles: [values('default')] });
    expect(find(list, 'HorizontalPodAutoscaler')).toEqual([]);
    expect(byComponent(list, 'gateway')[0]!.spec.replicas).toBe(2);
    for (const o of [...podSpecs(list).map((p) => p.obj), ...runnerDeployments(list)]) {
      const t = template(o);
      expect(t.spec.runtimeClassName, o.metadata.name).toBeUndefined();
      expect(
        Object.keys(t.metadata.labels).filter((k) => !/^(app\.kubernetes\.io|islet\.dev|helm\.sh)\//.test(k)),
      ).toEqual([]);
    }
  });
});
