/**
 * `node --no-node-snapshot test/bench/engine-cpu-split.ts`: where the engine's CPU a trivial run goes
 * against raw isolated-vm's (the engine bench's "CPU per run / raw"), per process and thread group.
 *
 * Alternating rounds (`ROUNDS`, default 3, each `RUNS` runs, default 600, after `WARM`, default 200):
 * raw isolated-vm in this process (new isolate + async context + eval + dispose, as
 * test/bench/baselines.ts), then one engine with one sandbox host running the same program
 * sequentially. For each: time on a CPU a run of every thread (`/proc/<pid>/task/<tid>/schedstat`,
 * ns; threads grouped by `comm` without digits: `node` = the main thread, `V8Worker`, `isolated-vm`'s
 * pool threads, `libuv-worker`), the bench process (the engine side) and the host apart; voluntary
 * context switches (each a sleep and a wake-up) and minor faults a run. `SYSCALLS=1`: also `perf
 * stat` of all syscalls of the host and of this process over the engine's rounds (a run).
 * HOST_FLAGS: node/V8 flags added to the host's command line (space separated); HOST_ENV: its
 * environment (`A=1 B=2`). Two hosts compared in one process, their rounds interleaved (A B, B A,
 * ...) with the same engine side: `A_SCRIPT` / `B_SCRIPT` (another host script for A / B, e.g. a
 * copy of a base commit's `services/engine/src/host.ts` beside a `node_modules` link), `B_ENV`.
 * Each round also prints the host's RSS. The engine runs pass a seed (no CSPRNG draw a run).
 * A_ADDON / B_ADDON: the isolated-vm addon (`.node`) host A / B opens instead of the installed one
 * (a patched build, e.g. test/bench/ivm-lazy-context.patch; round 46 `host-cpu`).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';
import ivm from 'isolated-vm';

const RUNS = Number(process.env.RUNS ?? 600);
const WARM = Number(process.env.WARM ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SYSCALLS = process.env.SYSCALLS === '1';
const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
/**
 * PERF_DIR: `perf record -g` of round 1's raw runs (raw.data), host (host.data) and engine side (engine.data);
 * PERF_EVENT: record that event (every one) instead of CPU time samples.
 */
const PERF_DIR = process.env.PERF_DIR;
const EXTRA_FLAGS = (process.env.HOST_FLAGS ?? '').split(/\s+/).filter(Boolean);

interface Counts {
  ns: number;
  vol: number;
  faults: number;
}
type Snapshot = Map<string, Map<number, Counts>>;

