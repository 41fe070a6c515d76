// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON, checked by the assertions
// Ports and NetworkPolicies as an SRE needs them, with the real helm: Prometheus reaches every
// component's metrics port, the public Service exposes neither /internal/* nor /metrics, runners
// reach only the internal channel, no silent 0.0.0.0/0 to Redis.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART, helm, type K8sObject, ROOT, render, renderArgs } from './helm.ts';
import { find } from './runners.ts';

const PROD = join(ROOT, 'deploy/production/values.yaml');
const DEFAULT = join(CHART, 'ci/default-values.yaml');
const prod = render({ valuesFiles: [PROD], apiVersions: ['monitoring.coreos.com/v1'] });
const component = (objs: K8sObject[], kind: string, c: string) =>
  find(objs, kind, (o) => o.metadata.labels?.['app.kubernetes.io/component'] === c);
const policyOf = (objs: K8sObject[], c: string) =>
  find(
    objs,
    'NetworkPolicy',
    (o) => o.spec.podSelector.matchLabels?.['app.kubernetes.io/component'] === c,
  )[0]!;
/** Ingress rules of a policy that admit `port` from the monitoring namespace. */
const monitoringMayReach = (policy: K8sObject, port: number) =>
  policy.spec.ingress.some(
    (r: any) =>
      r.ports?.some((p: any) => p.port === port) &&
      r.from?.some(
        (f: any) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'monitoring',
      ),
  );

describe('gateway ports', () => {
  const gw = component(prod, 'Deployment', 'gateway')[0]!;
  const c = gw.spec.template.spec.containers[0];
  const env = Object.fromEntries(c.env.map((e: any) => [e.name, e.value]));
  const portOf = (name: string) => c.ports.find((p: any) => p.name === name).containerPort;

  it('the runner channel and /metrics listen on their own ports (ISLET_INTERNAL_PORT, ISLET_METRICS_PORT)', () => {
    expect(env.ISLET_INTERNAL_PORT).toBe(String(portOf('internal')));
    expect(env.ISLET_METRICS_PORT).toBe(String(portOf('metrics')));
    expect(new Set([portOf('http'), portOf('internal'), portOf('metrics')]).size).toBe(3);
  });

  it('with the Ingress on, the gateway trusts one proxy hop (every client is not the controller); off, none', () => {
    const configOf = (objs: K8sObject[]) =>
      find(objs, 'ConfigMap', (o) => o.metadata.name === 'islet-config')[0]!;
    expect(configOf(prod).data.ISLET_TRUST_PROXY_HOPS).toBe('1');
    const twoHops = render({ valuesFiles: [PROD], set: ['gateway.ingress.trustedProxyHops=2'] });
    expect(configOf(twoHops).data.ISLET_TRUST_PROXY_HOPS).toBe('2');
    expect(configOf(render({ valuesFiles: [DEFAULT] })).data.ISLET_TRUST_PROXY_HOPS).toBeUndefined();
    const clash = helm(renderArgs({ valuesFiles: [PROD], setString: ['extraEnv.ISLET_TRUST_PROXY_HOPS=3'] }));
    expect(clash.status).not.toBe(0);
    expect(clash.stderr).toContain(
      'set gateway.ingress.trustedProxyHops instead of extraEnv.ISLET_TRUST_PROXY_HOPS',
    );
  });

  it('the public Service (and so the Ingress) routes to the http port only', () => {
    const svc = find(prod, 'Service', (s) => s.metadata.name === 'islet-gateway')[0]!;
    expect(svc.spec.ports.map((p: any) => p.targetPort)).toEqual(['http']);
    expect(svc.metadata.labels['islet.dev/scrape']).toBeUndefined();
    const ing = find(prod, 'Ingress')[0]!;
    const backends = ing.spec.rules.flatMap((r: any) => r.http.paths.map((p: any) => p.backend.service));
    expect(backends.every((b: any) => b.name === 'islet-gateway')).toBe(true);
  });

  it('runners use the internal Service and may reach only the internal port', () => {
    const cfg = find(prod, 'ConfigMap', (o) => o.metadata.name === 'islet-config')[0]!;
    expect(cfg.data.ISLET_GATEWAY_URLS).toBe(`http://islet-gateway-internal.islet.svc:${portOf('internal')}`);
    const internal = find(prod, 'Service', (s) => s.metadata.name === 'islet-gateway-internal')[0]!;
    expect(internal.spec.ports.map((p: any) => p.targetPort)).toEqual(['internal']);
    const toGateway = policyOf(prod, 'runner').spec.egress.filter((r: any) =>
      r.to?.some((t: any) => t.podSelector?.matchLabels?.['app.kubernetes.io/component'] === 'gateway'),
    );
    expect(toGateway.flatMap((r: any) => r.ports.map((p: any) => p.port))).toEqual([portOf('internal')]);
    // The gateway admits the internal port from runner pods only, the public port from the ingress only.
    const gwPolicy = policyOf(prod, 'gateway');
    const rule = (port: number) =>
      gwPolicy.spec.ingress.filter((r: any) => r.ports.some((p: any) => p.port === port));
    expect(rule(portOf('internal'))).toHaveLength(1);
    expect(
      rule(portOf('internal'))[0].from.map(
        (f: any) => f.podSelector.matchLabels['app.kubernetes.io/component'],
      ),
    ).toEqual(['runner']);
    expect(rule(portOf('http'))[0].from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
    ]);
  });

  it('SIGTERM: a shutdown delay within the grace period; a grace period that cannot drain fails the render', () => {
    expect(Number(env.ISLET_SHUTDOWN_DELAY_MS)).toBeGreaterThan(0);
    expect(gw.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      Number(env.ISLET_SHUTDOWN_DELAY_MS) + 10_000,
    );
    const bad = helm(renderArgs({ valuesFiles: [DEFAULT], set: ['gateway.shutdownDelaySeconds=55'] }));
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('gateway.terminationGracePeriodSeconds must exceed');
  });
});

