/**
 * The same-process baselines every bench figure is a ratio against: raw isolated-vm (new isolate +
 * context + eval + dispose in this process), a node process spawned per run, and the engine
 * in-process (sandbox host processes, fresh isolate per run). Needs `--no-node-snapshot` in this
 * process for the raw mode (isolated-vm on Node >= 20).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';
import { processParents } from './capacity-cpu.ts';

export const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';

/** The cluster benches' trivial run, as `POST /v1/runs` takes it. */
export const TRIVIAL_RUN_BODY = {
  code: PROGRAM,
  description: 'Benchmark a trivial program',
  sessionId: 'bench',
  turnId: 't',
  callId: 'c',
  connections: [],
} as const;

export interface Sample {
  runs: number;
  seconds: number;
  perSec: number;
  p50: number;
  p99: number;
  /** CPU of this process and its children (sandbox hosts) per run, ms (see cpuMsOfTree). */
  cpuMsPerRun?: number;
}

export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}

/**
 * Runs `once` from `clients` concurrent loops for `seconds` (at least `minRuns`, at most `maxRuns`
 * runs) after `warmup` runs; latency percentiles and throughput. A `once` that does more than the
 * thing measured (reads what it left behind) returns the latency of the thing itself, ms.
 */
export async function measure(
  once: () => Promise<number | undefined> | Promise<void>,
  opts: { seconds: number; clients?: number; warmup?: number; minRuns?: number; maxRuns?: number },
): Promise<Sample> {
  const clients = opts.clients ?? 1;
  // Warm-up from every client at once: what is measured is the steady state at that concurrency
  // (one sandbox host per concurrent run already started), not the first hosts' start-up.
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = 0; i < (opts.warmup ?? 3); i++) await once();
    }),
  );
  const lat: number[] = [];
  const cpu0 = cpuMsOfTree();
  const started = performance.now();
  const until = started + opts.seconds * 1000;
  const minRuns = opts.minRuns ?? 0;
  const maxRuns = opts.maxRuns ?? 1e9;
  let begun = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while ((performance.now() < until || begun < minRuns) && begun < maxRuns) {
        begun++;
        const t = performance.now();
        const own = await once();
        lat.push(typeof own === 'number' ? own : performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuMsPerRun = (cpuMsOfTree() - cpu0) / Math.max(1, lat.length);
  return {
    runs: lat.length,
    seconds,
    perSec: lat.length / seconds,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    cpuMsPerRun,
  };
}

export async function rawIsolateBaseline(seconds: number): Promise<Sample> {
  const ivm = (await import('isolated-vm')).default;
  return measure(
    async () => {
      const isolate = new ivm.Isolate({ memoryLimit: 128 });
      try {
        const context = await isolate.createContext();
        const value = await context.eval(`(async () => { ${PROGRAM} })()`, {
          promise: true,
          timeout: 10_000,
        });
        if (value !== 12) throw new Error('raw run failed');
      } finally {
        isolate.dispose();
      }
    },
    { seconds },
  );
}

export async function spawnBaseline(seconds: number, minRuns = 5): Promise<Sample> {
  return measure(
    () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, ['-e', `(async () => { ${PROGRAM} })().then(console.log)`], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
        });
        child.on('exit', () => (out.trim() === '12' ? resolve() : reject(new Error('spawned run failed'))));
      }),
    { seconds, warmup: 1, maxRuns: 60, minRuns },
  );
}

export interface EngineFigures {
  sequential: Sample;
  concurrent: Sample;
  /** One binding call to a host handler that answers at once, ms (p50 difference / calls). */
  callMs: number;
  /** A run making 100 parallel calls, p50 ms. */
  parallel100Ms: number;
}

/** `quick`: sequential only (the ratio guard); the other figures are NaN. */
export async function engineBaseline(seconds: number, quick = false): Promise<EngineFigures> {
  // As a runner configures it (one idle host per slot, 4 slots), so the 4-concurrent figure is
  // not host churn.
  const engine = createEngine({ maxIdlePerPartition: 4 });
  try {
    const once = async () => {
      const out = await engine.execute(PROGRAM);
      if (out.valueJson !== '12') throw new Error(`engine run failed: ${JSON.stringify(out.failure)}`);
    };
    const sequential = await measure(once, { seconds, warmup: 10 });
    if (quick) {
      const none = { runs: 0, seconds: 0, perSec: Number.NaN, p50: Number.NaN, p99: Number.NaN };
      return { sequential, concurrent: none, callMs: Number.NaN, parallel100Ms: Number.NaN };
    }
    const concurrent = await measure(once, { seconds, clients: 4 });
    const onCall = async () => ({ type: 'result' as const, valueJson: '{"ok":true}' });
    const calls = async (code: string) => {
      const out = await engine.execute(code, { bindings: ['bench.ping'], onCall });
      if (out.status !== 'completed') throw new Error(`engine run failed: ${JSON.stringify(out.failure)}`);
    };
    const seq = await measure(() => calls(sequentialCalls(CALLS)), { seconds: seconds / 2, minRuns: 10 });
    const par = await measure(() => calls(parallelCalls(100)), { seconds: seconds / 2, minRuns: 10 });
    return {
      sequential,
      concurrent,
      callMs: Math.max(0, seq.p50 - sequential.p50) / CALLS,
      parallel100Ms: par.p50,
    };
  } finally {
    await engine.close();
  }
}

