/**
 * Usage per day (`GET /v1/usage?from&to`, one item per tenant the key may see): runs by status, wall and sandbox CPU time, binding
 * calls, output bytes and skill runs, charted (uPlot) and tabled, for a chosen span of days.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, problemText } from '../api.ts';
import { Chart, PALETTE } from '../chart.tsx';
import { mib } from '../log-view.tsx';
import { Problem } from './util.tsx';

interface UsageDay {
  day: string;
  runs: Record<string, number>;
  wallMs: number;
  cpuMs: number;
  bindingCalls: number;
  outputBytes: number;
  skillRuns: number;
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const STATUS_COLORS: Record<string, string> = {
  Completed: '#116329',
  Failed: '#a40e26',
  Cancelled: '#7d4e00',
};

export function UsagePage() {
  const [span, setSpan] = useState(14);
  const [tenants, setTenants] = useState<Array<{ tenant: string; days: UsageDay[] }> | null>(null);
  const [tenant, setTenant] = useState('');
  const [error, setError] = useState('');
  useEffect(() => {
    const to = day(Date.now());
    const from = day(Date.now() - (span - 1) * 86_400_000);
    // One item per tenant the key may see (a platform admin sees every tenant).
    api<{ items: Array<{ tenant: string; days: UsageDay[] }> }>(
      'GET',
      `/v1/usage?from=${from}&to=${to}`,
    ).then(
      (r) => {
        setTenants(r.items);
        setTenant((t) => (r.items.some((i) => i.tenant === t) ? t : (r.items[0]?.tenant ?? '')));
        setError('');
      },
      (err) => setError(problemText(err)),
    );
  }, [span]);
  const days = tenants?.find((t) => t.tenant === tenant)?.days ?? (tenants ? [] : null);
  const charts = useMemo(() => {
    if (!days) return null;
    const x = days.map((d) => Date.parse(`${d.day}T12:00:00Z`) / 1000);
    const statuses = [...new Set(days.flatMap((d) => Object.keys(d.runs)))].sort();
    return {
      x,
      runs: statuses.map((s, i) => ({
        label: s,
        values: days.map((d) => d.runs[s] ?? 0),
        color: STATUS_COLORS[s] ?? PALETTE[i % PALETTE.length]!,
        bars: true,
      })),
      time: [
        { label: 'wall s', values: days.map((d) => d.wallMs / 1000), color: PALETTE[0]! },
        { label: 'sandbox CPU s', values: days.map((d) => d.cpuMs / 1000), color: PALETTE[4]! },
      ],
      calls: [
        { label: 'binding calls', values: days.map((d) => d.bindingCalls), color: PALETTE[1]! },
        { label: 'skill runs', values: days.map((d) => d.skillRuns), color: PALETTE[3]! },
      ],
      output: [{ label: 'output KiB', values: days.map((d) => d.outputBytes / 1024), color: PALETTE[2]! }],
    };
  }, [days]);
  return (
    <section>
      <h1>Usage</h1>
      <p class="inline">
        <label for="u-span">Days</label>
        <select id="u-span" value={String(span)} onChange={(e) => setSpan(Number(e.currentTarget.value))}>
          <option value="7">last 7 days</option>
          <option value="14">last 14 days</option>
          <option value="30">last 30 days</option>
          <option value="90">last 90 days</option>
        </select>
        {tenants && tenants.length > 1 && (
          <>
            <label for="u-tenant">Tenant</label>
            <select id="u-tenant" value={tenant} onChange={(e) => setTenant(e.currentTarget.value)}>
              {tenants.map((t) => (
                <option key={t.tenant} value={t.tenant}>
                  {t.tenant}
                </option>
              ))}
            </select>
          </>
        )}
        <span class="hint">UTC days; counted as each run ends.</span>
      </p>
      {error && <Problem>{error}</Problem>}
      {charts && days && (
        <>
          <div class="charts">
            <Chart title="Runs by status" x={charts.x} series={charts.runs} unit="runs" />
            <Chart title="Time" x={charts.x} series={charts.time} unit="s" />
            <Chart title="Binding calls and skill runs" x={charts.x} series={charts.calls} />
            <Chart title="Output" x={charts.x} series={charts.output} unit="KiB" />
          </div>
          <div class="table-wrap">
            <table class="runs usage">
              <caption class="sr-only">Usage per day</caption>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Runs</th>
                  <th scope="col">Wall</th>
                  <th scope="col">Sandbox CPU</th>
                  <th scope="col">Binding calls</th>
                  <th scope="col">Output</th>
                  <th scope="col">Skill runs</th>
                </tr>
              </thead>
              <tbody>
                {[...days].reverse().map((d) => (
                  <tr key={d.day} data-day={d.day}>
                    <td>{d.day}</td>
                    <td>
                      {Object.entries(d.runs)
                        .map(([s, n]) => `${n} ${s}`)
                        .join(', ') || '0'}
                    </td>
                    <td>{(d.wallMs / 1000).toFixed(1)} s</td>
                    <td>{(d.cpuMs / 1000).toFixed(1)} s</td>
                    <td>{d.bindingCalls}</td>
                    <td>{mib(d.outputBytes)}</td>
                    <td>{d.skillRuns}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
