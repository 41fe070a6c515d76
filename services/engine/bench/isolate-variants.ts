/**
 * `node services/engine/bench/isolate-variants.ts`: CPU, page faults and (STRACE=1) syscalls per
 * host-like isolate (isolate at the run's memory limit, context, callbacks, the harness from its
 * warmed code cache, a trivial program's first turn, dispose: host-like-isolate.ts), each variant in its own child process
 * started as the engine starts a host (`--no-node-snapshot`, the host's semi-space flag released
 * before the first isolate) plus the variant's node flags and environment. Variants run
 * interleaved, `ROUNDS` (default 4) rounds of `RUNS` (default 300) isolates each, so a machine
 * shared with other work drifts evenly over all of them. VARIANTS: comma-separated names (default all).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface Variant {
  name: string;
  flags: string[];
  env: Record<string, string>;
}

const MIB = 1024 * 1024;
/** glibc malloc kept from returning memory to the kernel between isolates (brk heap only). */
const KEEP_HEAP = `glibc.malloc.trim_threshold=${256 * MIB}:glibc.malloc.top_pad=${64 * MIB}`;
const ALL: Variant[] = [
  { name: 'base', flags: [], env: {} },
  { name: 'malloc-keep', flags: [], env: { GLIBC_TUNABLES: KEEP_HEAP } },
  {
    name: 'malloc-keep-nommap',
    flags: [],
    env: { GLIBC_TUNABLES: `${KEEP_HEAP}:glibc.malloc.mmap_threshold=${32 * MIB}` },
  },
  { name: 'arena-1', flags: [], env: { GLIBC_TUNABLES: 'glibc.malloc.arena_max=1' } },
  { name: 'arena-2', flags: [], env: { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' } },
  { name: 'trim-128k', flags: [], env: { GLIBC_TUNABLES: `glibc.malloc.trim_threshold=${128 * 1024}` } },
  { name: 'no-short-builtins', flags: ['--no-short-builtin-calls'], env: {} },
  { name: 'no-memory-reducer', flags: ['--no-memory-reducer'], env: {} },
  { name: 'single-threaded-gc', flags: ['--single-threaded-gc'], env: {} },
  { name: 'no-rehash-snapshot', flags: ['--no-rehash-snapshot'], env: {} },
  { name: 'max-lazy', flags: ['--max-lazy'], env: {} },
  { name: 'no-flush-bytecode', flags: ['--no-flush-bytecode'], env: {} },
  { name: 'no-concurrent-sparkplug', flags: ['--no-concurrent-sparkplug', '--no-sparkplug'], env: {} },
];

const RUNS = Number(process.env.RUNS ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const MEMORY_MB = Number(process.env.MEMORY_MB ?? 512);

/** VmRSS, KiB: what the engine reads to replace a host that grew (maxHostResidentGrowthBytes). */
function residentKiB(): number {
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'latin1'))?.[1] ?? 0);
}

async function child(): Promise<void> {
  const { setFlagsFromString } = await import('node:v8');
  setFlagsFromString('--max-semi-space-size=0');
  const { hostLikeRun, warmHarnessCache } = await import('./host-like-isolate.ts');
  const cache = warmHarnessCache();
  const once = () => hostLikeRun(cache, MEMORY_MB);
  for (let i = 0; i < 30; i++) once();
  const rss0 = residentKiB();
  const r0 = process.resourceUsage();
  const c0 = process.cpuUsage();
  for (let i = 0; i < RUNS; i++) once();
  const c = process.cpuUsage(c0);
  const r = process.resourceUsage();
  process.stdout.write(
    JSON.stringify({
      cpuMs: (c.user + c.system) / 1000 / RUNS,
      userMs: c.user / 1000 / RUNS,
      sysMs: c.system / 1000 / RUNS,
      faults: (r.minorPageFault - r0.minorPageFault) / RUNS,
      volCtx: (r.voluntaryContextSwitches - r0.voluntaryContextSwitches) / RUNS,
      rssKiB: (residentKiB() - rss0) / RUNS,
    }),
  );
}

function runVariant(v: Variant): Record<string, number> {
  const args = ['--no-node-snapshot', '--max-semi-space-size=1', ...v.flags, fileURLToPath(import.meta.url)];
  const env = { ...v.env, PROBE_CHILD: '1', RUNS: String(RUNS), MEMORY_MB: String(MEMORY_MB) };
  const strace = process.env.STRACE === '1';
  const out = strace
    ? spawnSync(
        'strace',
        ['-f', '-c', '-o', `/tmp/isolate-variants-${v.name}.strace`, process.execPath, ...args],
        {
          env,
          encoding: 'utf8',
        },
      )
    : spawnSync(process.execPath, args, { env, encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`${v.name}: ${out.stderr}`);
  const result = JSON.parse(out.stdout) as Record<string, number>;
  if (strace) {
    // The whole child (start-up, warm-up and the measured runs), divided by the measured runs only.
    const text = readFileSync(`/tmp/isolate-variants-${v.name}.strace`, 'utf8');
    for (const line of text.split('\n')) {
      const cols = line.trim().split(/\s+/);
      const name = cols.at(-1);
      if (cols.length >= 5 && ['mmap', 'munmap', 'madvise', 'mprotect', 'brk'].includes(name!)) {
        result[name!] = Number(cols[3]) / (RUNS + 30);
      }
    }
  }
  return result;
}

if (process.env.PROBE_CHILD) {
  await child();
} else {
  const wanted = process.env.VARIANTS?.split(',');
  const variants = wanted ? ALL.filter((v) => wanted.includes(v.name)) : ALL;
  const results = new Map<string, Record<string, number>[]>();
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order each round (ABBA over the list).
    const order = r % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      const res = runVariant(v);
      results.set(v.name, [...(results.get(v.name) ?? []), res]);
    }
    console.log(`round ${r + 1} done, load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`);
  }
  const base = results.get(variants[0]!.name)!;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const v of variants) {
    const rs = results.get(v.name)!;
    const keys = Object.keys(rs[0]!);
    const ratio = rs.map((x, i) => x.cpuMs! / base[i]!.cpuMs!);
    console.log(
      `${v.name.padEnd(26)} ${keys.map((k) => `${k} ${mean(rs.map((x) => x[k]!)).toFixed(k === 'cpuMs' || k.endsWith('Ms') ? 3 : 1)}`).join('  ')}  | cpu per round ${rs.map((x) => x.cpuMs!.toFixed(2)).join(' ')} | x ${variants[0]!.name} per round ${ratio.map((x) => x.toFixed(2)).join(' ')}`,
    );
  }
}
