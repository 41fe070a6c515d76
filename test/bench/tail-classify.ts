/**
 * `tail-stages.ts`'s read of its runs (round 36, `tail`); also `node test/bench/tail-classify.ts
 * <dump.json>` on a dump it wrote. Prints each stage's p50 / p99 / p99.9, then for the slowest 1 %
 * and 2 % of the runs: the stage that holds each one's excess over the median run (its largest
 * excess over that stage's own median), and what explains the most of that excess, each candidate
 * counted in ms against the same figure of the median run:
 * - a sandbox host started within `HOST_START_WINDOW_MS` before the run or during it (a host
 *   replaced: its node start and harness warm-up take CPU from the run's processes);
 * - a V8 collection of the gateway, runner or bench overlapping the run (its overlap);
 * - a long timer's callback (periodic work) of the gateway or runner overlapping it (its length);
 * - Redis's fsyncs inside the run beyond the median run's;
 * - the main threads' run-queue waits (bench, gateway, runner, Redis, hosts) beyond the median run's
 *   (a wake-up waiting for a CPU);
 * - a process's main thread on a CPU beyond its median (its own extra work: the host's isolate made,
 *   JIT, a collection's main-thread part in the host, which no log reaches).
 * A slow run goes to the largest; "none" when none explains a quarter of its excess.
 */
import { readFileSync } from 'node:fs';
import { pct } from './baselines.ts';
import { STAGES } from './stages.ts';

export interface TailDump {
  runs: {
    sent: number;
    received: number;
    stages: number[];
    /** Main thread [on-CPU ns, run-queue wait ns] over the run, by process kind. */
    sched: Record<string, [number, number]>;
    hosts: number[];
    /** `SCHED=1`: ms on a CPU during the run by owner (`cpuByOwner`). */
    cpu?: Record<string, number>;
    /** The run's end folded the tenant's pending index list (round 38; absent in older dumps). */
    folded?: boolean;
  }[];
  fsyncs: { t: number; ms: number }[];
  events: { who: string; kind: string; label: string; t: number; ms: number }[];
  hostStarts: { pid: number; t: number }[];
}

/**
 * A host's start (node without its snapshot, host.ts, the harness's code cache, the first isolate):
 * ~80–90 ms of CPU, ready 150–290 ms after its spawn on this box (round 36); a run this long after
 * a spawn or less counts as beside one.
 */
const HOST_START_WINDOW_MS = 300;
/** A run counts as quiet when other processes held a CPU this long or less during it. */
const QUIET_OTHER_MS = 0.1;
const GC_KINDS = new Set(['scavenge', 'mark-compact', 'incremental', 'weakcb', 'gc-other']);

const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '—');

/**
 * `perf script -F pid,cpu,time,trace` of `sched:sched_switch` on every CPU: each run's CPU time by
 * owner — `<kind>:<thread name>` for the cluster's processes (`kindOf`: tgid → bench, gateway,
 * runner, redis, host), `perf` (the tracers), `idle`, or `other:<name>` (the box's: other
 * processes, kernel threads). A switch's sample is the task leaving the CPU, so each on-CPU interval
 * is known by its tgid when it ends. `monoOffsetMs`: the stamps' clock minus perf's (monotonic).
 */
