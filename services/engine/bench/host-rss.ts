/**
 * `node --no-node-snapshot services/engine/bench/host-rss.ts`: a sandbox host's resident growth a
 * run. One engine, one host never retired (no run or growth bound), `RUNS` (default 3000)
 * sequential trivial runs; every `EVERY` (100) runs the host's VmRSS, RssAnon, glibc's main heap
 * (`[heap]` in smaps) and the other anonymous mappings' resident sizes. Prints the slope of each in
 * KiB a run over the runs past `WARM` (500; least squares), and the runs a host serves before it
 * passes the engine's default growth bound (5 MiB since its first run): retirements a N runs.
 * `TIMEOUT_MS`: the runs' time budget (default the engine's; `none`: no deadline). `HOST_ENV_JSON`:
 * the host's environment beside HOST_ENV (e.g. '{"GLIBC_TUNABLES":"glibc.malloc.arena_max=1"}').
 * `HOST_FLAGS`: node flags for the host (e.g. `--import /tmp/probe.mjs`).
 * `HOST_WRAP`: a command the host runs under (its command line follows), e.g. a profiler's.
 * `RETIREMENTS=1`: instead, the engine at its defaults: host starts and retirements (by reason) a
 * `RUNS` sequential runs; `HOST_DROP`: host arguments to leave out (comma-separated);
 * `MAX_GROWTH_MIB`: the growth bound instead of the default; `CALLS`: binding calls a run (in
 * parallel, instant answers; default 0: the trivial program). Also each retired host's VmRSS and
 * private memory (RssAnon + RssShmem) read at its retirement, and the runs it served.
 * `LOOP=1`: instead, the same isolates made and run in this process (host-like-isolate.ts), the
 * plain loop to compare with (run it with the host's flags and environment).
 */
import { readFileSync } from 'node:fs';
import { createEngine } from '../src/index.ts';
import { hostLikeRun, TRIVIAL_PROGRAM, warmHarnessCache } from './host-like-isolate.ts';

const RUNS = Number(process.env.RUNS ?? 3000);
const EVERY = Number(process.env.EVERY ?? 100);
const WARM = Number(process.env.WARM ?? 500);
/** The runs between which mappings are compared. */
const DIFF_FROM = Number(process.env.DIFF_FROM ?? WARM);
const DIFF_TO = Number(process.env.DIFF_TO ?? RUNS);
const BOUND_KIB = 5 * 1024;
const timeoutEnv = process.env.TIMEOUT_MS;
const timeoutMs = timeoutEnv === 'none' ? null : timeoutEnv === undefined ? undefined : Number(timeoutEnv);

interface Sample {
  run: number;
  rss: number;
  anon: number;
  heap: number;
  otherAnon: number;
}

/** KiB figures of /proc/<pid>/status and smaps. */
function sample(pid: number | 'self', run: number): Sample {
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  let heap = 0;
  let otherAnon = 0;
  let name = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'latin1').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1] ?? '';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    if (name === '[heap]') heap += Number(rss[1]);
    else if (name === '') otherAnon += Number(rss[1]);
  }
  return { run, rss: kib('VmRSS'), anon: kib('RssAnon'), heap, otherAnon };
}

/** Resident KiB per mapping (start address, size, perms, name). */
function mappings(pid: number | 'self'): Map<string, number> {
  const out = new Map<string, number>();
  let key = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'latin1').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const size = (Number.parseInt(head[2]!, 16) - Number.parseInt(head[1]!, 16)) / 1024;
      key = `${head[1]} ${size}K ${head[3]} ${head[4] || '(anon)'}`;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out.set(key, Number(rss[1]));
  }
  return out;
}

