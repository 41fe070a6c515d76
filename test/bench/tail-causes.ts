/**
 * `sequential.ts TAIL=1`'s read of the slow runs (above p90): which stage carries their excess
 * over the median run, and what overlapped them — V8 collections in the bench, gateway and
 * runner (`gc-log.ts`, when `GC_LOG_DIR` is set) — each count set against the same count over
 * the runs at or below p50, so a cause that is merely common does not read as a cause.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { pct } from './baselines.ts';
import { processTree } from './capacity-cpu.ts';
import { processKind } from './ping-app.ts';
import { taskIds } from './proc-tasks.ts';
import { STAGES } from './stages.ts';

const STAGE_NAMES = STAGES.map((s) => s.name);

/** Per process kind, every thread's on-CPU and run-queue wait, ns (`/proc/<pid>/task/<tid>/schedstat`). */
export type Sched = Map<string, { cpu: number; wait: number }>;

/** The cluster's processes (this process's children: Redis, gateway, runner, sandbox hosts) by kind. */
export function clusterPids(): Map<number, string> {
  const out = new Map<number, string>();
  for (const pid of processTree(process.pid).slice(1)) {
    try {
      const kind = processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
      if (kind) out.set(pid, kind);
    } catch {
      // gone
    }
  }
  return out;
}

export function schedNow(pids: Map<number, string>): Sched {
  const out: Sched = new Map();
  for (const [pid, kind] of pids) {
    const tids = taskIds(pid);
    const k = out.get(kind) ?? { cpu: 0, wait: 0 };
    for (const tid of tids) {
      try {
        const [cpu, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
        k.cpu += cpu ?? 0;
        k.wait += wait ?? 0;
      } catch {
        // thread gone
      }
    }
    out.set(kind, k);
  }
  return out;
}

export function schedDelta(a: Sched, b: Sched): Sched {
  const out: Sched = new Map();
  for (const [kind, v] of b) {
    const u = a.get(kind) ?? { cpu: 0, wait: 0 };
    out.set(kind, { cpu: v.cpu - u.cpu, wait: v.wait - u.wait });
  }
  return out;
}

/**
 * Redis's fsyncs on the wall clock: `strace --seccomp-bpf` stops Redis at fdatasync/fsync only
 * (tens of µs each, on every run's path under `appendfsync always`). `stop()` returns them.
 */
export function fsyncTrace(
  redisPid: number,
  file: string,
): { stop: () => Promise<{ t: number; ms: number }[]> } {
  const proc: ChildProcess = spawn(
    'strace',
    ['-f', '--seccomp-bpf', '-e', 'trace=fdatasync,fsync', '-ttt', '-T', '-o', file, '-p', String(redisPid)],
    { stdio: 'ignore' },
  );
  return {
    stop: async () => {
      const ended = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGINT');
      await ended;
      const out: { t: number; ms: number }[] = [];
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const m = /^(?:\d+\s+)?(\d+\.\d+) f(?:data)?sync\(.*<(\d+\.\d+)>$/.exec(line);
        if (m) out.push({ t: Number(m[1]) * 1000, ms: Number(m[2]) * 1000 });
      }
      return out;
    },
  };
}

export interface TailRun {
  sent: number;
  received: number;
  ms: number;
  /** `stageRow`'s, ms. */
  stages: number[];
  /** The cluster's scheduling over the run. */
  sched?: Sched;
  /** The runner's sandbox hosts alive at the run's end. */
  hostPids?: number[];
}

interface Gc {
  who: string;
  kind: string;
  t: number;
  ms: number;
}

function gcLog(dir: string): Gc[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith('gc-') && f.endsWith('.jsonl'))
    .flatMap((f) =>
      readFileSync(`${dir}/${f}`, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Gc),
    );
}

const pctOf = (n: number, of: number) => `${n} of ${of} (${((100 * n) / Math.max(1, of)).toFixed(0)}%)`;

