/**
 * `node test/bench/gw-memory.ts` (round 38, `gw-memory`): the gateway's (and runner's) memory over
 * a long sustained load — does it settle, where, and with what mark-compact cadence? A devstack
 * cluster (1 gateway, 1 read-only runner, `BENCH_SLOTS` slots, default 4) with `--trace-gc-nvp`
 * added through `ISLET_DEV_NODE_FLAGS` (which also carries any flag tried, e.g.
 * `--max-old-space-size=N`); `TOTAL` (default 60000) trivial runs at `CLIENTS` (16), a line every
 * `STEP` (5000) runs: VmRSS, the V8 heap's objects and committed memory after the last collection,
 * mark-compacts in the step (with the objects they left), bytes the step's scavenges promoted a run,
 * CPU a run (`/proc`); then `IDLE_MS` (default 20000) of nothing and a last line (does V8's memory
 * reducer give it back?). `GC_DUMP=<file>` writes every collection as JSON. Every gateway mark-compact is listed at the end (run index, pause, objects
 * before → after). Counts, no lock needed; the runs/s printed are for orientation only.
 * `SURVIVORS=<from>,<to>` (run counts on `STEP` boundaries) also samples what the gateway's
 * scavenges keep between those runs (`alloc-sampler.ts` with `BENCH_ALLOC_SURVIVORS=1`: objects a
 * scavenge collected dropped) and prints it by site; the window must hold no mark-compact (one
 * collects the young generation too, and its dead young objects would count): the line says.
 *
 * To see what V8 does inside a container's memory limit, run it under `in-memory-limit.sh <bytes>`
 * (a private mount namespace where the own memory cgroup's limit file reads `<bytes>`: Node sizes its
 * heap from that file through libuv, as it does in a pod with `resources.limits.memory`).
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '@islet/devstack';
import { nvpField, takeChildLines } from './child-gc-lines.ts';
import { burst, trivialRun } from './cluster-figures.ts';
import { summarizeAllocations } from './profile-summary.ts';

const TOTAL = Number(process.env.TOTAL ?? 60000);
const STEP = Number(process.env.STEP ?? 5000);
const CLIENTS = Number(process.env.CLIENTS ?? 16);
const IDLE_MS = Number(process.env.IDLE_MS ?? 20000);
const TICK_MS = 10;
const SURVIVORS = process.env.SURVIVORS?.split(',').map(Number);
const allocDir = SURVIVORS ? mkdtempSync(join(tmpdir(), 'islet-gw-survivors-')) : '';

process.env.ISLET_DEV_NODE_FLAGS = `${process.env.ISLET_DEV_NODE_FLAGS ?? ''} --trace-gc-nvp${
  SURVIVORS ? ` --import ${join(import.meta.dirname, 'alloc-sampler.ts')}` : ''
}`.trim();

interface Gc {
  kind: string;
  pause: number;
  promoted: number;
  start: number;
  objects: number;
  committed: number;
  /** Runs finished when the line came (the bench's count). */
  at: number;
}
const gcs: Record<string, Gc[]> = { gateway: [], runner: [] };
const controller: Record<string, string[]> = { gateway: [], runner: [] };
const pretenuring: Record<string, string[]> = { gateway: [], runner: [] };
let done = 0;
takeChildLines((who, line) => {
  // With --trace-gc-verbose: V8's old-generation limit after each mark-compact (its growing factor
  // and what it was based on), kept to print at the end.
  const limit = /\[HeapController\] (.*)$/.exec(line)?.[1];
  if (limit) controller[who]?.push(`@${done} ${limit}`);
  // With --trace-pretenuring: V8's decisions to allocate a site's objects in old space at once.
  if (/pretenur|AllocationSite/i.test(line))
    pretenuring[who]?.push(`@${done} ${line.replace(/^\[\w+-0\] /, '')}`);
  if (!line.includes(' gc=')) return;
  const num = (name: string) => nvpField(line, name);
  gcs[who]?.push({
    kind: / gc=(\w+)/.exec(line)?.[1] ?? '?',
    pause: num('pause'),
    promoted: num('promoted'),
    start: num('start_object_size'),
    objects: num('end_object_size'),
    committed: num('end_memory_size'),
    at: done,
  });
});

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: {
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(SURVIVORS ? { BENCH_ALLOC_DIR: allocDir, BENCH_ALLOC_SURVIVORS: '1' } : {}),
  },
  verbose: true,
});
const pid = { gateway: cluster.gateways[0]?.pid ?? 0, runner: cluster.runners[0]?.pid ?? 0 };

function cpuTicks(p: number): number {
  const text = readFileSync(`/proc/${p}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}
function statusMb(p: number, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${p}/status`, 'utf8'));
  return Number(m?.[1] ?? Number.NaN) / 1024;
}
const mb = (bytes: number) => (bytes / 1048576).toFixed(1);
const major = (g: Gc) => g.kind === 'mc' || g.kind === 'ms';