/** The mappings whose resident size changed most between two readings, and sums by kind. */
function mappingDiff(a: Map<string, number>, b: Map<string, number>): void {
  const keys = new Set([...a.keys(), ...b.keys()]);
  const rows: [string, number][] = [];
  const byKind = new Map<string, number>();
  for (const k of keys) {
    const d = (b.get(k) ?? 0) - (a.get(k) ?? 0);
    if (d === 0) continue;
    rows.push([k, d]);
    const [, size, , ...name] = k.split(' ');
    const kind = name.join(' ') === '(anon)' ? `anon ${size}` : name.join(' ');
    byKind.set(kind, (byKind.get(kind) ?? 0) + d);
  }
  rows.sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]));
  console.log('  mappings changed most (KiB):');
  for (const [k, d] of rows.slice(0, 15)) console.log(`    ${d > 0 ? '+' : ''}${d} ${k}`);
  console.log('  by kind (KiB):');
  for (const [k, d] of [...byKind].sort((x, y) => Math.abs(y[1]) - Math.abs(x[1])).slice(0, 12))
    console.log(`    ${d > 0 ? '+' : ''}${d} ${k}`);
}

function slope(points: Sample[], key: keyof Omit<Sample, 'run'>): number {
  const xs = points.map((p) => p.run);
  const ys = points.map((p) => p[key]);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return num / den;
}

function report(label: string, samples: Sample[]): void {
  const steady = samples.filter((s) => s.run >= WARM);
  const first = samples[0]!;
  const over = samples.find((s) => s.rss - first.rss > BOUND_KIB);
  const f = (k: keyof Omit<Sample, 'run'>) => slope(steady, k).toFixed(3);
  console.log(
    `${label}: runs ${samples.at(-1)!.run}; slope KiB a run past run ${WARM}: rss ${f('rss')} anon ${f('anon')} ` +
      `heap ${f('heap')} other-anon ${f('otherAnon')}; first past +5 MiB at run ${over?.run ?? `none (of ${samples.at(-1)!.run})`}`,
  );
  if (process.env.STEPS === '1')
    for (let i = 1; i < samples.length; i++) {
      const a = samples[i - 1]!;
      const b = samples[i]!;
      if (Math.abs(b.anon - a.anon) >= 200)
        console.log(
          `  step runs ${a.run}-${b.run}: anon ${b.anon - a.anon > 0 ? '+' : ''}${b.anon - a.anon} heap ${b.heap - a.heap} other-anon ${b.otherAnon - a.otherAnon} KiB`,
        );
    }
  for (const s of samples.filter(
    (_, i) => i % Math.max(1, Math.floor(samples.length / 10)) === 0 || i === samples.length - 1,
  ))
    console.log(
      `  run ${s.run}: rss ${s.rss} anon ${s.anon} heap ${s.heap} other-anon ${s.otherAnon} (+${s.rss - first.rss} KiB)`,
    );
}

async function hostMode(): Promise<void> {
  let pid: number | undefined;
  const hostEnv = process.env.HOST_ENV_JSON
    ? (JSON.parse(process.env.HOST_ENV_JSON) as Record<string, string>)
    : undefined;
  const engine = createEngine({
    maxRunsPerProcess: 1e9,
    maxHostResidentGrowthBytes: 0,
    maxIdlePerPartition: 1,
    prewarm: false,
    ...(process.env.HOST_WRAP
      ? {
          startupTimeoutMs: 120_000,
          wrapCommand: (command: string, args: string[]) => ({
            command: process.env.HOST_WRAP!,
            args: [command, ...args],
          }),
        }
      : {}),
    ...(process.env.HOST_FLAGS
      ? {
          wrapCommand: (command: string, args: string[]) => ({
            command,
            args: [...process.env.HOST_FLAGS!.split(' '), ...args],
          }),
        }
      : {}),
    ...(hostEnv ? { hostEnv } : {}),
    onProcessEvent: (e) => {
      if (e.type === 'started' && e.pid !== undefined) pid = e.pid;
    },
  });
  const samples: Sample[] = [];
  let atWarm = new Map<string, number>();
  let atEnd = new Map<string, number>();
  try {
    for (let run = 1; run <= RUNS; run++) {
      const out = await engine.execute(TRIVIAL_PROGRAM, {
        partition: 'rss',
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      });
      if (out.status !== 'completed') throw new Error(`run ${run}: ${JSON.stringify(out)}`);
      if (run === 1 || run % EVERY === 0) samples.push(sample(pid!, run));
      if (run === DIFF_FROM) atWarm = mappings(pid!);
      if (run === DIFF_TO) atEnd = mappings(pid!);
    }
  } finally {
    await engine.close();
  }
  mappingDiff(atWarm, atEnd);
  report(
    `host (timeout ${timeoutEnv ?? 'default'}, env ${process.env.HOST_ENV_JSON ?? 'HOST_ENV'})`,
    samples,
  );
}