/** Lines to print. */
export function tailCauses(
  runs: TailRun[],
  gcDir: string | undefined,
  fsyncs: { t: number; ms: number }[] = [],
): string[] {
  const lat = runs.map((r) => r.ms);
  const p50 = pct(lat, 50);
  const p90 = pct(lat, 90);
  const slow = runs.filter((r) => r.ms > p90);
  const fast = runs.filter((r) => r.ms <= p50);
  const out = [`tail: ${slow.length} runs above p90 (${p90.toFixed(2)} ms), ${fast.length} at or below p50`];
  // Stages that are parts of another (the indented rows) are left out of the dominant-stage count.
  const top = STAGE_NAMES.map((n, i) => (n.startsWith('  ') ? -1 : i)).filter((i) => i >= 0);
  const med = STAGE_NAMES.map((_, i) => pct(runs.map((r) => r.stages[i]!).filter(Number.isFinite), 50));
  for (const [i, name] of STAGE_NAMES.entries()) {
    const col = slow.map((r) => r.stages[i]!).filter(Number.isFinite);
    if (col.length === 0) continue;
    const mean = col.reduce((s, x) => s + x, 0) / col.length;
    out.push(
      `  ${name}: all p50 ${med[i]!.toFixed(2)}, slow p50 ${pct(col, 50).toFixed(2)} / mean ` +
        `${mean.toFixed(2)} / max ${Math.max(...col).toFixed(2)} ms`,
    );
  }
  // Each slow run's stage with the largest excess over that stage's median.
  const dominant = new Map<string, number>();
  for (const r of slow) {
    let best = -1;
    let excess = -Infinity;
    for (const i of top) {
      const x = (r.stages[i] ?? Number.NaN) - med[i]!;
      if (Number.isFinite(x) && x > excess) [best, excess] = [i, x];
    }
    const name = STAGE_NAMES[best]?.trim() ?? 'none';
    dominant.set(name, (dominant.get(name) ?? 0) + 1);
  }
  out.push('  slow runs by the stage with the largest excess over its median:');
  for (const [name, n] of [...dominant].sort((a, b) => b[1] - a[1])) out.push(`    ${n}  ${name}`);
  // What the slow runs' processes waited on a run queue for (the box is shared), and Redis's fsyncs.
  const waitMs = (r: TailRun) => [...(r.sched?.values() ?? [])].reduce((s, v) => s + v.wait, 0) / 1e6;
  const fsyncMs = (r: TailRun) =>
    fsyncs.filter((f) => f.t < r.received && f.t + f.ms > r.sent).reduce((s, f) => s + f.ms, 0);
  const kinds = [...new Set(runs.flatMap((r) => [...(r.sched?.keys() ?? [])]))].sort();
  const meanOf = (rs: TailRun[], f: (r: TailRun) => number) =>
    rs.reduce((s, r) => s + f(r), 0) / Math.max(1, rs.length);
  for (const kind of kinds) {
    const w = (r: TailRun) => (r.sched?.get(kind)?.wait ?? 0) / 1e6;
    const c = (r: TailRun) => (r.sched?.get(kind)?.cpu ?? 0) / 1e6;
    out.push(
      `  ${kind}: run-queue wait a run, slow ${meanOf(slow, w).toFixed(2)} | fast ${meanOf(fast, w).toFixed(2)} ms; ` +
        `on CPU slow ${meanOf(slow, c).toFixed(2)} | fast ${meanOf(fast, c).toFixed(2)} ms`,
    );
  }
  if (fsyncs.length)
    out.push(
      `  redis fsync time inside a run: slow ${meanOf(slow, fsyncMs).toFixed(2)} | fast ${meanOf(fast, fsyncMs).toFixed(2)} ms ` +
        `(${fsyncs.length} fsyncs, p50 ${pct(
          fsyncs.map((f) => f.ms),
          50,
        ).toFixed(2)} / p99 ` +
        `${pct(
          fsyncs.map((f) => f.ms),
          99,
        ).toFixed(2)} / max ${Math.max(...fsyncs.map((f) => f.ms)).toFixed(2)} ms)`,
    );
  // The runner's sandbox hosts replaced during the runs (a new pid), and the runs that waited for a
  // host's start (the engine's host wait, 20 ms and more: a start, not a hand-over).
  const hostWait = STAGE_NAMES.findIndex((n) => n.includes('waiting for a sandbox host'));
  const waitedStart = (r: TailRun) => (r.stages[hostWait] ?? 0) >= 20;
  let newHosts = 0;
  for (const [i, r] of runs.entries()) {
    const before = new Set(runs[i - 1]?.hostPids ?? r.hostPids ?? []);
    newHosts += (r.hostPids ?? []).filter((p) => !before.has(p)).length;
  }
  out.push(
    `  sandbox hosts started during the runs: ${newHosts}; runs that waited 20 ms or more for a host: ` +
      `${runs.filter(waitedStart).length} (${slow.filter(waitedStart).length} of the slow), longest ` +
      `${Math.max(0, ...runs.map((r) => r.stages[hostWait] ?? 0)).toFixed(1)} ms; the 10 slowest runs: ` +
      [...runs]
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 10)
        .map((r) => r.ms.toFixed(0))
        .join(', ') +
      ' ms',
  );
  const gcs = gcDir ? gcLog(gcDir) : [];
  const gcMs = (r: TailRun) =>
    gcs
      .filter((g) => g.who !== 'bench' && g.t < r.received && g.t + g.ms > r.sent)
      .reduce((s, g) => s + g.ms, 0);
  // Each slow run's excess over p50 put down to what explains at least half of it, first match:
  // a host start waited for, run-queue waits, then Redis fsyncs beyond their median share, then a collection.
  const fsyncFast = meanOf(fast, fsyncMs);
  const cause = new Map<string, number>();
  for (const r of slow) {
    const excess = r.ms - p50;
    const c = waitedStart(r)
      ? "waited 20 ms or more for a sandbox host's start (a host replaced)"
      : waitMs(r) >= excess / 2
        ? 'waited on a run queue (CPU taken by others) for half its excess or more'
        : fsyncMs(r) - fsyncFast >= excess / 2
          ? 'a Redis fsync longer than usual for half its excess or more'
          : gcMs(r) >= excess / 2
            ? 'a gateway/runner V8 collection for half its excess or more'
            : waitMs(r) + Math.max(0, fsyncMs(r) - fsyncFast) + gcMs(r) >= excess / 2
              ? 'these together for half its excess or more'
              : 'none of these';
    cause.set(c, (cause.get(c) ?? 0) + 1);
  }
  out.push(`  slow runs by cause (excess over p50 ${p50.toFixed(2)} ms):`);
  for (const [c, n] of [...cause].sort((a, b) => b[1] - a[1])) out.push(`    ${n}  ${c}`);
  if (!gcDir) return out;
  const overlaps = (r: TailRun, g: Gc) => g.t < r.received && g.t + g.ms > r.sent;
  const classes = [...new Set(gcs.map((g) => `${g.who} ${g.kind}`))].sort();
  out.push(`  V8 collections overlapping a run (${gcs.length} logged): slow runs | runs at or below p50`);
  for (const c of classes) {
    const of = gcs.filter((g) => `${g.who} ${g.kind}` === c);
    const hit = (rs: TailRun[]) => rs.filter((r) => of.some((g) => overlaps(r, g))).length;
    const inSlow = of.filter((g) => slow.some((r) => overlaps(r, g)));
    const meanMs = inSlow.length ? inSlow.reduce((s, g) => s + g.ms, 0) / inSlow.length : 0;
    out.push(
      `    ${c}: ${pctOf(hit(slow), slow.length)} | ${pctOf(hit(fast), fast.length)}` +
        (inSlow.length ? `; in slow runs ${meanMs.toFixed(2)} ms each` : ''),
    );
  }
  const anyGc = (r: TailRun) => gcs.some((g) => g.who !== 'bench' && overlaps(r, g));
  out.push(
    `    any gateway/runner collection: ${pctOf(slow.filter(anyGc).length, slow.length)} | ` +
      `${pctOf(fast.filter(anyGc).length, fast.length)}`,
  );
  return out;
}
