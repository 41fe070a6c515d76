/**
 * `node services/engine/bench/host-variants.ts`: trivial runs through the engine at its default
 * host lifetime (1000 runs, 5 MiB of resident growth), `CLIENTS` (default 4) at once, with the
 * sandbox hosts started per variant: extra node flags (inserted through `wrapCommand`) and an
 * environment (`hostEnv`). Per run: the hosts' CPU including the starts of their replacements
 * (live hosts from /proc, exited ones from this process's reaped-children time), host starts,
 * replacements by reason, the hosts' minor page faults (host starts included). Variants interleaved over `ROUNDS` (default 2,
 * order reversed every other round) of `RUNS` (default 3000) runs each. VARIANTS: names to run.
 */
import { readFileSync } from 'node:fs';
import { createEngine, type ProcessEvent } from '../src/index.ts';

interface Variant {
  name: string;
  flags: string[];
  env: Record<string, string>;
}
const MIB = 1024 * 1024;
const ALL: Variant[] = [
  { name: 'base', flags: [], env: {} },
  // glibc's own dynamic thresholds, as hosts had before HOST_ENV (host-process.ts) fixed them.
  { name: 'malloc-dynamic', flags: [], env: { GLIBC_TUNABLES: '' } },
  { name: 'pad-1m', flags: [], env: { GLIBC_TUNABLES: `glibc.malloc.top_pad=${MIB}` } },
  {
    name: 'pad-1m-mmap-4m',
    flags: [],
    env: { GLIBC_TUNABLES: `glibc.malloc.top_pad=${MIB}:glibc.malloc.mmap_threshold=${4 * MIB}` },
  },
  { name: 'arena-1', flags: [], env: { GLIBC_TUNABLES: 'glibc.malloc.arena_max=1' } },
  { name: 'arena-2', flags: [], env: { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' } },
  { name: 'trim-128k', flags: [], env: { GLIBC_TUNABLES: `glibc.malloc.trim_threshold=${128 * 1024}` } },
  {
    name: 'malloc-keep',
    flags: [],
    env: { GLIBC_TUNABLES: `glibc.malloc.trim_threshold=${256 * MIB}:glibc.malloc.top_pad=${64 * MIB}` },
  },
  { name: 'single-threaded-gc', flags: ['--single-threaded-gc'], env: {} },
  { name: 'no-memory-reducer', flags: ['--no-memory-reducer'], env: {} },
];
const RUNS = Number(process.env.RUNS ?? 3000);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const CLIENTS = Number(process.env.CLIENTS ?? 4);
const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
const TICK_MS = 10;

function statOf(pid: number | 'self'): number[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text
      .slice(text.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
  } catch {
    return undefined;
  }
}
/** utime+stime and minflt of a live process; undefined once it is gone. */
const hostNow = (pid: number) => {
  const f = statOf(pid);
  return f ? { ticks: f[11]! + f[12]!, faults: f[7]! } : undefined;
};
/** This process's reaped children's utime+stime (exited hosts), ticks, and their minor faults. */
const reaped = () => {
  const f = statOf('self')!;
  return { ticks: f[13]! + f[14]!, faults: f[8]! };
};

async function measure(v: Variant): Promise<Record<string, number>> {
  const live = new Set<number>();
  const events: ProcessEvent[] = [];
  const engine = createEngine({
    maxIdlePerPartition: CLIENTS,
    wrapCommand: (command, args) => ({ command, args: [...v.flags, ...args] }),
    hostEnv: v.env,
    onProcessEvent: (e) => {
      events.push(e);
      if (e.pid === undefined) return;
      if (e.type === 'started') live.add(e.pid);
      if (e.type === 'exited') live.delete(e.pid);
    },
  });
  try {
    let left = 0;
    const loops = () =>
      Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (left-- > 0) {
            const out = await engine.execute(PROGRAM);
            if (out.valueJson !== '12') throw new Error(`run failed: ${JSON.stringify(out.failure)}`);
          }
        }),
      );
    left = 20 * CLIENTS;
    await loops();
    const before = new Map([...live].map((pid) => [pid, hostNow(pid)!]));
    const reaped0 = reaped();
    const events0 = events.length;
    left = RUNS;
    await loops();
    const reaped1 = reaped();
    let ticks = reaped1.ticks - reaped0.ticks;
    let faults = reaped1.faults - reaped0.faults;
    for (const pid of new Set([...before.keys(), ...live])) {
      const now = hostNow(pid);
      const was = before.get(pid);
      if (now) {
        ticks += now.ticks - (was?.ticks ?? 0);
        faults += now.faults - (was?.faults ?? 0);
      } else if (was) {
        // exited in the window: what it spent before the window is in the reaped figures too
        ticks -= was.ticks;
        faults -= was.faults;
      }
    }
    const window = events.slice(events0);
    const count = (f: (e: ProcessEvent) => boolean) => window.filter(f).length;
    return {
      hostMs: (ticks * TICK_MS) / RUNS,
      starts: count((e) => e.type === 'started'),
      maxMemory: count((e) => e.type === 'retired' && e.reason === 'max-memory'),
      maxRuns: count((e) => e.type === 'retired' && e.reason === 'max-runs'),
      faults: faults / RUNS,
    };
  } finally {
    await engine.close();
  }
}

const wanted = process.env.VARIANTS?.split(',');
const variants = wanted ? ALL.filter((v) => wanted.includes(v.name)) : ALL;
const results = new Map<string, Record<string, number>[]>();
for (let r = 0; r < ROUNDS; r++) {
  for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    const res = await measure(v);
    results.set(v.name, [...(results.get(v.name) ?? []), res]);
    console.log(
      `round ${r + 1} ${v.name.padEnd(20)} load ${load}  ${Object.entries(res)
        .map(([k, x]) => `${k} ${Number.isInteger(x) ? x : x.toFixed(2)}`)
        .join('  ')}`,
    );
  }
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const v of variants) {
  const rs = results.get(v.name)!;
  console.log(
    `${v.name.padEnd(20)} ${Object.keys(rs[0]!)
      .map((k) => `${k} ${mean(rs.map((x) => x[k]!)).toFixed(2)}`)
      .join('  ')}`,
  );
}