/** The engine at its defaults (growth bound, prewarm): its hosts' starts and retirements a RUNS runs. */
async function retirementsMode(): Promise<void> {
  const counts = new Map<string, number>();
  const drop = (process.env.HOST_DROP ?? '').split(',').filter(Boolean);
  const hostEnv = process.env.HOST_ENV_JSON
    ? (JSON.parse(process.env.HOST_ENV_JSON) as Record<string, string>)
    : undefined;
  const growthMib = process.env.MAX_GROWTH_MIB;
  const calls = Number(process.env.CALLS ?? 0);
  const atRetirement: { rss: number; priv: number; runs: number; reason: string }[] = [];
  const startedAtRun = new Map<number, number>();
  let run = 0;
  const engine = createEngine({
    ...(hostEnv ? { hostEnv } : {}),
    ...(growthMib !== undefined ? { maxHostResidentGrowthBytes: Number(growthMib) * 1024 * 1024 } : {}),
    // HOST_DROP: host command-line arguments left out (the head without one of its flags).
    ...(drop.length > 0
      ? {
          wrapCommand: (command: string, args: string[]) => ({
            command,
            args: args.filter((a) => !drop.includes(a)),
          }),
        }
      : {}),
    onProcessEvent: (e) => {
      const key = e.type === 'retired' ? `retired ${e.reason}` : e.type;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      if (e.type === 'started' && e.pid !== undefined) startedAtRun.set(e.pid, run);
      if (e.type === 'retired' && e.pid !== undefined) {
        try {
          const s = sample(e.pid, run);
          const text = readFileSync(`/proc/${e.pid}/status`, 'latin1');
          const shmem = Number(/^RssShmem:\s+(\d+) kB/m.exec(text)?.[1] ?? 0);
          const runs = run - (startedAtRun.get(e.pid) ?? 0);
          atRetirement.push({ rss: s.rss, priv: s.anon + shmem, runs, reason: e.reason });
        } catch {
          // gone already
        }
      }
    },
  });
  const code =
    calls > 0
      ? `return (await Promise.all(Array.from({ length: ${calls} }, (_, i) => t({ i })))).length;`
      : TRIVIAL_PROGRAM;
  const answer = { type: 'result' as const, valueJson: '{"n":1}' };
  try {
    for (run = 1; run <= RUNS; run++) {
      const out = await engine.execute(code, {
        partition: 'rss',
        ...(calls > 0 ? { bindings: ['t'], onCall: async () => answer } : {}),
      });
      if (out.status !== 'completed') throw new Error(`run ${run}: ${JSON.stringify(out)}`);
    }
  } finally {
    await engine.close();
  }
  console.log(
    `engine defaults${growthMib !== undefined ? ` (growth bound ${growthMib} MiB)` : ''}, ${RUNS} sequential runs of ${calls} calls: ${[...counts].map(([k, n]) => `${k} ${n}`).join(', ')}`,
  );
  for (const r of atRetirement)
    console.log(
      `  retired ${r.reason} after ~${r.runs} runs: VmRSS ${(r.rss / 1024).toFixed(1)} MiB, private ${(r.priv / 1024).toFixed(1)} MiB`,
    );
}

async function loopMode(): Promise<void> {
  const cache = warmHarnessCache();
  const samples: Sample[] = [];
  let atWarm = new Map<string, number>();
  for (let run = 1; run <= RUNS; run++) {
    hostLikeRun(cache, 512);
    // As a host between runs: back to its event loop.
    await new Promise((r) => setImmediate(r));
    if (run === 1 || run % EVERY === 0) samples.push(sample('self', run));
    if (run === WARM) atWarm = mappings('self');
  }
  mappingDiff(atWarm, mappings('self'));
  report('plain loop', samples);
}

await (process.env.LOOP === '1'
  ? loopMode()
  : process.env.RETIREMENTS === '1'
    ? retirementsMode()
    : hostMode());
