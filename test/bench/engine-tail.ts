/**
 * `node test/bench/engine-tail.ts` (round 36, `tail`): the engine alone's slow runs (the cluster
 * bench's "engine alone, sequential" row reads p99 ~3.6× its p50): one caller's trivial runs back
 * to back, as `engineBaseline` makes them (default engine options), `RUNS` (default 5000) after 50
 * warm-up runs, each run's latency on the stamps' clock; the sandbox hosts' starts and retirements
 * (`onProcessEvent`); V8 collections of this process and of every host (`tail-log.ts`, given to the
 * hosts through `hostEnv`'s NODE_OPTIONS). Prints p50 / p99 / p99.9 and, for the slowest 1 % and
 * 2 %, the first of: a host started within `START_WINDOW_MS` (300) before the run or during it; a
 * host's collection overlapping it; this process's; none. Counts need no lock.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createEngine } from '@islet/engine';
import { PROGRAM, pct } from './baselines.ts';
import { benchNow } from './bench-clock.ts';

const RUNS = Number(process.env.RUNS ?? 5000);
const START_WINDOW_MS = 300;
const dir = `/tmp/engine-tail-${process.pid}`;
mkdirSync(dir, { recursive: true });
process.env.TAIL_LOG_DIR = dir;
await import('./tail-log.ts');
const preload = `--import ${new URL('./tail-log.ts', import.meta.url).pathname}`;
const starts: number[] = [];
const retired: Record<string, number> = {};
const engine = createEngine({
  hostEnv: { NODE_OPTIONS: preload, TAIL_LOG_DIR: dir },
  onProcessEvent: (e) => {
    if (e.type === 'started') starts.push(benchNow());
    if (e.type === 'retired') retired[e.reason] = (retired[e.reason] ?? 0) + 1;
  },
});
try {
  for (let i = 0; i < 50; i++) await engine.execute(PROGRAM);
  const runs: { sent: number; received: number }[] = [];
  for (let i = 0; i < RUNS; i++) {
    const sent = benchNow();
    await engine.execute(PROGRAM);
    runs.push({ sent, received: benchNow() });
  }
  await new Promise((r) => setTimeout(r, 2200)); // the logs' 2 s flush
  const events = readdirSync(dir).flatMap((f) =>
    readFileSync(`${dir}/${f}`, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { who: string; kind: string; t: number; ms: number }),
  );
  const gcs = events.filter((e) => /scavenge|mark|incr|weak/.test(e.kind));
  const lat = runs.map((r) => r.received - r.sent);
  const from = runs[0]!.sent;
  console.log(
    `${RUNS} runs back to back: p50 ${pct(lat, 50).toFixed(2)} / p99 ${pct(lat, 99).toFixed(2)} / ` +
      `p99.9 ${pct(lat, 99.9).toFixed(2)} / max ${Math.max(...lat).toFixed(2)} ms; hosts started ` +
      `${starts.filter((t) => t >= from).length}, retired ${JSON.stringify(retired)}`,
  );
  const overlaps = (r: (typeof runs)[number], who: string) =>
    gcs.some((g) => g.who === who && g.t < r.received && g.t + g.ms > r.sent);
  const rules: [string, (r: (typeof runs)[number]) => boolean][] = [
    [
      `a host started within ${START_WINDOW_MS} ms before or during it`,
      (r) => starts.some((t) => t + START_WINDOW_MS >= r.sent && t <= r.received),
    ],
    ["a host's own collection overlapping it", (r) => overlaps(r, 'host')],
    ["this process's collection overlapping it", (r) => overlaps(r, 'bench')],
  ];
  const sorted = [...runs].sort((a, b) => b.received - b.sent - (a.received - a.sent));
  for (const share of [1, 2]) {
    const slow = sorted.slice(0, Math.round((RUNS * share) / 100));
    const count = new Map<string, number>();
    for (const r of slow) {
      const k = rules.find(([, test]) => test(r))?.[0] ?? 'none of these';
      count.set(k, (count.get(k) ?? 0) + 1);
    }
    console.log(`slowest ${share} % (${slow.length} runs), by the first that holds:`);
    for (const [k, v] of [...count].sort((a, b) => b[1] - a[1]))
      console.log(`  ${String(v).padStart(4)}  (${((1000 * v) / RUNS).toFixed(2)} per 1000 runs)  ${k}`);
  }
  for (const [rule, test] of rules) {
    const t = runs.filter(test).map((r) => r.received - r.sent);
    console.log(
      `  all runs: ${((1000 * t.length) / RUNS).toFixed(1)} per 1000 with ${rule}` +
        (t.length ? `, their p50 ${pct(t, 50).toFixed(2)} ms` : ''),
    );
  }
  const byKind = new Map<string, number[]>();
  for (const g of gcs.filter((g) => g.t >= from))
    byKind.set(`${g.who} ${g.kind}`, [...(byKind.get(`${g.who} ${g.kind}`) ?? []), g.ms]);
  for (const [k, ms] of byKind)
    console.log(
      `  ${k}: ${((1000 * ms.length) / RUNS).toFixed(1)} per 1000 runs, p50 ${pct(ms, 50).toFixed(2)} / max ${Math.max(...ms).toFixed(2)} ms`,
    );
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}
