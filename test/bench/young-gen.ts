/**
 * `node test/bench/young-gen.ts` (round 37, `semi-space`): what the gateway's and the runner's young
 * generation does per 1,000 trivial runs, counted from V8's own `--trace-gc-nvp` lines (added to
 * the cluster's Node flags through `ISLET_DEV_NODE_FLAGS`, which also carries the size tried, e.g.
 * `ISLET_DEV_NODE_FLAGS=--max-semi-space-size=32`; the last of a flag given twice wins):
 * scavenges, mark-compacts (full and from incremental marking), their summed pauses, bytes
 * promoted by scavenges, the new space's capacity, CPU of each process (`/proc`, hosts apart),
 * first-touch page faults (minflt) and resident memory at the phase's end (VmRSS) and peak (VmHWM),
 * beside the V8 heap's objects and committed memory after the phase's last collection.
 * Two phases on one cluster after `WARM` (default 300) runs at 16 clients: `RUNS` (default 3000)
 * at `CLIENTS` (16), then `SEQ_RUNS` (default 2000) from one client (its p50/p99 printed too, for
 * orientation only: timed claims come from ABBA pairs under the bench lock), after `IDLE_MS` (default
 * 0) of nothing (does V8 shrink the young generation meanwhile?). Counts, no lock needed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { startCluster } from '@islet/devstack';
import { nvpField, takeChildLines } from './child-gc-lines.ts';
import { burst, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 3000);
const SEQ_RUNS = Number(process.env.SEQ_RUNS ?? 2000);
const CLIENTS = Number(process.env.CLIENTS ?? 16);
const WARM = Number(process.env.WARM ?? 300);
const TICK_MS = 10;
/** Idle between the phases (ms): does V8 shrink the young generation while nothing runs? */
const IDLE_MS = Number(process.env.IDLE_MS ?? 0);

process.env.ISLET_DEV_NODE_FLAGS = `${process.env.ISLET_DEV_NODE_FLAGS ?? ''} --trace-gc-nvp`.trim();

interface Gc {
  kind: string;
  pause: number;
  promoted: number;
  survived: number;
  capacity: number;
  /** The heap's objects and committed memory after the collection (bytes). */
  objects: number;
  committed: number;
}
const gcs: Record<string, Gc[]> = { gateway: [], runner: [] };
// The children's lines come to our stderr with `verbose` (`[gateway-0] …`): keep V8's, drop the rest.
takeChildLines((who, line) => {
  if (!line.includes(' gc=')) return;
  const num = (name: string) => nvpField(line, name);
  gcs[who]?.push({
    kind: / gc=(\w+)/.exec(line)?.[1] ?? '?',
    pause: num('pause'),
    promoted: num('promoted'),
    survived: num('new_space_survived'),
    capacity: num('new_space_capacity'),
    objects: num('end_object_size'),
    committed: num('end_memory_size'),
  });
});

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
  verbose: true,
});
const pid = { gateway: cluster.gateways[0]?.pid ?? 0, runner: cluster.runners[0]?.pid ?? 0 };

function stat(p: number) {
  const text = readFileSync(`/proc/${p}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    ppid: Number(f[1]),
    minflt: Number(f[7]),
    own: Number(f[11]) + Number(f[12]),
    reaped: Number(f[13]) + Number(f[14]),
  };
}
function statusKb(p: number, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${p}/status`, 'utf8'));
  return Number(m?.[1] ?? Number.NaN);
}
function snapshot() {
  const g = stat(pid.gateway);
  const r = stat(pid.runner);
  let hosts = r.reaped;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = stat(Number(d));
      if (s.ppid === pid.runner) hosts += s.own + s.reaped;
    } catch {
      // gone meanwhile: its time is in the runner's reaped children's
    }
  }
  return {
    gateway: { cpu: g.own + g.reaped, minflt: g.minflt },
    runner: { cpu: r.own, minflt: r.minflt },
    hosts,
    gcAt: { gateway: gcs.gateway?.length ?? 0, runner: gcs.runner?.length ?? 0 },
  };
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

