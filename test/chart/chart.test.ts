// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON, checked by the assertions
// The Helm chart with the real helm: lint, render every scenario, validate every object against
// its schema, and check the security posture the product depends on.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildDeployment, parseSpec, type RunnerPool } from '@islet/operator';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import {
  CHART,
  helm,
  type K8sObject,
  podSpecs,
  ROOT,
  render,
  renderArgs,
  restrictedViolations,
  scenarioFiles,
  validateObject,
} from './helm.ts';
import { find, runnerDeployments } from './runners.ts';

const scenarios = scenarioFiles();
const rendered = new Map(
  scenarios.map((s) => [s.name, render({ valuesFiles: [s.file], apiVersions: s.apiVersions })]),
);
const objectsOf = (name: string) => rendered.get(name)!;

describe('helm lint', () => {
  it('lints clean for every scenario', () => {
    for (const s of scenarios) {
      // helm lint has no --api-versions: the monitoring objects are checked through helm template.
      const r = helm(['lint', CHART, '--strict', '-f', s.file]);
      expect(r.status, `${s.name}: ${r.stdout}${r.stderr}`).toBe(0);
      expect(r.stdout).toContain('0 chart(s) failed');
    }
  });

  it('every ci/ values file is a tested scenario', () => {
    const files = readdirSync(join(CHART, 'ci')).sort();
    expect(files).toEqual(
      scenarios
        .filter((s) => s.name.startsWith('ci/'))
        .map((s) => `${s.name.slice(3)}-values.yaml`)
        .sort(),
    );
  });
});