describe('scraping', () => {
  it('the ServiceMonitor scrapes `metrics` ports only, and every scraped Service has one', () => {
    const sm = find(prod, 'ServiceMonitor')[0]!;
    expect(sm.spec.endpoints.map((e: any) => e.port)).toEqual(['metrics']);
    const scraped = find(prod, 'Service', (s) => s.metadata.labels?.['islet.dev/scrape'] === 'true');
    expect(scraped.map((s) => s.metadata.labels['app.kubernetes.io/component']).sort()).toEqual(
      ['gateway', 'operator', 'runner'].sort(),
    );
    for (const s of scraped)
      expect(
        s.spec.ports.map((p: any) => p.name),
        s.metadata.name,
      ).toEqual(['metrics']);
  });

  it('the monitoring namespace may reach the metrics port of every component (production values)', () => {
    const ports: Record<string, number> = {};
    for (const s of find(prod, 'Service', (o) => o.metadata.labels?.['islet.dev/scrape'] === 'true'))
      ports[s.metadata.labels['app.kubernetes.io/component']] = s.spec.ports[0].port;
    for (const [c, port] of Object.entries(ports))
      expect(monitoringMayReach(policyOf(prod, c), port), `${c}:${port}`).toBe(true);
    const bundled = render({
      valuesFiles: [join(CHART, 'ci/bundled-redis-values.yaml')],
      set: ['networkPolicy.prometheusNamespaceLabels.kubernetes\\.io/metadata\\.name=monitoring'],
    });
    expect(monitoringMayReach(policyOf(bundled, 'redis'), 9121)).toBe(true);
  });
});

describe('egress', () => {
  it('operator: API server on 443 and 6443 to the listed endpoint addresses', () => {
    const egress = policyOf(prod, 'operator').spec.egress;
    const api = egress.find((r: any) => r.ports?.some((p: any) => p.port === 6443));
    expect(api.ports.map((p: any) => p.port)).toEqual([443, 6443]);
    expect(api.to.map((t: any) => t.ipBlock.cidr)).toEqual([
      '172.18.0.10/32',
      '172.18.0.11/32',
      '172.18.0.12/32',
    ]);
  });

  it('Redis: the bundled Redis pods, or the external CIDRs; an external Redis without CIDRs fails', () => {
    const bundled = render({ valuesFiles: [join(CHART, 'ci/bundled-redis-values.yaml')] });
    for (const c of ['gateway', 'runner', 'operator']) {
      const toRedis = policyOf(bundled, c).spec.egress.find((r: any) =>
        r.ports?.some((p: any) => p.port === 6379),
      );
      expect(toRedis.to, c).toEqual([
        {
          podSelector: {
            matchLabels: { 'app.kubernetes.io/instance': 'islet', 'app.kubernetes.io/component': 'redis' },
          },
        },
      ]);
    }
    const noCidr = helm(renderArgs({ set: ['redis.url=redis://r.example:6379'] }));
    expect(noCidr.status).not.toBe(0);
    expect(noCidr.stderr).toContain('redis.externalCIDRs: list the external Redis');
    for (const o of prod.filter((x) => x.kind === 'NetworkPolicy'))
      for (const r of o.spec.egress ?? [])
        if (r.ports?.some((p: any) => p.port === 6380))
          expect(
            r.to.map((t: any) => t.ipBlock.cidr),
            o.metadata.name,
          ).toEqual(['10.40.0.0/24']);
  });
});
