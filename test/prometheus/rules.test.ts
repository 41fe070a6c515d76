// The chart's alert rules with the real promtool: syntax (check rules), behaviour (test rules,
// one unit test per alert in rules.test.yaml), and consistency with the metrics Islet emits.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

const ROOT = resolve(import.meta.dirname, '../..');
const RULES = join(ROOT, 'charts/islet/files/alerts/islet-rules.yaml');
const TESTS = join(import.meta.dirname, 'rules.test.yaml');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules: Rule[] = parseYaml(readFileSync(RULES, 'utf8')).groups.flatMap(
  (g: { rules: Rule[] }) => g.rules,
);
const alerts = rules.filter((r) => r.alert);

/** Metric names Islet's code registers (prom-client `name: '...'`). */
function emittedMetricNames(): Set<string> {
  const names = new Set<string>();
  for (const f of ['services/core/src/metrics.ts', 'services/operator/src/metrics.ts']) {
    for (const m of readFileSync(join(ROOT, f), 'utf8').matchAll(/name: '(islet_[a-z_]+)'/g))
      names.add(m[1]!);
  }
  return names;
}

describe('alert rules', () => {
  it('promtool check rules accepts the file', () => {
    const r = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it('promtool test rules passes (every alert fires on its scenario and not on its healthy twin)', () => {
    const r = spawnSync('promtool', ['test', 'rules', TESTS], { encoding: 'utf8', cwd: import.meta.dirname });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('SUCCESS');
    // promtool evaluates every rule at every step of every test: slow on a loaded machine.
  }, 240_000);

  it('every alert has a unit test where it fires', () => {
    const tests = parseYaml(readFileSync(TESTS, 'utf8')).tests as {
      alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[];
    }[];
    const firing = new Set(
      tests.flatMap((t) =>
        (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname),
      ),
    );
    const quiet = new Set(
      tests.flatMap((t) =>
        (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length === 0).map((a) => a.alertname),
      ),
    );
    expect(alerts.length).toBeGreaterThanOrEqual(15);
    for (const a of alerts) expect(firing.has(a.alert!), a.alert).toBe(true);
    // …and a healthy twin (or a pending phase) where it stays quiet.
    for (const a of alerts) expect(quiet.has(a.alert!), `${a.alert} healthy twin`).toBe(true);
  });

  it('every alert aggregates by namespace and release (absent() excepted: it has no labels to keep)', () => {
    for (const a of alerts) {
      // absent() has no labels to keep; burn-rate alerts read recording rules (checked below).
      if (a.expr.startsWith('absent(') || !/\b(islet_|redis_|kube_|up\b)/.test(a.expr)) continue;
      const bys = [...a.expr.matchAll(/\bby \(([^)]*)\)/g)].map((m) => m[1]!);
      expect(bys.length, a.alert).toBeGreaterThan(0);
      for (const by of bys) expect(by, a.alert).toMatch(/namespace/);
    }
    for (const r of rules.filter((r) => r.record))
      for (const m of r.expr.matchAll(/\bsum\b(?! by)/g)) expect(m, r.record).toBeUndefined();
  });

  it('the dashboard has namespace and release variables and every query selects by them', () => {
    const dashboard = JSON.parse(
      readFileSync(join(ROOT, 'charts/islet/files/dashboards/islet.json'), 'utf8'),
    ) as {
      templating: { list: { name: string }[] };
      panels: { title: string; targets?: { expr: string }[] }[];
    };
    const vars = dashboard.templating.list.map((v) => v.name);
    expect(vars).toEqual(expect.arrayContaining(['namespace', 'release', 'mode']));
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => [p.title, t.expr] as const));
    expect(exprs.length).toBeGreaterThan(25);
    for (const [title, expr] of exprs) {
      const selectors = [...expr.matchAll(/\b(islet_[a-z_]+)(\{[^}]*\})?/g)];
      expect(selectors.length, title).toBeGreaterThan(0);
      for (const m of selectors)
        expect(m[2] ?? '', `${title}: ${m[1]}`).toContain('namespace=~"$namespace",release=~"$release"');
    }
  });

  it('every alert has a severity, a summary and a runbook_url whose section exists in the chart README', () => {
    const readme = readFileSync(join(ROOT, 'charts/islet/README.md'), 'utf8');
    const anchors = new Set(
      [...readme.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const a of alerts) {
      expect(['critical', 'warning']).toContain(a.labels?.severity);
      expect(a.annotations?.summary, a.alert).toBeTruthy();
      const url = a.annotations?.runbook_url ?? '';
      expect(url, a.alert).toMatch(/#[a-z]+$/);
      expect(anchors.has(url.split('#')[1]!), `${a.alert}: README section for ${url}`).toBe(true);
    }
  });

  it('rules and dashboard use only metric names Islet emits (or the exporters named in the README)', () => {
    const emitted = emittedMetricNames();
    expect(emitted.has('islet_runs_total')).toBe(true);
    const dashboard = readFileSync(join(ROOT, 'charts/islet/files/dashboards/islet.json'), 'utf8');
    const exprs = [...rules.map((r) => r.expr), dashboard].join('\n');
    const used = new Set([...exprs.matchAll(/\b(islet_[a-z_]+)/g)].map((m) => m[1]!));
    const base = (n: string) => n.replace(/_(bucket|count|sum)$/, '');
    const unknown = [...used].filter(
      // islet_component is the ServiceMonitor's target label, not a metric.
      (n) => !emitted.has(base(n)) && !n.startsWith('islet_process_') && n !== 'islet_component',
    );
    expect(unknown).toEqual([]);
    // Every metric of INTERFACES.md that matters to an SRE is on the dashboard.
    for (const m of [
      'islet_runs_total',
      'islet_run_duration_seconds_bucket',
      'islet_queue_wait_seconds_bucket',
      'islet_queue_depth',
      'islet_decisions_pending',
      'islet_runner_slots',
      'islet_operator_scale_events_total',
      'islet_binding_calls_total',
      'islet_sandbox_processes',
      'islet_sandbox_enforcement',
      'islet_run_recovery_actions_total',
      'islet_handoff_reclaims_total',
    ])
      expect(dashboard, m).toContain(m);
  });
});