let mark = { at: { gateway: 0, runner: 0 }, cpu: { gateway: 0, runner: 0 }, runs: 0, t: performance.now() };
function line(label: string) {
  const now = performance.now();
  const runs = done - mark.runs;
  const parts = (['gateway', 'runner'] as const).map((who) => {
    const list = (gcs[who] ?? []).slice(mark.at[who]);
    const sc = list.filter((g) => g.kind === 's');
    const mcs = list.filter(major);
    const last = gcs[who]?.at(-1);
    const cpu = cpuTicks(pid[who]);
    const s =
      `${who} RSS ${statusMb(pid[who], 'VmRSS').toFixed(0)} (HWM ${statusMb(pid[who], 'VmHWM').toFixed(0)}) MB, ` +
      `heap ${mb(last?.objects ?? Number.NaN)} of ${mb(last?.committed ?? Number.NaN)} MB, ` +
      `promoted ${runs ? (sc.reduce((t, g) => t + g.promoted, 0) / 1024 / runs).toFixed(2) : '-'} KB/run, ` +
      `MC ${mcs.length}${mcs.length ? ` (→ ${mcs.map((g) => mb(g.objects)).join(', ')} MB; ${mcs.map((g) => g.pause.toFixed(1)).join(', ')} ms)` : ''}, ` +
      `CPU ${runs ? (((cpu - mark.cpu[who]) * TICK_MS) / runs).toFixed(3) : '-'} ms/run`;
    mark.at[who] = gcs[who]?.length ?? 0;
    mark.cpu[who] = cpu;
    return s;
  });
  console.log(
    `${label} ${done} runs, ${runs && now > mark.t ? ((runs * 1000) / (now - mark.t)).toFixed(0) : '-'} runs/s, ` +
      `load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}\n  ${parts.join('\n  ')}`,
  );
  mark = { ...mark, runs: done, t: now };
}

async function survivors(from: number, to: number) {
  process.kill(pid.gateway, 'SIGUSR2');
  const name = `alloc.${pid.gateway}.heapprofile`;
  for (let i = 0; i < 100 && !readdirSync(allocDir).includes(name); i++)
    await new Promise((r) => setTimeout(r, 100));
  const mcs = (gcs.gateway ?? []).filter((g) => major(g) && g.at >= from && g.at <= to).length;
  console.log(
    `=== what outlived a scavenge in the gateway, runs ${from}–${to} (${join(allocDir, name)}); ` +
      `mark-compacts in the window: ${mcs}${mcs ? ' (their dead young objects count too: read with care)' : ''}`,
  );
  console.log(summarizeAllocations(join(allocDir, name), to - from, Number(process.env.TOP ?? 40)));
}

try {
  const once = trivialRun(cluster, 'gw-memory');
  const counted = async () => {
    await once();
    done++;
  };
  console.log(
    `flags: ${process.env.ISLET_DEV_NODE_FLAGS}; ${new Date().toISOString()}; constrained memory seen ` +
      `${process.constrainedMemory()} B; TOTAL=${TOTAL} CLIENTS=${CLIENTS}`,
  );
  mark.cpu = { gateway: cpuTicks(pid.gateway), runner: cpuTicks(pid.runner) };
  while (done < TOTAL) {
    if (SURVIVORS && done === SURVIVORS[0]) process.kill(pid.gateway, 'SIGUSR2');
    await burst(counted, Math.min(STEP, TOTAL - done), CLIENTS);
    line(new Date().toISOString().slice(11, 19));
    if (SURVIVORS && done === SURVIVORS[1]) await survivors(SURVIVORS[0] ?? 0, done);
  }
  await new Promise((r) => setTimeout(r, IDLE_MS));
  line(`idle ${IDLE_MS} ms,`);
  const rollup = readFileSync(`/proc/${pid.gateway}/smaps_rollup`, 'utf8');
  console.log(
    `gateway smaps_rollup: ${['Rss', 'Anonymous', 'Private_Dirty']
      .map(
        (k) => `${k} ${(Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(rollup)?.[1]) / 1024).toFixed(0)} MB`,
      )
      .join(', ')}; VmRSS ${['RssAnon', 'RssFile']
      .map((k) => `${k} ${statusMb(pid.gateway, k).toFixed(0)} MB`)
      .join(', ')}`,
  );
  if (pretenuring.gateway?.length)
    console.log(
      `gateway pretenuring (${pretenuring.gateway.length} lines):\n  ${pretenuring.gateway.slice(0, 200).join('\n  ')}`,
    );
  if (controller.gateway?.length)
    console.log(`gateway heap controller:\n  ${controller.gateway.join('\n  ')}`);
  // GC_DUMP=<file>: every collection of both processes as JSON (kind, run index, pause, promoted,
  // objects before and after), e.g. to read a scavenge's promotion against the runs since the last
  // mark-compact.
  if (process.env.GC_DUMP) writeFileSync(process.env.GC_DUMP, JSON.stringify(gcs));
  const list = (gcs.gateway ?? []).filter(major);
  console.log(
    `gateway mark-compacts (${list.length}): ${list
      .map((g) => `${g.kind}@${g.at} ${g.pause.toFixed(1)} ms ${mb(g.start)}→${mb(g.objects)}`)
      .join('; ')}`,
  );
} finally {
  await cluster.stop();
}
