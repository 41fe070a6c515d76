/**
 * `node --no-node-snapshot test/bench/host-cpu.ts`: CPU per trivial run of one sandbox
 * host (its own /proc utime+stime, host starts excluded: one host serves every run) against raw
 * isolated-vm in this process (new isolate + context + eval + dispose, as test/bench/baselines.ts),
 * measured before and after `ROUNDS` (default 3) rounds of `RUNS` (default 400) host runs each.
 * JAIL=1: the host under the kernel launcher (read-only mode), as a runner with ISLET_SANDBOX_JAIL=on.
 * MEMORY_MB: the runs' heap limit (default the engine's, 512).
 * CLIENTS (default 1): concurrent runs (hosts) in the rounds; raw stays sequential.
 * PERF=1 prints the host's pid and waits 2 s before each round's host runs (for `perf record -p`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';
import ivm from 'isolated-vm';

const RUNS = Number(process.env.RUNS ?? 400);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CLIENTS = Number(process.env.CLIENTS ?? 1);
const MEMORY_MB = process.env.MEMORY_MB ? Number(process.env.MEMORY_MB) : undefined;
const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
const TICK_MS = 10;

function stat(pid: number): { ppid: number; ticks: number; faults: number } {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]), faults: Number(f[7]) };
}

/** utime+stime of `pid` and its live descendants (under the launcher, node may be its child). */
function hostTicks(pid: number, what: 'ticks' | 'faults' = 'ticks'): number {
  const all = new Map<number, ReturnType<typeof stat>>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      all.set(Number(d), stat(Number(d)));
    } catch {}
  }
  const inTree = (p: number): boolean => p === pid || (p > 1 && all.has(p) && inTree(all.get(p)!.ppid));
  let ticks = 0;
  for (const [p, s] of all) if (inTree(p)) ticks += s[what];
  return ticks;
}
const ownMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function raw(): Promise<number> {
  const c0 = ownMs();
  for (let i = 0; i < RUNS; i++) {
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    try {
      const context = await isolate.createContext();
      const v = await context.eval(`(async () => { ${PROGRAM} })()`, { promise: true, timeout: 10_000 });
      if (v !== 12) throw new Error('raw run failed');
    } finally {
      isolate.dispose();
    }
  }
  return (ownMs() - c0) / RUNS;
}

const pids: number[] = [];
const jail = process.env.JAIL
  ? (await import('@islet/kernel-sandbox')).wrapCommandForMode('read-only')
  : undefined;
const engine = createEngine({
  ...(jail ? { wrapCommand: jail } : {}),
  // One host for every measured run: its start and its replacement are not what is measured here.
  maxRunsPerProcess: 1_000_000,
  maxHostResidentGrowthBytes: 0,
  maxIdlePerPartition: CLIENTS,
  onProcessEvent: (e) => {
    if (e.type === 'started' && e.pid !== undefined) pids.push(e.pid);
  },
});
try {
  const once = async () => {
    const out = await engine.execute(PROGRAM, MEMORY_MB ? { limits: { memoryMb: MEMORY_MB } } : undefined);
    if (out.valueJson !== '12') throw new Error(`engine run failed: ${JSON.stringify(out.failure)}`);
  };
  const loops = async (runs: number) => {
    let left = runs;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (left-- > 0) await once();
      }),
    );
  };
  await loops(20 * CLIENTS);
  const hostTicksAll = (what: 'ticks' | 'faults' = 'ticks') =>
    pids.reduce((sum, pid) => sum + hostTicks(pid, what), 0);
  const rawBefore = await raw();
  const hostRuns: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (process.env.PERF) {
      console.log(`host pid ${pids.join(' ')}`);
      await new Promise((res) => setTimeout(res, 2000));
    }
    const started = pids.length;
    const t0 = hostTicksAll();
    const f0 = hostTicksAll('faults');
    const e0 = ownMs();
    await loops(RUNS);
    const engineMs = (ownMs() - e0) / RUNS;
    const hostMs = ((hostTicksAll() - t0) * TICK_MS) / RUNS;
    if (pids.length !== started) throw new Error('a host was started during a round');
    const faults = (hostTicksAll('faults') - f0) / RUNS;
    hostRuns.push(hostMs);
    console.log(
      `round ${r + 1}: host ${hostMs.toFixed(2)} ms/run, ${faults.toFixed(0)} page faults/run; engine side ${engineMs.toFixed(2)} ms/run`,
    );
  }
  const rawMs = (rawBefore + (await raw())) / 2;
  const hostMs = hostRuns.reduce((a, b) => a + b, 0) / hostRuns.length;
  console.log(
    `host ${hostMs.toFixed(2)} ms/run${jail ? ' (kernel launcher)' : ''}, raw ${rawMs.toFixed(2)} ms/run (mean of before and after): ${(hostMs / rawMs).toFixed(2)}x raw`,
  );
} finally {
  await engine.close();
}
