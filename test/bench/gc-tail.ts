/**
 * `node test/bench/gc-tail.ts` (round 47, `tail-gc`): how much of a sequential client's tail is the
 * gateway's and the runner's V8 collections, side by side for Node flag sets given the two
 * processes, sides interleaved. Each side is one `tail-stages.ts` (a fresh one-client cluster, the
 * cluster bench's settings, `WARM` runs then `RUNS` sequential runs, every V8 collection of the
 * gateway, runner and bench logged on the stage stamps' clock by `tail-log.ts`, with the young
 * generation's size at each scavenge), with `ISLET_DEV_NODE_FLAGS` set to the side's flags (added
 * after `SERVICE_NODE_FLAGS` on the command line: the last of a flag given twice wins).
 *
 *   SIDES='|--max-semi-space-size=4|--max-semi-space-size=4|' RUNS=3000 node test/bench/gc-tail.ts
 *   node test/bench/gc-tail.ts <dump.json>...      (reads `tail-stages.ts` dumps again)
 *
 * `SIDES`: flag sets separated by `|` (an empty one is the defaults). Per side: latency p50 / p99 /
 * p99.9; per process the scavenges a run, their pause summed a run (the `gc` entry's duration: wall
 * time, at load partly waiting for a CPU) and each one's p50 / max, the young generation's size read
 * back; the share of the slowest 1 % and 2 % of runs that a gateway or runner collection overlapped,
 * and the p99 of the runs no such collection overlapped (what the tail would be without them).
 * Counts need no lock; the latencies mean something only under the bench lock.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { pct } from './baselines.ts';
import type { TailDump } from './tail-classify.ts';

type Event = TailDump['events'][number] & { newSpace?: number };

const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');

export function gcTailSummary(d: TailDump): string[] {
  const runs = d.runs;
  const n = runs.length;
  const lat = runs.map((r) => r.received - r.sent);
  const events = d.events as Event[];
  const gcOf = (who: string) =>
    events.filter((e) => e.who === who && e.kind !== 'timeout' && e.kind !== 'interval');
  const out = [
    `${n} runs: p50 ${f(pct(lat, 50))} / p99 ${f(pct(lat, 99))} / p99.9 ${f(pct(lat, 99.9))} / max ${f(Math.max(...lat))} ms`,
  ];
  for (const who of ['gateway', 'runner', 'bench']) {
    const gc = gcOf(who);
    const sc = gc.filter((e) => e.kind === 'scavenge');
    const major = gc.filter((e) => e.kind === 'mark-compact' || e.kind === 'incremental');
    const ms = sc.map((e) => e.ms);
    const sizes = [...new Set(sc.map((e) => e.newSpace).filter((x) => x !== undefined))].map(
      (b) => `${(b! / 1048576).toFixed(1)}`,
    );
    out.push(
      `  ${who.padEnd(8)} scavenges a run ${f(sc.length / n, 4)} (1 every ${f(n / Math.max(1, sc.length), 1)} runs), ` +
        `pause a run ${f(ms.reduce((s, x) => s + x, 0) / n, 3)} ms, each p50 ${f(pct(ms, 50))} / max ${f(Math.max(...ms, 0))} ms; ` +
        `major/incremental ${major.length}; new_space MiB ${sizes.join(',') || '—'}`,
    );
  }
  const touched = (r: TailDump['runs'][number]) =>
    events.some(
      (e) =>
        (e.who === 'gateway' || e.who === 'runner') &&
        e.kind !== 'timeout' &&
        e.kind !== 'interval' &&
        e.t <= r.received &&
        e.t + e.ms >= r.sent,
    );
  const byLat = [...runs].sort((a, b) => b.received - b.sent - (a.received - a.sent));
  for (const share of [1, 2]) {
    const k = Math.max(1, Math.round((n * share) / 100));
    const slow = byLat.slice(0, k);
    out.push(
      `  slowest ${share} % (${k}): ${slow.filter(touched).length} overlapped by a gateway/runner collection`,
    );
  }
  const t = runs.filter(touched);
  const clean = runs.filter((r) => !touched(r)).map((r) => r.received - r.sent);
  out.push(
    `  runs a gateway/runner collection overlapped: ${t.length} (${f((1000 * t.length) / n, 1)} per 1000, ` +
      `their p50 ${f(
        pct(
          t.map((r) => r.received - r.sent),
          50,
        ),
      )} ms); the others' p50 / p99 ${f(pct(clean, 50))} / ${f(pct(clean, 99))} ms`,
  );
  return out;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const files = process.argv.slice(2);
  if (files.length) {
    for (const file of files) {
      console.log(`== ${file}`);
      for (const l of gcTailSummary(JSON.parse(readFileSync(file, 'utf8')) as TailDump)) console.log(l);
    }
  } else {
    const sides = (process.env.SIDES ?? '|--max-semi-space-size=4|--max-semi-space-size=4|').split('|');
    const results: string[][] = [];
    for (const [i, flags] of sides.entries()) {
      const dump = `/tmp/gc-tail-${process.pid}-${i}.json`;
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      const head = `== side ${i + 1} [${flags || 'defaults'}] ${new Date().toISOString().slice(11, 19)} load ${load}`;
      console.log(head);
      execFileSync(process.execPath, [new URL('./tail-stages.ts', import.meta.url).pathname], {
        stdio: ['ignore', process.env.VERBOSE === '1' ? 'inherit' : 'ignore', 'inherit'],
        env: { ...process.env, ISLET_DEV_NODE_FLAGS: flags, DUMP: dump, FSYNC: process.env.FSYNC ?? '0' },
      });
      const lines = gcTailSummary(JSON.parse(readFileSync(dump, 'utf8')) as TailDump);
      if (process.env.KEEP !== '1') rmSync(dump, { force: true });
      else lines.push(`  dump ${dump}`);
      for (const l of lines) console.log(l);
      results.push([head, ...lines]);
    }
  }
}