export function cpuByOwner(
  text: string,
  monoOffsetMs: number,
  kindOf: Map<number, string>,
  runs: { sent: number; received: number }[],
  /** Hosts' spawns (stamps' clock): a host's first `HOST_START_WINDOW_MS` count as `host starting`. */
  hostSpawns: Map<number, number> = new Map(),
): Record<string, number>[] {
  const intervals: { t0: number; t1: number; owner: string }[] = [];
  const since = new Map<number, number>();
  const re = /^\s*(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+prev_comm=(.*?) prev_pid=\d+/;
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    const cpu = Number(m[2]);
    const t = Number(m[3]) * 1000 + monoOffsetMs;
    const comm = m[4]!.replace(/[/:]?\d+$/, '');
    const t0 = since.get(cpu);
    since.set(cpu, t);
    if (t0 === undefined) continue;
    const kind = kindOf.get(pid);
    const spawned = hostSpawns.get(pid);
    const owner =
      pid === 0
        ? 'idle'
        : spawned !== undefined && t0 < spawned + HOST_START_WINDOW_MS
          ? 'host starting (a replacement)'
          : kind
            ? `${kind}:${comm}`
            : comm.startsWith('perf')
              ? 'perf'
              : `other:${comm}`;
    intervals.push({ t0, t1: t, owner });
  }
  intervals.sort((a, b) => a.t0 - b.t0);
  const out: Record<string, number>[] = [];
  let j = 0;
  for (const r of runs) {
    const o: Record<string, number> = {};
    // An interval is a few ms at most where anything else is runnable; 50 ms back covers it.
    while (j < intervals.length && intervals[j]!.t0 < r.sent - 50) j++;
    for (let k = j; k < intervals.length && intervals[k]!.t0 < r.received; k++) {
      const x = intervals[k]!;
      const ms = Math.min(r.received, x.t1) - Math.max(r.sent, x.t0);
      if (ms > 0) o[x.owner] = (o[x.owner] ?? 0) + ms;
    }
    out.push(o);
  }
  return out;
}