export const CALLS = 20;
export const sequentialCalls = (n: number) =>
  `for (let i = 0; i < ${n}; i++) await apps.bench.ping({ i }); return 1`;
export const parallelCalls = (n: number) =>
  `await Promise.all(Array.from({ length: ${n} }, (_, i) => apps.bench.ping({ i }))); return 1`;

/**
 * What a sandbox host start costs: a run's wall time when it must start its host (a fresh
 * partition, no spare), and the host process's CPU from its start through that run (/proc, read
 * once it is idle again: start-up, the warm harness cache, the run, the next isolate made). Means
 * over `hosts` starts.
 */
export async function hostStartCost(hosts = 6): Promise<{ wallMs: number; cpuMs: number }> {
  const pids: number[] = [];
  const engine = createEngine({
    prewarm: false,
    maxIdleTotal: hosts,
    onProcessEvent: (e) => {
      if (e.type === 'started' && e.pid !== undefined) pids.push(e.pid);
    },
  });
  try {
    let wall = 0;
    for (let i = 0; i < hosts; i++) {
      const t = performance.now();
      const out = await engine.execute(PROGRAM, { partition: `start-${i}` });
      wall += performance.now() - t;
      if (out.valueJson !== '12') throw new Error(`engine run failed: ${JSON.stringify(out.failure)}`);
    }
    await new Promise((r) => setTimeout(r, 300));
    let ticks = 0;
    for (const pid of pids) {
      const [utime, stime] = procTimes(pid);
      ticks += utime! + stime!;
    }
    return { wallMs: wall / hosts, cpuMs: (ticks * 1000) / TICKS / pids.length };
  } finally {
    await engine.close();
  }
}

/**
 * Idle memory of a pooled sandbox host after 20 runs (the prepared isolate for its next run
 * included), from /proc: resident (VmRSS), proportional (Pss: shared pages split among processes)
 * and its thread count.
 */
export async function hostIdleMemory(): Promise<{ rssMb: number; pssMb: number; threads: number }> {
  const engine = createEngine({ prewarm: false });
  try {
    let pid: number | undefined;
    for (let i = 0; i < 20; i++) pid = (await engine.execute(PROGRAM)).hostPid;
    await new Promise((r) => setTimeout(r, 1000));
    const field = (text: string, name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(text)?.[1]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return {
      rssMb: field(status, 'VmRSS') / 1024,
      pssMb: field(rollup, 'Pss') / 1024,
      threads: field(status, 'Threads'),
    };
  } finally {
    await engine.close();
  }
}

/** Clock ticks per second of /proc/<pid>/stat times (Linux's USER_HZ, 100 on every common build). */
const TICKS = 100;

/** utime, stime, cutime, cstime of /proc/<pid>/stat, in ticks (fields after the command name). */
function procTimes(pid: number | 'self'): number[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // f[0] is field 3 (state): utime is field 14 → f[11].
  return [Number(f[11]), Number(f[12]), Number(f[13]), Number(f[14])];
}

/**
 * CPU time (ms) of every process under this one (not this one), by the kind `name` gives each
 * direct child from its command line: a child's own time, its reaped children's (sandbox hosts that
 * exited) and its live descendants'. The cluster bench's CPU per run, which a noisy machine moves
 * far less than a rate.
 */
export function cpuMsOfDescendants(name: (cmdline: string) => string): Record<string, number> {
  const parent = processParents();
  const out: Record<string, number> = {};
  for (const pid of parent.keys()) {
    // The direct child of this process that `pid` descends from.
    let top = pid;
    for (let p = parent.get(top); p !== undefined && p !== process.pid; p = parent.get(top)) {
      if (p <= 1) {
        top = 0;
        break;
      }
      top = p;
    }
    if (top === 0 || parent.get(top) !== process.pid) continue;
    try {
      const [u, s, cu, cs] = procTimes(pid);
      const kind = name(readFileSync(`/proc/${top}/cmdline`, 'utf8').replace(/\0/g, ' '));
      out[kind] = (out[kind] ?? 0) + ((u! + s! + cu! + cs!) * 1000) / TICKS;
    } catch {
      // gone meanwhile: its time is in its parent's reaped children's
    }
  }
  return out;
}

/**
 * CPU time (ms) of this process and its sandbox hosts so far: this process, the children it has
 * reaped (hosts that exited), and its live children. Less sensitive to the machine's load than
 * a rate: a loaded machine stretches wall time, not the CPU a run needs.
 */
export function cpuMsOfTree(): number {
  const [u, s, cu, cs] = procTimes('self');
  let ticks = u! + s! + cu! + cs!;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const [cu2, cs2] = procTimes(Number(d));
      ticks += cu2! + cs2!;
    } catch {
      // gone meanwhile: its time is in the reaped children's
    }
  }
  return (ticks * 1000) / TICKS;
}

/** The pid of this process's child whose command line contains `part` (e.g. a redis-server's port). */
export function childPidWith(part: string): string | undefined {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .find((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === process.pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(part);
      } catch {
        return false;
      }
    });
}