function report(phase: string, runs: number, a: ReturnType<typeof snapshot>, extra = '') {
  const b = snapshot();
  const per = (x: number) => ((x * 1000) / runs).toFixed(2);
  const rows = (['gateway', 'runner'] as const).map((who) => {
    const list = (gcs[who] ?? []).slice(a.gcAt[who], b.gcAt[who]);
    const of = (k: string) => list.filter((g) => g.kind === k);
    const sc = of('s');
    const major = list.filter((g) => g.kind === 'mc' || g.kind === 'ms');
    const sum = (xs: Gc[], f: (g: Gc) => number) => xs.reduce((t, g) => t + f(g), 0);
    const promotedKb = sum(sc, (g) => g.promoted) / 1024;
    const cap = sc.length
      ? quantile(
          sc.map((g) => g.capacity / 1048576),
          0.5,
        )
      : Number.NaN;
    return (
      `  ${who}: scavenges ${per(sc.length)}/1k runs (p50 pause ${quantile(
        sc.map((g) => g.pause),
        0.5,
      ).toFixed(2)} ms, ` +
      `${per(sum(sc, (g) => g.pause))} ms/1k runs), promoted ${per(promotedKb)} KB/1k runs ` +
      `(${sc.length ? (promotedKb / sc.length).toFixed(0) : '-'} KB a scavenge, survived ${sc.length ? (sum(sc, (g) => g.survived) / 1024 / sc.length).toFixed(0) : '-'} KB), ` +
      `new space p50 ${cap} MiB (first ${list
        .slice(0, 4)
        .map((g) => `${g.kind} ${g.capacity / 1048576}`)
        .join(
          ', ',
        )}); mark-compacts ${per(major.length)}/1k (${per(sum(major, (g) => g.pause))} ms/1k, promoted ${per(sum(major, (g) => g.promoted) / 1024)} KB/1k); ` +
      `CPU ${(((b[who].cpu - a[who].cpu) * TICK_MS) / runs).toFixed(3)} ms/run; ` +
      `minflt ${((b[who].minflt - a[who].minflt) / runs).toFixed(2)}/run; ` +
      `RSS ${(statusKb(pid[who], 'VmRSS') / 1024).toFixed(1)} MB (HWM ${(statusKb(pid[who], 'VmHWM') / 1024).toFixed(1)}; ` +
      `heap after the last collection ${((list.at(-1)?.objects ?? Number.NaN) / 1048576).toFixed(1)} MB of objects, ` +
      `${((list.at(-1)?.committed ?? Number.NaN) / 1048576).toFixed(1)} MB committed; ` +
      `after the last mark-compact ${((major.at(-1)?.objects ?? Number.NaN) / 1048576).toFixed(1)} MB)`
    );
  });
  console.log(
    `${phase}: ${runs} runs${extra}; hosts CPU ${(((b.hosts - a.hosts) * TICK_MS) / runs).toFixed(3)} ms/run\n${rows.join('\n')}`,
  );
}

try {
  const once = trivialRun(cluster, 'young-gen');
  console.log(
    `flags: ${process.env.ISLET_DEV_NODE_FLAGS}; ${new Date().toISOString()} load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
  );
  await burst(once, WARM, CLIENTS);
  let a = snapshot();
  let t = performance.now();
  await burst(once, RUNS, CLIENTS);
  report(`${CLIENTS} clients`, RUNS, a, `, ${(RUNS / ((performance.now() - t) / 1000)).toFixed(1)} runs/s`);
  if (IDLE_MS > 0) await new Promise((r) => setTimeout(r, IDLE_MS));
  a = snapshot();
  const lat: number[] = [];
  for (let i = 0; i < SEQ_RUNS; i++) {
    t = performance.now();
    await once();
    lat.push(performance.now() - t);
  }
  report(
    '1 client',
    SEQ_RUNS,
    a,
    `, p50 ${quantile(lat, 0.5).toFixed(2)} / p99 ${quantile(lat, 0.99).toFixed(2)} ms`,
  );
} finally {
  await cluster.stop();
}