export function tailReport(d: TailDump): string[] {
  const runs = d.runs;
  const n = runs.length;
  const lat = runs.map((r) => r.received - r.sent);
  const p50 = pct(lat, 50);
  const stageTable = (subset: TailDump['runs']) => {
    const l = subset.map((r) => r.received - r.sent);
    const rows = [
      `${subset.length} runs: p50 ${f(pct(l, 50))} / p90 ${f(pct(l, 90))} / p99 ${f(pct(l, 99))} / ` +
        `p99.9 ${f(pct(l, 99.9))} / max ${f(Math.max(...l))} ms`,
      `${'stage'.padEnd(100)}${'p50'.padStart(8)}${'p99'.padStart(8)}${'p99.9'.padStart(8)}${'max'.padStart(8)}`,
    ];
    for (const [i, s] of STAGES.entries()) {
      if (s.wholeMs) continue;
      const c = subset.map((r) => r.stages[i]!).filter(Number.isFinite);
      if (c.length === 0) continue;
      rows.push(
        `${s.name.slice(0, 98).padEnd(100)}${f(pct(c, 50)).padStart(8)}${f(pct(c, 99)).padStart(8)}` +
          `${f(pct(c, 99.9)).padStart(8)}${f(Math.max(...c)).padStart(8)}`,
      );
    }
    rows.push(
      `${'send → response received'.padEnd(100)}${f(pct(l, 50)).padStart(8)}${f(pct(l, 99)).padStart(8)}` +
        `${f(pct(l, 99.9)).padStart(8)}${f(Math.max(...l)).padStart(8)}`,
    );
    return rows;
  };
  const out: string[] = stageTable(runs);
  const col = (i: number) => runs.map((r) => r.stages[i]!).filter(Number.isFinite);
  const top = STAGES.map((s, i) => (s.sub ? -1 : i)).filter((i) => i >= 0);
  const med = STAGES.map((_, i) => pct(col(i), 50));
  const kinds = [...new Set(runs.flatMap((r) => Object.keys(r.sched)))].sort();
  const medWait = pct(
    runs.map((r) => kinds.reduce((s, k) => s + (r.sched[k]?.[1] ?? 0), 0) / 1e6),
    50,
  );
  const medCpu = Object.fromEntries(
    kinds.map((k) => [
      k,
      pct(
        runs.map((r) => (r.sched[k]?.[0] ?? 0) / 1e6),
        50,
      ),
    ]),
  );
  // Runs and fsyncs are in time order: one sweep.
  const fsyncs = [...d.fsyncs].sort((a, b) => a.t - b.t);
  const fsyncMs = new Map<TailDump['runs'][number], number>();
  let j = 0;
  for (const r of runs) {
    while (j < fsyncs.length && fsyncs[j]!.t + fsyncs[j]!.ms <= r.sent) j++;
    let s = 0;
    for (let k = j; k < fsyncs.length && fsyncs[k]!.t < r.received; k++) s += fsyncs[k]!.ms;
    fsyncMs.set(r, s);
  }
  const fsyncIn = (r: TailDump['runs'][number]) => fsyncMs.get(r) ?? 0;
  const medFsync = pct(runs.map(fsyncIn), 50);
  const overlap = (r: TailDump['runs'][number], e: { t: number; ms: number }) =>
    Math.max(0, Math.min(r.received, e.t + e.ms) - Math.max(r.sent, e.t));
  const hits = (r: TailDump['runs'][number]) =>
    d.events.filter((e) => e.who !== 'other' && e.t <= r.received && e.t + e.ms >= r.sent);
  const started = (r: TailDump['runs'][number]) =>
    d.hostStarts.some((h) => h.t + HOST_START_WINDOW_MS >= r.sent && h.t - 20 <= r.received);

  const owners = [...new Set(runs.flatMap((r) => Object.keys(r.cpu ?? {})))];
  const medOwner = new Map(
    owners.map((k) => [
      k,
      pct(
        runs.map((r) => r.cpu?.[k] ?? 0),
        50,
      ),
    ]),
  );
  const otherOf = (r: TailDump['runs'][number]) =>
    Object.entries(r.cpu ?? {})
      .filter(([k]) => k.startsWith('other:'))
      .reduce((s, [, v]) => s + v, 0);
  const medOther = pct(runs.map(otherOf), 50);
  const explain = (r: TailDump['runs'][number]) => {
    const c = new Map<string, number>();
    const add = (k: string, ms: number) => c.set(k, (c.get(k) ?? 0) + ms);
    const excess = r.received - r.sent - p50;
    // With every CPU's switches, the starting host's own CPU is its share (below); else a flag.
    if (!r.cpu && started(r))
      add(`a sandbox host started (replaced) within ${HOST_START_WINDOW_MS} ms before`, excess);
    for (const e of hits(r)) {
      const gc = GC_KINDS.has(e.kind);
      add(gc ? `${e.who} ${e.kind}` : `${e.who} timer ${e.label.slice(0, 60)}`, gc ? overlap(r, e) : e.ms);
    }
    add('Redis fsyncs beyond the median run', fsyncIn(r) - medFsync);
    const wait = kinds.reduce((s, k) => s + (r.sched[k]?.[1] ?? 0), 0) / 1e6;
    add('run-queue waits (main threads) beyond the median run', wait - medWait);
    if (r.cpu) {
      const other = Object.entries(r.cpu)
        .filter(([k]) => k.startsWith('other:'))
        .reduce((s, [, v]) => s + v, 0);
      add("other processes on the CPUs (the box's) beyond the median run", other - medOther);
      for (const [k, v] of Object.entries(r.cpu))
        if (!k.startsWith('other:') && k !== 'idle')
          add(`${k} on a CPU beyond its median`, v - (medOwner.get(k) ?? 0));
    } else
      for (const k of kinds)
        add(`${k} main thread on CPU beyond its median`, (r.sched[k]?.[0] ?? 0) / 1e6 - medCpu[k]!);
    return { excess, c };
  };

  const explained = new Map(runs.map((r) => [r, explain(r)]));
  const slowSections = (subset: TailDump['runs']) => {
    if (subset.length === 0) return; // no quiet run on a loaded box
    const byLat = subset.map((r) => ({ r, ms: r.received - r.sent })).sort((a, b) => b.ms - a.ms);
    for (const share of [1, 2, 5]) {
      const slow = byLat.slice(0, Math.max(1, Math.round((subset.length * share) / 100)));
      out.push(
        `slowest ${share} % (${slow.length} runs, ${f(slow.at(-1)!.ms)} ms and more; excess over all runs' p50 ` +
          `${f(p50)}: mean ${f(slow.reduce((s, x) => s + x.ms - p50, 0) / slow.length)} ms):`,
      );
      const dom = new Map<string, number>();
      for (const r of slow.map((x) => x.r)) {
        let best = 'none';
        let most = Number.NEGATIVE_INFINITY;
        for (const i of top) {
          const x = r.stages[i]! - med[i]!;
          if (Number.isFinite(x) && x > most) [best, most] = [STAGES[i]!.name.replace(/ \(.*$/, ''), x];
        }
        dom.set(best, (dom.get(best) ?? 0) + 1);
      }
      out.push('  by the stage holding the most excess:');
      for (const [k, v] of [...dom].sort((a, b) => b[1] - a[1]))
        out.push(`    ${String(v).padStart(4)}  (${f((1000 * v) / subset.length)} per 1000 runs)  ${k}`);
      const cause = new Map<string, number>();
      const seen = new Map<string, number>();
      for (const r of slow.map((x) => x.r)) {
        const { excess, c } = explained.get(r)!;
        let best = 'none of these (explains < 1/4 of the excess)';
        let most = excess / 4;
        for (const [k, v] of c) {
          if (v > most) [best, most] = [k, v];
          if (v > 0.1 && !k.includes('beyond')) seen.set(k, (seen.get(k) ?? 0) + 1);
        }
        cause.set(best, (cause.get(best) ?? 0) + 1);
      }
      out.push('  by what explains the most of the excess:');
      for (const [k, v] of [...cause].sort((a, b) => b[1] - a[1]))
        out.push(`    ${String(v).padStart(4)}  (${f((1000 * v) / subset.length)} per 1000 runs)  ${k}`);
      if (seen.size) {
        out.push('  present in the slow runs (> 0.1 ms), against all runs:');
        for (const [k, v] of [...seen].sort((a, b) => b[1] - a[1])) {
          const all = subset.filter((r) => (explained.get(r)!.c.get(k) ?? 0) > 0.1).length;
          out.push(`    ${String(v).padStart(4)} of ${slow.length} | ${all} of ${subset.length}  ${k}`);
        }
      }
    }
    // The slowest runs one by one.
    out.push(
      'the 12 slowest runs: ms, the stage holding the most excess, the three largest explanations (ms):',
    );
    for (const { r, ms } of byLat.slice(0, 12)) {
      const { c } = explained.get(r)!;
      let best = '';
      let most = Number.NEGATIVE_INFINITY;
      for (const i of top) {
        const x = r.stages[i]! - med[i]!;
        if (Number.isFinite(x) && x > most) [best, most] = [STAGES[i]!.name.replace(/ \(.*$/, ''), x];
      }
      const why = [...c]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([k, v]) => `${k.slice(0, 60)} ${f(v)}`)
        .join('; ');
      const others = Object.entries(r.cpu ?? {})
        .filter(([k]) => k.startsWith('other:'))
        .sort((a, b) => b[1] - a[1])
        .slice(0, 2)
        .map(([k, v]) => `${k} ${f(v)}`)
        .join(', ');
      out.push(`  ${f(ms).padStart(7)}  ${best} +${f(most)}  | ${why}${others ? ` | ${others}` : ''}`);
    }
  };
  slowSections(runs);
  if (runs.some((r) => r.cpu)) {
    // The same slow runs by rules, first match (each a mechanism, the CPU by owner in the run).
    const cpuOf = (r: TailDump['runs'][number], re: RegExp) =>
      Object.entries(r.cpu ?? {}).reduce((sum, [k, v]) => sum + (re.test(k) ? v : 0), 0);
    const gcIn = (r: TailDump['runs'][number], who: RegExp, kind: RegExp) =>
      hits(r)
        .filter((e) => who.test(e.who) && kind.test(e.kind))
        .reduce((sum, e) => sum + overlap(r, e), 0);
    const rules: [string, (r: TailDump['runs'][number]) => boolean][] = [
      ["other processes on a CPU ≥ 0.5 ms (the box's)", (r) => otherOf(r) >= 0.5],
      ['a replacement host starting, ≥ 2 ms of its CPU in the run', (r) => cpuOf(r, /^host starting/) >= 2],
      [
        'a gateway/runner major GC (mark-compact, incremental marking; its worker threads)',
        (r) => gcIn(r, /gateway|runner/, /mark|incr/) > 0,
      ],
      [
        'a gateway/runner scavenge (main-thread pause ≥ 1 ms)',
        (r) => gcIn(r, /gateway|runner/, /scavenge/) >= 1,
      ],
      [
        'gateway/runner V8 worker threads ≥ 3 ms with no GC logged (concurrent compile or sweep)',
        (r) => cpuOf(r, /^(gateway|runner):V8Worker/) >= 3,
      ],
      [
        "the bench client's own GC (≥ 1 ms, or its V8 workers ≥ 2 ms)",
        (r) => gcIn(r, /bench/, /./) >= 1 || cpuOf(r, /^bench:V8Worker/) >= 2,
      ],
      [
        'the serving host: its V8 workers ≥ 2 ms or main thread ≥ 4 ms (its own GC, an isolate made)',
        (r) => cpuOf(r, /^host:V8Worker/) >= 2 || cpuOf(r, /^host:MainThread/) >= 4,
      ],
      [
        'a Redis fsync of 2 ms or more',
        (r) => fsyncs.some((x) => x.ms >= 2 && x.t < r.received && x.t + x.ms > r.sent),
      ],
      ['Redis on a CPU ≥ 3 ms', (r) => cpuOf(r, /^redis:/) >= 3],
      ["the run's end folded the pending index (index-fold.lua)", (r) => r.folded === true],
      [
        'a gateway/runner long timer callback overlapping it',
        (r) => hits(r).some((e) => e.who !== 'bench' && !GC_KINDS.has(e.kind)),
      ],
    ];
    const byRule = (subset: TailDump['runs'], label: string) => {
      const byLat = [...subset].sort((a, b) => b.received - b.sent - (a.received - a.sent));
      for (const share of [1, 2, 5]) {
        const slow = byLat.slice(0, Math.max(1, Math.round((subset.length * share) / 100)));
        const count = new Map<string, number>();
        for (const r of slow) {
          const k = rules.find(([, test]) => test(r))?.[0] ?? 'none of these (the cluster crowding 2 CPUs)';
          count.set(k, (count.get(k) ?? 0) + 1);
        }
        out.push(`${label}, slowest ${share} % (${slow.length} runs), by the first rule that holds:`);
        for (const [k, v] of [...count].sort((a, b) => b[1] - a[1]))
          out.push(`    ${String(v).padStart(4)}  (${f((1000 * v) / subset.length)} per 1000 runs)  ${k}`);
      }
    };
    byRule(runs, 'all runs');
    byRule(
      runs.filter((r) => otherOf(r) <= QUIET_OTHER_MS),
      `runs with other processes on a CPU ≤ ${QUIET_OTHER_MS} ms`,
    );
  }
  // Where other processes took no CPU (the box quiet for the run), the cluster's own tail.
  if (runs.some((r) => r.cpu)) {
    const quiet = runs.filter((r) => otherOf(r) <= QUIET_OTHER_MS);
    out.push(
      '',
      `runs in which other processes (not the cluster's, not the tracers) were on a CPU for ${QUIET_OTHER_MS} ms or less: ` +
        `${quiet.length} of ${n}`,
      ...stageTable(quiet),
    );
    slowSections(quiet);
  }
  // Each candidate: the runs it touched per 1000, and their latency against all runs'.
  const touched: [string, (r: TailDump['runs'][number]) => boolean][] = [
    [
      'a gateway scavenge overlapping it',
      (r) => hits(r).some((e) => e.who === 'gateway' && e.kind === 'scavenge'),
    ],
    [
      'a runner scavenge overlapping it',
      (r) => hits(r).some((e) => e.who === 'runner' && e.kind === 'scavenge'),
    ],
    [
      'a gateway/runner mark-compact or incremental step overlapping it',
      (r) => hits(r).some((e) => (e.who === 'gateway' || e.who === 'runner') && /mark|incr/.test(e.kind)),
    ],
    [
      "the bench's own collection overlapping it",
      (r) => hits(r).some((e) => e.who === 'bench' && GC_KINDS.has(e.kind)),
    ],
    [
      'a gateway/runner long timer callback overlapping it',
      (r) => hits(r).some((e) => e.who !== 'bench' && !GC_KINDS.has(e.kind)),
    ],
    [
      'a starting host on a CPU ≥ 0.5 ms in it',
      (r) => (r.cpu?.['host starting (a replacement)'] ?? 0) >= 0.5,
    ],
    [
      'a Redis fsync of 2 ms or more in it',
      (r) => fsyncs.some((x) => x.ms >= 2 && x.t < r.received && x.t + x.ms > r.sent),
    ],
    ["other processes (the box's) on a CPU ≥ 0.5 ms in it", (r) => otherOf(r) >= 0.5],
    ["the run's end folded the pending index (index-fold.lua)", (r) => r.folded === true],
  ];
  out.push(
    'runs touched, per 1000 runs, and their latency p50 / p99 (all runs: ' +
      `${f(p50)} / ${f(pct(lat, 99))} ms):`,
  );
  for (const [k, test] of touched) {
    if (k.includes('CPU') && !runs.some((r) => r.cpu)) continue;
    const t = runs.filter(test).map((r) => r.received - r.sent);
    out.push(
      `  ${f((1000 * t.length) / n).padStart(7)}  ${t.length ? `${f(pct(t, 50))} / ${f(pct(t, 99))}` : '—'}  ${k}`,
    );
  }
  const folded = runs.filter((r) => r.folded === true);
  if (folded.length)
    out.push('runs whose end folded the pending index (their stages):', ...stageTable(folded));
  // What the logs hold over the window, per 1000 runs.
  const per = (x: number) => f((1000 * x) / n);
  const groups = new Map<string, { count: number; ms: number[] }>();
  for (const e of d.events) {
    const k = GC_KINDS.has(e.kind) ? `${e.who} ${e.kind}` : `${e.who} ${e.kind} ${e.label.slice(0, 60)}`;
    const g = groups.get(k) ?? { count: 0, ms: [] };
    g.count++;
    g.ms.push(e.ms);
    groups.set(k, g);
  }
  out.push('logged over the runs (per 1000 runs; length p50 / max ms):');
  for (const [k, g] of [...groups].sort((a, b) => b[1].count - a[1].count))
    out.push(`  ${per(g.count).padStart(8)}  ${f(pct(g.ms, 50))} / ${f(Math.max(...g.ms))}  ${k}`);
  if (d.fsyncs.length) {
    const ms = d.fsyncs.map((x) => x.ms);
    out.push(
      `Redis fsyncs: ${f(d.fsyncs.length / n)} a run; p50 ${f(pct(ms, 50))} / p99 ${f(pct(ms, 99))} / ` +
        `p99.9 ${f(pct(ms, 99.9))} / max ${f(Math.max(...ms))} ms; ≥ 2 ms: ${per(ms.filter((x) => x >= 2).length)} per 1000 runs`,
    );
  }
  const from = runs[0]?.sent ?? 0;
  const to = runs.at(-1)?.received ?? 0;
  out.push(
    `sandbox hosts started over the runs: ${d.hostStarts.filter((h) => h.t >= from && h.t <= to).length} ` +
      `(runs with one started within ${HOST_START_WINDOW_MS} ms before or during: ${runs.filter(started).length})`,
  );
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node test/bench/tail-classify.ts <dump.json>');
  for (const line of tailReport(JSON.parse(readFileSync(file, 'utf8')) as TailDump)) console.log(line);
}