function readTask(pid: number, tid: number): { name: string; c: Counts } | undefined {
  try {
    const base = `/proc/${pid}/task/${tid}`;
    // isolated-vm's pool threads inherit the main thread's name: the main thread is told apart by tid.
    const comm = readFileSync(`${base}/comm`, 'utf8').trim().replace(/\d+$/, '') || '?';
    const name = tid === pid ? 'main' : comm === 'MainThread' ? 'ivm-pool' : comm;
    const ns = Number(readFileSync(`${base}/schedstat`, 'utf8').split(' ')[0]);
    const stat = readFileSync(`${base}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const status = readFileSync(`${base}/status`, 'utf8');
    const vol = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { name, c: { ns, vol, faults: Number(f[7]) } };
  } catch {
    return undefined;
  }
}

/** Every thread of `pid`, by group name and tid. */
function snapshot(pid: number): Snapshot {
  const out: Snapshot = new Map();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const r = readTask(pid, Number(t));
    if (!r) continue;
    const g = out.get(r.name) ?? new Map<number, Counts>();
    out.set(r.name, g);
    g.set(Number(t), r.c);
  }
  return out;
}

/** Per group: the difference a run (a thread born inside counts from 0). */
function diff(a: Snapshot, b: Snapshot, runs: number): Map<string, Counts> {
  const out = new Map<string, Counts>();
  for (const [name, threads] of b) {
    const sum: Counts = { ns: 0, vol: 0, faults: 0 };
    for (const [tid, c] of threads) {
      const before = a.get(name)?.get(tid) ?? { ns: 0, vol: 0, faults: 0 };
      sum.ns += c.ns - before.ns;
      sum.vol += c.vol - before.vol;
      sum.faults += c.faults - before.faults;
    }
    out.set(name, { ns: sum.ns / runs, vol: sum.vol / runs, faults: sum.faults / runs });
  }
  return out;
}

async function raw(): Promise<void> {
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  try {
    const context = await isolate.createContext();
    const value = await context.eval(`(async () => { ${PROGRAM} })()`, { promise: true, timeout: 10_000 });
    if (value !== 12) throw new Error('raw run failed');
  } finally {
    isolate.dispose();
  }
}

const nodeHost = (pid: number): number => {
  const kids = (() => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    } catch {
      return [];
    }
  })();
  return kids.length === 1 && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'node'
    ? Number(kids[0])
    : pid;
};

/** `perf record` of `pid` (all threads) into `file` until stopped (PERF_DIR). */
function perfRecord(pid: number, file: string): { stop: () => Promise<void> } {
  // PERF_EVENT (e.g. `page-faults`, `raw_syscalls:sys_enter`): every such event, not time samples.
  const what = process.env.PERF_EVENT ? ['-e', process.env.PERF_EVENT, '-c', '1'] : ['-F', '2999'];
  const p = spawn('perf', ['record', ...what, '-g', '-o', file, '-p', String(pid)], { stdio: 'ignore' });
  return {
    stop: () =>
      new Promise((resolve) => {
        p.on('exit', () => resolve());
        p.kill('SIGINT');
      }),
  };
}

function perfStat(pid: number): { stop: () => Promise<number> } {
  const p = spawn('perf', ['stat', '-x', ',', '-e', 'raw_syscalls:sys_enter', '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  p.stderr.on('data', (c: Buffer) => {
    err += c.toString();
  });
  return {
    stop: () =>
      new Promise((resolve) => {
        p.on('exit', () => resolve(Number(/^(\d+),/m.exec(err)?.[1] ?? Number.NaN)));
        p.kill('SIGINT');
      }),
  };
}

function print(label: string, groups: Map<string, Counts>): number {
  let total = 0;
  const parts: string[] = [];
  for (const [name, c] of [...groups].sort((x, y) => y[1].ns - x[1].ns)) {
    total += c.ns;
    if (c.ns < 1000 && c.vol < 0.05) continue;
    parts.push(
      `${name} ${(c.ns / 1e6).toFixed(3)} ms, ${c.vol.toFixed(2)} sleeps, ${c.faults.toFixed(1)} flt`,
    );
  }
  console.log(`  ${label.padEnd(16)} ${(total / 1e6).toFixed(3)} ms: ${parts.join('; ')}`);
  return total;
}

/** An engine with one host of the given script and environment, and its node process's pid. */
async function oneHost(
  label: string,
  script: string | undefined,
  env: Record<string, string>,
  addon: string | undefined = process.env[`${label}_ADDON`],
) {
  let pid: number | undefined;
  const engine = createEngine({
    maxIdlePerPartition: 1,
    // One host for every measured run: a replacement would change the pid read.
    maxRunsPerProcess: 1_000_000,
    maxHostResidentGrowthBytes: 0,
    hostEnv: env,
    wrapCommand: (command, args) => ({
      command,
      args: [
        ...EXTRA_FLAGS,
        ...args.map((a, i) =>
          script && /\/host\.[jt]s$/.test(a)
            ? script
            : addon && args[i - 1] === '--isolated-vm-addon'
              ? addon
              : a,
        ),
      ],
    }),
    onProcessEvent: (e) => {
      if (e.type === 'started' && e.pid !== undefined) pid = e.pid;
    },
  });
  const once = async () => {
    const out = await engine.execute(PROGRAM, { randomSeed: 'bench' });
    if (out.valueJson !== '12') throw new Error(`engine run failed: ${JSON.stringify(out.failure)}`);
  };
  await once();
  if (pid === undefined) throw new Error('no host pid');
  return { label, engine, once, pid: nodeHost(pid) };
}

const envOf = (text: string | undefined): Record<string, string> =>
  Object.fromEntries(
    (text ?? '')
      .split(/\s+/)
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );

async function main(): Promise<void> {
  const hosts = [await oneHost('A', process.env.A_SCRIPT, envOf(process.env.HOST_ENV))];
  // B: another host script (e.g. the base's host.ts in a copy of services/engine) or environment,
  // its rounds interleaved with A's (A B B A ...) in this one process.
  if (process.env.B_SCRIPT || process.env.B_ENV !== undefined || process.env.B_ADDON)
    hosts.push(await oneHost('B', process.env.B_SCRIPT, envOf(process.env.B_ENV ?? process.env.HOST_ENV)));
  try {
    for (let i = 0; i < WARM; i++) {
      await raw();
      for (const h of hosts) await h.once();
    }
    console.log(
      `engine-cpu-split: ${ROUNDS} rounds of ${RUNS} runs a mode, hosts ${hosts.map((h) => `${h.label} ${h.pid}`).join(', ')}, load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
    );
    const sums = new Map<string, { ms: number; n: number }>();
    for (let r = 0; r < ROUNDS; r++) {
      const rec = PERF_DIR && r === 0 ? perfRecord(process.pid, `${PERF_DIR}/raw.data`) : undefined;
      if (rec) await new Promise((res) => setTimeout(res, 500));
      const a = snapshot(process.pid);
      for (let i = 0; i < RUNS; i++) await raw();
      await rec?.stop();
      const rawSelf = diff(a, snapshot(process.pid), RUNS);
      console.log(`round ${r + 1}, ${new Date().toISOString().slice(11, 19)} UTC`);
      const rawTotal = print('raw (bench)', rawSelf);
      const order = r % 2 === 0 ? hosts : [...hosts].reverse();
      for (const h of order) {
        await new Promise((res) => setTimeout(res, 50));
        const self0 = snapshot(process.pid);
        const host0 = snapshot(h.pid);
        const hostPerf = SYSCALLS ? perfStat(h.pid) : undefined;
        const selfPerf = SYSCALLS ? perfStat(process.pid) : undefined;
        const recs =
          PERF_DIR && r === 0
            ? [
                perfRecord(h.pid, `${PERF_DIR}/host${h.label}.data`),
                perfRecord(process.pid, `${PERF_DIR}/engine${h.label}.data`),
              ]
            : [];
        if (SYSCALLS || recs.length) await new Promise((res) => setTimeout(res, 300));
        for (let i = 0; i < RUNS; i++) await h.once();
        // The last run's dispose and next isolate are the host's idle work: wait for them.
        await new Promise((res) => setTimeout(res, 30));
        const engSelf = diff(self0, snapshot(process.pid), RUNS);
        const engHost = diff(host0, snapshot(h.pid), RUNS);
        for (const x of recs) await x.stop();
        const hostSys = await hostPerf?.stop();
        const selfSys = await selfPerf?.stop();
        const rss =
          Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${h.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
        const e1 = print(`${h.label} engine side`, engSelf);
        console.log(`  ${h.label} host RSS ${rss.toFixed(1)} MiB`);
        const e2 = print(`${h.label} host`, engHost);
        const sum = sums.get(h.label) ?? { ms: 0, n: 0 };
        sum.ms += (e1 + e2) / rawTotal;
        sum.n++;
        sums.set(h.label, sum);
        console.log(
          `  ${h.label} total ${((e1 + e2) / 1e6).toFixed(3)} ms = ${((e1 + e2) / rawTotal).toFixed(2)}x raw` +
            (SYSCALLS
              ? `; syscalls a run: host ${((hostSys ?? 0) / RUNS).toFixed(1)}, engine side ${((selfSys ?? 0) / RUNS).toFixed(1)} (perf's own waits in)`
              : ''),
        );
      }
    }
    for (const [label, s] of sums)
      console.log(`${label}: mean ${(s.ms / s.n).toFixed(3)}x raw over ${s.n} rounds`);
  } finally {
    for (const h of hosts) await h.engine.close();
  }
}

await main();