describe.each(scenarios.map((s) => [s.name]))('helm template %s', (name) => {
  it('renders objects that validate against their OpenAPI schemas', async () => {
    const objs = objectsOf(name);
    expect(objs.length).toBeGreaterThan(8);
    for (const o of objs)
      await expect(validateObject(o), `${o.kind}/${o.metadata.name}`).resolves.toBeUndefined();
    // Operator-built runner Deployments validate too.
    for (const d of runnerDeployments(objs)) await validateObject(d);
  });

  it('every workload meets Pod Security "restricted" (the seccomp installer alone is the documented exception)', () => {
    for (const { obj, spec } of podSpecs(objectsOf(name))) {
      const violations = restrictedViolations(spec);
      if (obj.kind === 'DaemonSet' && obj.metadata.name.endsWith('-seccomp')) {
        // It writes the profiles into the kubelet's directory: a hostPath, as root, nothing else.
        expect(violations.sort()).toEqual([
          'installer: runAsNonRoot not true',
          'installer: runAsUser 0',
          'volume type hostPath',
        ]);
        const c = spec.containers[0];
        expect(c.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(spec.volumes.find((v: { hostPath?: { path: string } }) => v.hostPath)?.hostPath.path).toBe(
          '/var/lib/kubelet/seccomp',
        );
        continue;
      }
      expect(violations, `${obj.kind}/${obj.metadata.name}`).toEqual([]);
      for (const c of spec.containers) expect(c.securityContext.readOnlyRootFilesystem, c.name).toBe(true);
    }
  });

  it('runner pods: Localhost runner.json + the jail stacking the mode’s profile, read-only root, no token, grace ≥ 600 s', () => {
    const deployments = runnerDeployments(objectsOf(name));
    expect(deployments.length).toBeGreaterThan(0);
    for (const d of deployments) {
      const spec = d.spec.template.spec;
      const mode = d.spec.template.metadata.labels['islet.dev/sandbox-mode'];
      // The container profile lets the broker reach Redis and the gateway; each sandbox process gets
      // islet/<mode>.json stacked by islet-jail (ISLET_SANDBOX_JAIL=on), which the image ships.
      const profile = { type: 'Localhost', localhostProfile: 'islet/runner.json' };
      expect(['read-only', 'workspace-write', 'danger-full-access']).toContain(mode);
      expect(spec.securityContext.seccompProfile).toEqual(profile);
      expect(spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(600);
      expect(spec.automountServiceAccountToken).toBe(false);
      expect(restrictedViolations(spec)).toEqual([]);
      for (const c of spec.containers) {
        expect(c.securityContext).toMatchObject({
          seccompProfile: profile,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        });
        expect(c.env.find((e: { name: string }) => e.name === 'ISLET_RUNNER_MODES').value).toBe(mode);
        expect(c.env.find((e: { name: string }) => e.name === 'ISLET_SANDBOX_JAIL').value).toBe('on');
        expect(
          Number(c.env.find((e: { name: string }) => e.name === 'ISLET_RUNNER_SHUTDOWN_GRACE_MS').value),
        ).toBeLessThan(spec.terminationGracePeriodSeconds * 1000);
      }
      // Writable places are volumes only: /tmp and the session workspaces (ISLET_WORKSPACE_ROOT);
      // the Secret is mounted read-only.
      const root = find(objectsOf(name), 'ConfigMap', (o) => o.metadata.name === 'islet-config')[0]!.data
        .ISLET_WORKSPACE_ROOT;
      const mounts = spec.containers[0].volumeMounts as { mountPath: string; readOnly?: boolean }[];
      expect(
        mounts
          .filter((m) => !m.readOnly)
          .map((m) => m.mountPath)
          .sort(),
      ).toEqual(['/tmp', root].sort());
      // …plus, read-only, what the scenario adds through runners.extraVolumeMounts.
      expect(mounts.filter((m) => m.readOnly).map((m) => m.mountPath)).toEqual([
        '/var/run/secrets/islet',
        ...(name === 'ci/pod-settings' ? ['/etc/ssl/islet-extra'] : []),
      ]);
    }
  });
});

describe('security wiring', () => {
  it("the runner's in-memory /tmp follows each pool's tmpSizeLimit, whether helm or the operator builds the pod", () => {
    const tmpSizes = (operator: boolean) =>
      Object.fromEntries(
        runnerDeployments(
          render({
            set: [
              'redis.url=redis://r:6379',
              'redis.externalCIDRs={10.0.0.0/8}',
              `operator.enabled=${operator}`,
              'runners.pools.danger-full-access.enabled=true',
            ],
          }),
        ).map((d) => [
          d.spec.template.metadata.labels['islet.dev/sandbox-mode'],
          d.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'tmp').emptyDir.sizeLimit,
        ]),
      );
    const expected = { 'read-only': '64Mi', 'workspace-write': '64Mi', 'danger-full-access': '256Mi' };
    expect(tmpSizes(false)).toEqual(expected); // static Deployments rendered by helm
    expect(tmpSizes(true)).toEqual(expected); // built by the operator from the rendered RunnerPools
  });

  it('a helm-managed runner pod equals the one the operator builds (one posture, two renderers)', () => {
    const objs = objectsOf('ci/minimal');
    const helmDeploy = find(
      objs,
      'Deployment',
      (o) => o.metadata.labels['islet.dev/sandbox-mode'] === 'read-only',
    )[0]!;
    const pool = {
      apiVersion: 'islet.dev/v1alpha1',
      kind: 'RunnerPool',
      metadata: { name: 'p', uid: 'u' },
      spec: {},
    };
    const parsed = parseSpec({
      mode: 'read-only',
      maxReplicas: 2,
      image: 'x',
      resources: helmDeploy.spec.template.spec.containers[0].resources,
    });
    if (!parsed.ok) throw new Error(parsed.message);
    const op = buildDeployment(pool as RunnerPool, parsed.spec, 1, {
      metricsPort: 9464,
      envSecret: 'islet-secrets',
    }).spec!.template.spec!;
    const hs = helmDeploy.spec.template.spec;
    const [hc, oc] = [hs.containers[0], op.containers[0]!];
    expect(hs.securityContext).toEqual(JSON.parse(JSON.stringify(op.securityContext)));
    expect(hc.securityContext).toEqual(JSON.parse(JSON.stringify(oc.securityContext)));
    expect(hs.terminationGracePeriodSeconds).toBe(op.terminationGracePeriodSeconds);
    expect(hc.env.map((e: { name: string }) => e.name)).toEqual(oc.env!.map((e) => e.name));
    expect(hc.env).toEqual(JSON.parse(JSON.stringify(oc.env)));
    expect(hc.volumeMounts).toEqual(oc.volumeMounts);
    expect(hs.volumes).toEqual(JSON.parse(JSON.stringify(op.volumes)));
    expect(hc.livenessProbe).toEqual(JSON.parse(JSON.stringify(oc.livenessProbe)));
    expect(hc.readinessProbe).toEqual(JSON.parse(JSON.stringify(oc.readinessProbe)));
    expect(hs.volumes).toEqual(JSON.parse(JSON.stringify(op.volumes)));
  });

  it('NetworkPolicies: default deny; runners reach only Redis, the gateway and DNS', () => {
    for (const name of ['ci/default', 'ci/bundled-redis', 'deploy/production']) {
      const objs = objectsOf(name);
      const deny = find(objs, 'NetworkPolicy', (o) => o.metadata.name.endsWith('-default-deny'))[0]!;
      expect(deny.spec).toEqual({
        podSelector: { matchLabels: { 'app.kubernetes.io/instance': 'islet' } },
        policyTypes: ['Ingress', 'Egress'],
      });
      const runner = find(
        objs,
        'NetworkPolicy',
        (o) => o.spec.podSelector.matchLabels['app.kubernetes.io/component'] === 'runner',
      )[0]!;
      expect(runner.spec.policyTypes).toEqual(['Ingress', 'Egress']);
      const egress = runner.spec.egress as {
        to: Record<string, any>[];
        ports: { port: number; protocol: string }[];
      }[];
      expect(egress).toHaveLength(3);
      const bundled = name === 'ci/bundled-redis';
      const [redis, gateway, dns] = egress;
      if (bundled) {
        expect(redis!.to).toEqual([
          {
            podSelector: {
              matchLabels: { 'app.kubernetes.io/instance': 'islet', 'app.kubernetes.io/component': 'redis' },
            },
          },
        ]);
        expect(redis!.ports).toEqual([{ protocol: 'TCP', port: 6379 }]);
      } else {
        for (const peer of redis!.to) expect(Object.keys(peer)).toEqual(['ipBlock']);
        expect(redis!.to.map((p) => p.ipBlock.cidr)).not.toContain('0.0.0.0/0');
      }
      expect(gateway!.to).toEqual([
        {
          podSelector: {
            matchLabels: { 'app.kubernetes.io/instance': 'islet', 'app.kubernetes.io/component': 'gateway' },
          },
        },
      ]);
      // The internal channel's port (gateway.internalPort), not the public API's.
      expect(gateway!.ports).toEqual([{ protocol: 'TCP', port: 8081 }]);
      expect(dns!.ports.map((p) => p.port)).toEqual([53, 53]);
      // The operator-built runner pods carry the labels these policies select.
      for (const d of runnerDeployments(objs)) {
        const labels = d.spec.template.metadata.labels;
        expect(labels['app.kubernetes.io/instance']).toBe('islet');
        expect(labels['app.kubernetes.io/component']).toBe('runner');
      }
      if (bundled) {
        const redisPolicy = find(
          objs,
          'NetworkPolicy',
          (o) => o.spec.podSelector.matchLabels['app.kubernetes.io/component'] === 'redis',
        )[0]!;
        expect(redisPolicy.spec.egress).toEqual([]);
        expect(
          redisPolicy.spec.ingress[0].from.map(
            (f: any) => f.podSelector.matchLabels['app.kubernetes.io/component'],
          ),
        ).toEqual(['gateway', 'runner', 'operator']);
      }
    }
    expect(find(objectsOf('ci/minimal'), 'NetworkPolicy')).toEqual([]);
  });

  it('operator-built runner pods get the chart’s runner placement, pull secrets, env sources and account', () => {
    const objs = objectsOf('deploy/production');
    const [d] = runnerDeployments(objs);
    const spec = d!.spec.template.spec;
    expect(spec.nodeSelector).toEqual({ 'islet.dev/runner-node': 'true' });
    expect(spec.tolerations).toEqual([
      { key: 'islet.dev/untrusted-code', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    expect(spec.imagePullSecrets).toEqual([{ name: 'registry-example-com' }]);
    expect(spec.serviceAccountName).toBe('islet-runner');
    expect(spec.priorityClassName).toBe('islet-runners');
    expect(spec.containers[0].envFrom).toEqual([{ configMapRef: { name: 'islet-config' } }]);
    expect(spec.volumes).toContainEqual({
      name: 'secrets',
      projected: { defaultMode: 0o440, sources: [{ secret: { name: 'islet-secrets' } }] },
    });
    expect(spec.containers[0].image).toBe(
      'registry.example.com/islet/runner:0.1.0@sha256:0000000000000000000000000000000000000000000000000000000000000002',
    );
    expect(find(objs, 'ServiceAccount').map((s) => s.metadata.name)).toContain('islet-runner');
    expect(find(objs, 'ConfigMap').map((c) => c.metadata.name)).toContain('islet-config');
  });

  it('operator RBAC is namespaced and limited to what the operator calls', () => {
    const objs = objectsOf('ci/default');
    expect(find(objs, 'ClusterRole')).toEqual([]);
    const role = find(objs, 'Role', (r) => r.metadata.name === 'islet-operator')[0]!;
    const verbs = Object.fromEntries(
      role.rules.map((r: any) => [`${r.apiGroups[0]}/${r.resources[0]}`, r.verbs]),
    );
    // patch: spec.replicas defaulted on a pool without it (its /scale is unreadable otherwise).
    expect(verbs['islet.dev/runnerpools']).toEqual(['get', 'list', 'watch', 'patch']);
    expect(verbs['apps/deployments']).not.toContain('delete');
    expect(verbs['/pods']).toEqual(['get', 'list', 'watch', 'patch']);
    expect(verbs['coordination.k8s.io/leases']).toEqual(['get', 'create', 'update']);
    // A repeated Event raises the count of the one already written (client-go's recorder).
    expect(verbs['/events']).toEqual(['create', 'patch']);
    // blockOwnerDeletion on the Deployments' ownerReference needs update on the owner's finalizers.
    expect(verbs['islet.dev/runnerpools/finalizers']).toEqual(['update']);
    const binding = find(objs, 'RoleBinding', (r) => r.metadata.name === 'islet-operator')[0]!;
    expect(binding.subjects[0].name).toBe(
      find(objs, 'ServiceAccount', (o) => o.metadata.name.endsWith('-operator'))[0]!.metadata.name,
    );
  });

  it('the seccomp profiles shipped are byte-identical to services/kernel-sandbox/profiles', () => {
    const modes = ['read-only', 'workspace-write', 'danger-full-access', 'runner'];
    expect(readdirSync(join(CHART, 'files/seccomp')).sort()).toEqual(modes.map((m) => `${m}.json`).sort());
    const cm = find(objectsOf('ci/default'), 'ConfigMap', (o) => o.metadata.name.endsWith('-seccomp'))[0]!;
    for (const m of modes) {
      const source = readFileSync(join(ROOT, 'services/kernel-sandbox/profiles', `${m}.json`));
      expect(readFileSync(join(CHART, 'files/seccomp', `${m}.json`)).equals(source), m).toBe(true);
      expect(Buffer.from(cm.binaryData[`${m}.json`], 'base64').equals(source), m).toBe(true);
    }
    const ds = find(objectsOf('deploy/production'), 'DaemonSet')[0]!;
    expect(ds.metadata.namespace).toBe('islet-system');
    expect(ds.spec.template.spec.containers[0].command.slice(-3)).toEqual([
      '/profiles',
      '/host-seccomp/islet',
      '60000',
    ]);
  });

  it('bundled Redis is configured as BullMQ requires (noeviction, AOF) and persists to a PVC', () => {
    const objs = objectsOf('ci/bundled-redis');
    const conf = find(objs, 'ConfigMap', (o) => o.metadata.name.endsWith('-redis'))[0]!.data['redis.conf'];
    expect(conf).toMatch(/^maxmemory-policy noeviction$/m);
    expect(conf).toMatch(/^appendonly yes$/m);
    // A journaled call must survive a Redis crash, or it would be sent to its App again.
    expect(conf).toMatch(/^appendfsync always$/m);
    // Per-command latency histograms cost CPU on every command a script runs; nothing reads them.
    expect(conf).toMatch(/^latency-tracking no$/m);
    // A run's events stream would keep a 4 KB preallocated node for its whole retention.
    expect(conf).toMatch(/^stream-node-max-bytes 1024$/m);
    expect(conf).toMatch(/^maxmemory 2gb$/m);
    const sts = find(objs, 'StatefulSet')[0]!;
    expect(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('20Gi');
    // Probes run a command (a TCP connect passes while Redis answers LOADING or is wedged).
    const redis = sts.spec.template.spec.containers.find((c: any) => c.name === 'redis');
    expect(redis.readinessProbe.exec.command.join(' ')).toContain('redis-cli -p 6379 ping');
    expect(redis.readinessProbe.tcpSocket).toBeUndefined();
    expect(redis.livenessProbe.exec.command.join(' ')).toContain('LOADING');
    // A PDB on the only Redis: maxUnavailable 1, so a node drain can move it (minAvailable 1 on one
    // replica refused every eviction and no drain of its node ever finished).
    const pdb = find(objs, 'PodDisruptionBudget', (p) => p.metadata.name === 'islet-redis')[0]!;
    expect(pdb.spec.maxUnavailable).toBe(1);
    expect(pdb.spec.minAvailable).toBeUndefined();
    expect(pdb.spec.selector.matchLabels['app.kubernetes.io/component']).toBe('redis');
    const cfg = find(objs, 'ConfigMap', (o) => o.metadata.name.endsWith('-config'))[0]!;
    expect(cfg.data.ISLET_REDIS_URL).toBe('redis://islet-redis.islet.svc:6379');
    expect(find(objectsOf('ci/default'), 'StatefulSet')).toEqual([]);
  });

  it('an existing Secret: none rendered, mounted as files, Redis URL from it, images pinned', () => {
    const prod = objectsOf('deploy/production');
    expect(find(prod, 'Secret')).toEqual([]);
    const gw = find(prod, 'Deployment', (o) => o.metadata.name.endsWith('-gateway'))[0]!;
    expect(gw.spec.template.spec.containers[0].env).toContainEqual({
      name: 'ISLET_REDIS_URL',
      valueFrom: { secretKeyRef: { name: 'islet-secrets', key: 'ISLET_REDIS_URL', optional: true } },
    });
    expect(
      find(prod, 'ConfigMap', (o) => o.metadata.name.endsWith('-config'))[0]!.data.ISLET_REDIS_URL,
    ).toBeUndefined();
    // Images pinned by digest.
    expect(gw.spec.template.spec.containers[0].image).toBe(
      'registry.example.com/islet/gateway:0.1.0@sha256:0000000000000000000000000000000000000000000000000000000000000001',
    );
  });
});

describe('monitoring objects', () => {
  it('ServiceMonitor and PrometheusRule exist only when the cluster serves monitoring.coreos.com/v1', () => {
    for (const kind of ['ServiceMonitor', 'PrometheusRule']) {
      expect(find(objectsOf('ci/default'), kind)).toEqual([]);
      expect(find(objectsOf('ci/monitoring'), kind)).toHaveLength(1);
    }
    const rule = find(objectsOf('ci/monitoring'), 'PrometheusRule')[0]!;
    const file = parseYaml(readFileSync(join(CHART, 'files/alerts/islet-rules.yaml'), 'utf8'));
    expect(rule.spec).toEqual(file);
    expect(rule.metadata.labels.release).toBe('kube-prometheus-stack');
    // Without the operator, its not-reconciling alert is left out (it would fire forever).
    const noOperator = render({
      valuesFiles: [join(CHART, 'ci/minimal-values.yaml')],
      apiVersions: ['monitoring.coreos.com/v1'],
    });
    const alerts = find(noOperator, 'PrometheusRule')[0]!.spec.groups.flatMap((g: any) =>
      g.rules.map((r: any) => r.alert),
    );
    expect(alerts).toContain('IsletRedisMemoryHigh');
    expect(alerts).not.toContain('IsletOperatorNotReconciling');
    expect(alerts).not.toContain('IsletOperatorAbsent');
    expect(alerts).not.toContain('IsletRunnerPoolAtMaxWithBacklog');
    expect(alerts).toContain('IsletQueueStalled');
    const sm = find(objectsOf('ci/monitoring'), 'ServiceMonitor')[0]!;
    // The rules aggregate by namespace and release and key up/absent on islet_component.
    for (const e of sm.spec.endpoints)
      expect(e.relabelings).toEqual([
        {
          sourceLabels: ['__meta_kubernetes_service_label_app_kubernetes_io_instance'],
          targetLabel: 'release',
        },
        {
          sourceLabels: ['__meta_kubernetes_service_label_app_kubernetes_io_component'],
          targetLabel: 'islet_component',
        },
      ]);
    expect(sm.spec.selector.matchLabels).toEqual({
      'app.kubernetes.io/instance': 'islet',
      'islet.dev/scrape': 'true',
    });
    // Every Service it selects exposes a port one of its endpoints scrapes.
    const ports = new Set(sm.spec.endpoints.map((e: { port: string }) => e.port));
    const scraped = find(
      objectsOf('ci/monitoring'),
      'Service',
      (s) => s.metadata.labels['islet.dev/scrape'] === 'true',
    );
    expect(scraped.map((s) => s.metadata.labels['app.kubernetes.io/component']).sort()).toEqual([
      'gateway',
      'operator',
      'runner',
    ]);
    for (const s of scraped) expect(s.spec.ports.some((p: { name: string }) => ports.has(p.name))).toBe(true);
  });

  it('the Grafana dashboard ConfigMap carries the sidecar label and the dashboard file', () => {
    const cm = find(objectsOf('ci/monitoring'), 'ConfigMap', (o) =>
      o.metadata.name.endsWith('-dashboard'),
    )[0]!;
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
    expect(cm.metadata.namespace).toBe('monitoring');
    expect(JSON.parse(cm.data['islet.json'])).toEqual(
      JSON.parse(readFileSync(join(CHART, 'files/dashboards/islet.json'), 'utf8')),
    );
    expect(find(objectsOf('ci/minimal'), 'ConfigMap', (o) => o.metadata.name.endsWith('-dashboard'))).toEqual(
      [],
    );
  });
});

describe('values.schema.json', () => {
  const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8'));

  it('closes every object: additionalProperties false where properties are listed, a typed schema for maps', () => {
    const open: string[] = [];
    const walk = (node: any, path: string) => {
      if (!node || typeof node !== 'object') return;
      if (node.type === 'object') {
        if (node.properties && node.additionalProperties !== false) open.push(path);
        if (
          !node.properties &&
          (node.additionalProperties === undefined || node.additionalProperties === true)
        )
          open.push(path);
      }
      for (const [k, v] of Object.entries(node.properties ?? {})) walk(v, `${path}.${k}`);
      if (node.items) walk(node.items, `${path}[]`);
      if (node.additionalProperties && typeof node.additionalProperties === 'object')
        walk(node.additionalProperties, `${path}.*`);
    };
    walk(schema, '$');
    expect(open).toEqual([]);
  });

  it('helm refuses unknown keys at any level and wrong types', () => {
    for (const bad of [
      'gatewy.replicas=2',
      'gateway.replica=2',
      'runners.pools.read-only.maxReplica=3',
      'redis.bundled.enable=true',
    ]) {
      const r = helm(renderArgs({ valuesFiles: [join(CHART, 'ci/default-values.yaml')], set: [bad] }));
      expect(r.status, bad).not.toBe(0);
      expect(r.stderr, bad).toMatch(/additional propert/i);
    }
    const r = helm(
      renderArgs({
        valuesFiles: [join(CHART, 'ci/default-values.yaml')],
        set: ['runners.terminationGracePeriodSeconds=30'],
      }),
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/minimum|greater/i);
  });

  it('an install without any Redis fails with a clear message', () => {
    const r = helm(renderArgs({}));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('redis.url is required');
  });
});

describe('PodDisruptionBudgets', () => {
  it('runner PDBs let a drain take half a pool at once', () => {
    const runner = find(objectsOf('ci/default'), 'PodDisruptionBudget', (p) =>
      p.metadata.name.endsWith('-runner'),
    );
    expect(runner.length).toBeGreaterThan(0);
    for (const p of runner) expect(p.spec.maxUnavailable).toBe('50%');
  });
});

describe('alert runbooks', () => {
  it('runbook_url comes from monitoring.prometheusRule.runbookBaseUrl', () => {
    const objs = render({
      valuesFiles: [scenarios.find((s) => s.name === 'ci/default')!.file],
      set: ['monitoring.prometheusRule.runbookBaseUrl=https://wiki.example.com/islet'],
      apiVersions: ['monitoring.coreos.com/v1'],
    });
    const rule = find(objs, 'PrometheusRule')[0]!;
    const urls = rule.spec.groups.flatMap((g: any) =>
      g.rules.map((r: any) => r.annotations?.runbook_url).filter(Boolean),
    );
    expect(urls.length).toBeGreaterThan(15);
    for (const u of urls) expect(u).toMatch(/^https:\/\/wiki\.example\.com\/islet#[a-z]+$/);
  });
});

describe('runner placement and runtime', () => {
  const placement = [
    '--set',
    'runners.runtimeClassName=gvisor',
    '--set-json',
    'runners.affinity={"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"app.kubernetes.io/component":"runner"}}}}]}}',
    '--set-json',
    'runners.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app.kubernetes.io/component":"runner"}}}]',
  ];
  const withPlacement = (file: string) => {
    const r = helm([...renderArgs({ valuesFiles: [join(CHART, file)] }), ...placement]);
    if (r.status !== 0) throw new Error(r.stderr);
    return parseAllDocuments(r.stdout)
      .map((d) => d.toJS() as K8sObject | null)
      .filter((d): d is K8sObject => !!d);
  };

  it('runtimeClassName, affinity and topologySpreadConstraints reach helm’s and the operator’s runner pods alike', () => {
    for (const file of ['ci/minimal-values.yaml', 'ci/default-values.yaml']) {
      const deployments = runnerDeployments(withPlacement(file));
      expect(deployments.length, file).toBeGreaterThan(0);
      for (const d of deployments) {
        const spec = JSON.parse(JSON.stringify(d.spec.template.spec));
        expect(spec.runtimeClassName, file).toBe('gvisor');
        expect(spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight).toBe(
          100,
        );
        expect(spec.topologySpreadConstraints[0]).toMatchObject({
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
        });
      }
    }
  });

  it('unset by default', () => {
    for (const d of runnerDeployments(objectsOf('ci/default'))) {
      const spec = JSON.parse(JSON.stringify(d.spec.template.spec));
      expect(spec.runtimeClassName).toBeUndefined();
      expect(spec.affinity).toBeUndefined();
      expect(spec.topologySpreadConstraints).toBeUndefined();
    }
  });
});
