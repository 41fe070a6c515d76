/**
 * Health over the last hour (`GET /v1/health`, 10 s buckets), drawn from the gateway itself, no
 * Kubernetes needed: runs ended per second, p50/p99 latency (creation to end), failures by kind,
 * queue depth, runner slots busy, decisions pending. A tenant key sees its tenant; a platform
 * admin the whole cluster (queue depth and slots per mode). Refreshed every bucket.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, problemText } from '../api.ts';
import { Chart, PALETTE, type Series } from '../chart.tsx';
import { Problem } from './util.tsx';

type Values = Array<number | null>;

interface HealthSeries {
  scope: 'tenant' | 'cluster';
  tenant?: string;
  bucketMs: number;
  t: number[];
  runs: Record<string, number[]>;
  runsPerSecond: number[];
  p50Ms: Values;
  p99Ms: Values;
  failures: Record<string, number[]>;
  queueDepth: Record<string, Values>;
  slotsBusy: Record<string, Values>;
  slotsTotal: Record<string, Values>;
  decisionsPending: Values;
  totals: {
    runs: Record<string, number>;
    failures: Record<string, number>;
    p50Ms: number | null;
    p99Ms: number | null;
  };
}

const STATUS_COLORS: Record<string, string> = {
  Completed: '#116329',
  Failed: '#a40e26',
  Cancelled: '#7d4e00',
};
const REFRESH_MS = 10_000;

const color = (i: number) => PALETTE[i % PALETTE.length]!;
const lines = (m: Record<string, Values>, suffix = '') =>
  Object.entries(m).map(([k, values], i) => ({ label: `${k}${suffix}`, values, color: color(i) }));
const last = (xs: Values) => xs.filter((x): x is number => x !== null).at(-1);
const ms = (v: number | null | undefined) =>
  v === null || v === undefined ? '—' : v < 1000 ? `${v} ms` : `${(v / 1000).toFixed(1)} s`;

export function HealthPage() {
  const [minutes, setMinutes] = useState(60);
  const [data, setData] = useState<HealthSeries | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let gone = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = () =>
      api<HealthSeries>('GET', `/v1/health?minutes=${minutes}`).then(
        (r) => {
          if (gone) return;
          setData(r);
          setError('');
          timer = setTimeout(load, REFRESH_MS);
        },
        (err) => {
          if (gone) return;
          setError(problemText(err));
          timer = setTimeout(load, REFRESH_MS);
        },
      );
    void load();
    return () => {
      gone = true;
      clearTimeout(timer);
    };
  }, [minutes]);
  const charts = useMemo(() => {
    if (!data) return null;
    const x = data.t.map((t) => t / 1000);
    const runs: Series[] = Object.entries(data.runs).map(([s, values], i) => ({
      label: s,
      values: values.map((v) => v / (data.bucketMs / 1000)),
      color: STATUS_COLORS[s] ?? color(i),
    }));
    const slots: Series[] = [
      ...lines(data.slotsBusy, ' busy'),
      ...Object.entries(data.slotsTotal).map(([k, values], i) => ({
        label: `${k} live`,
        values,
        color: color(i + Object.keys(data.slotsBusy).length),
      })),
    ];
    return {
      x,
      runs,
      latency: [
        // Latency exists only where runs ended: points, or a lone bucket would draw nothing.
        { label: 'p50', values: data.p50Ms, color: PALETTE[0]!, points: true },
        { label: 'p99', values: data.p99Ms, color: PALETTE[2]!, points: true },
      ],
      failures: Object.entries(data.failures).map(([k, values], i) => ({
        label: k,
        values,
        color: color(i + 2),
        bars: true,
      })),
      queue: lines(data.queueDepth),
      slots,
      decisions: [{ label: 'pending', values: data.decisionsPending, color: PALETTE[4]! }],
    };
  }, [data]);
  const ended = data ? Object.values(data.totals.runs).reduce((n, v) => n + v, 0) : 0;
  const failures = data ? Object.entries(data.totals.failures) : [];
  return (
    <section>
      <h1>Health</h1>
      <p class="inline">
        <label for="h-window">Window</label>
        <select
          id="h-window"
          value={String(minutes)}
          onChange={(e) => setMinutes(Number(e.currentTarget.value))}
        >
          <option value="15">last 15 minutes</option>
          <option value="60">last hour</option>
        </select>
        <span class="hint">
          {data?.scope === 'cluster' ? 'Whole cluster' : data ? `Tenant ${data.tenant}` : ''}; 10 s buckets,
          refreshed every 10 s. Gaps: no gateway sampled.
        </span>
      </p>
      {error && <Problem>{error}</Problem>}
      {data && charts && (
        <>
          <dl class="tiles" aria-label="Totals in the window">
            <div data-tile="runs">
              <dt>Runs ended</dt>
              <dd>
                {ended}
                <small>
                  {Object.entries(data.totals.runs)
                    .map(([s, n]) => `${n} ${s}`)
                    .join(', ')}
                </small>
              </dd>
            </div>
            <div data-tile="latency">
              <dt>Latency p50 / p99</dt>
              <dd>
                {ms(data.totals.p50Ms)} / {ms(data.totals.p99Ms)}
              </dd>
            </div>
            <div data-tile="failures">
              <dt>Failures</dt>
              <dd>
                {failures.reduce((n, [, v]) => n + v, 0)}
                <small>{failures.map(([k, n]) => `${n} ${k}`).join(', ')}</small>
              </dd>
            </div>
            <div data-tile="decisions">
              <dt>Decisions pending</dt>
              <dd>{last(data.decisionsPending) ?? '—'}</dd>
            </div>
          </dl>
          <div class="charts">
            <Chart title="Runs ended per second" x={charts.x} series={charts.runs} unit="runs/s" />
            <Chart title="Latency, creation to end" x={charts.x} series={charts.latency} unit="ms" />
            <Chart title="Failures by kind" x={charts.x} series={charts.failures} unit="runs" />
            <Chart title="Queue depth" x={charts.x} series={charts.queue} unit="jobs" />
            <Chart title="Runner slots" x={charts.x} series={charts.slots} unit="slots" />
            <Chart title="Decisions pending" x={charts.x} series={charts.decisions} />
          </div>
        </>
      )}
    </section>
  );
}
