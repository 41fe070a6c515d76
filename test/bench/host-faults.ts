/**
 * `node --no-node-snapshot test/bench/host-faults.ts`: page faults and page-table syscalls a trivial
 * run in one real sandbox host (the engine's spawn, one host for every measured run), by thread,
 * with the host's CPU a run and its idle resident memory.
 *
 * - faults: minflt/majflt of /proc/<pid>/stat (the whole process, exited threads included) and of
 *   each /proc/<pid>/task/<tid>/stat, summed by thread name (main thread `node`, V8's `V8Worker`s,
 *   isolated-vm's and libuv's threads);
 * - syscalls: `perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_{mmap,munmap,mprotect,madvise,brk,mremap}`
 *   on the host's pid (all its threads), started before a round and stopped after it (NO_PERF=1: none);
 * - CPU: the host's utime+stime a run; idle RSS: VmRSS once the round's last next isolate is made.
 *
 * A run here is the host's whole cycle: the run on a prepared isolate, its dispose and the next
 * run's isolate made while idle (host.ts' prepareAhead). `ROUNDS` (default 3) of `RUNS` (default 300).
 * HOST_FLAGS: node/V8 flags added to the host's command line (space separated); HOST_ENV: its
 * environment (`A=1 B=2`, added to what the engine gives it). JAIL=1: under the kernel launcher.
 * PERF=1: prints the host's pid and waits 2 s before each round (for `perf record -p`).
 * SPLIT=1: also `perf record --call-graph dwarf` of the round's page faults and page-table syscalls,
 * each given to the stage its stack shows (isolate made, context, harness compiled from its cache,
 * dispose, optimizing compile, GC, the program; first match in that order), a run.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';

const RUNS = Number(process.env.RUNS ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const TRIVIAL = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
/** PROGRAM: another program (its value is not checked); e.g. one that returns a large result. */
const PROGRAM = process.env.PROGRAM ?? TRIVIAL;
const TICK_MS = 10;
const EXTRA_FLAGS = (process.env.HOST_FLAGS ?? '').split(/\s+/).filter(Boolean);
const EXTRA_ENV = Object.fromEntries(
  (process.env.HOST_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
/** A command put before the host's (e.g. `taskset -c 0`): a probe only. */
const WRAP = (process.env.HOST_WRAP ?? '').split(/\s+/).filter(Boolean);
const SYSCALLS = ['mmap', 'munmap', 'mprotect', 'madvise', 'brk', 'mremap'] as const;

function fields(path: string): string[] | undefined {
  try {
    const text = readFileSync(path, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}
const comm = (path: string) => {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '?';
  }
};

/** The host's node process: the started pid, or (under the launcher) its node descendant. */
function nodePid(pid: number): number {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const f = fields(`/proc/${d}/stat`);
    if (f && Number(f[1]) === pid && comm(`/proc/${d}/comm`) === 'node') return nodePid(Number(d));
  }
  return pid;
}

interface Snapshot {
  minflt: number;
  majflt: number;
  ticks: number;
  byThread: Map<string, { minflt: number; majflt: number; ticks: number }>;
}
function snapshot(pid: number): Snapshot {
  const f = fields(`/proc/${pid}/stat`)!;
  const byThread = new Map<string, { minflt: number; majflt: number; ticks: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const t = fields(`/proc/${pid}/task/${tid}/stat`);
    if (!t) continue;
    const name = comm(`/proc/${pid}/task/${tid}/comm`).replace(/\d+$/, '#');
    const row = byThread.get(name) ?? { minflt: 0, majflt: 0, ticks: 0 };
    row.minflt += Number(t[7]);
    row.majflt += Number(t[9]);
    row.ticks += Number(t[11]) + Number(t[12]);
    byThread.set(name, row);
  }
  return { minflt: Number(f[7]), majflt: Number(f[9]), ticks: Number(f[11]) + Number(f[12]), byThread };
}
const residentMiB = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? 0) / 1024;

/** `perf stat` of the syscalls on pid: stop() gives each one's count. */
function perfStat(pid: number): { stop: () => Promise<Map<string, number>> } | undefined {
  if (process.env.NO_PERF) return undefined;
  const events = ['raw_syscalls:sys_enter', ...SYSCALLS.map((s) => `syscalls:sys_enter_${s}`)];
  const child = spawn('perf', ['stat', '-x', ',', '-e', events.join(','), '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (c: Buffer) => {
    err += c.toString();
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  return {
    async stop() {
      child.kill('SIGINT');
      await exited;
      const counts = new Map<string, number>();
      for (const line of err.split('\n')) {
        const [value, , event] = line.split(',');
        if (event && value !== undefined && /^\d+$/.test(value))
          counts.set(event.replace(/^.*sys_enter_?/, '') || 'all', Number(value));
      }
      return counts;
    },
  };
}

/** Stages by the frames their stacks hold; the first that matches wins. */
const STAGES: [string, RegExp][] = [
  ['dispose', /Isolate::Delete|Isolate::Deinit|Heap::TearDown|~IsolateEnvironment/],
  ['isolate', /StartupDeserializer|Snapshot::Initialize|IsolateCtor|Isolate::Init\b/],
  ['context', /ContextDeserializer|NewContext|Context::New|CreateContext|Genesis/],
  ['harness compile', /CodeSerializer|CompileScript|ScriptCompiler/],
  ['optimizing compile', /maglev::|compiler::|baseline::/],
  ['gc', /Scavenge|MarkCompact|Sweeper|CollectGarbage/],
  ['program', /Execution::|Builtins_JSEntry/],
];

/** `perf record` of faults and page-table syscalls on pid: stop() gives counts by (event, stage). */
function perfSplit(pid: number): { stop: () => Promise<Map<string, number>> } | undefined {
  if (!process.env.SPLIT) return undefined;
  const data = `/tmp/host-faults-${process.pid}.data`;
  const events = ['page-faults', ...SYSCALLS.map((s) => `syscalls:sys_enter_${s}`)].join(',');
  const child = spawn(
    'perf',
    ['record', '-q', '-c', '1', '-e', events, '--call-graph', 'dwarf,16384', '-p', String(pid), '-o', data],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  return {
    async stop() {
      child.kill('SIGINT');
      await exited;
      const script = spawn('perf', ['script', '-i', data, '-F', 'event,ip,sym'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let text = '';
      script.stdout.on('data', (c: Buffer) => {
        text += c.toString();
      });
      await new Promise<void>((r) => script.on('exit', () => r()));
      const counts = new Map<string, number>();
      for (const sample of text.split(/\n\s*\n/)) {
        const event = /(page-faults|sys_enter_\w+)/.exec(sample)?.[1]?.replace('sys_enter_', '');
        if (!event) continue;
        const stage = STAGES.find(([, re]) => re.test(sample))?.[0] ?? 'other';
        const key = `${event} ${stage}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      spawn('rm', ['-f', data]);
      return counts;
    },
  };
}

const pids: number[] = [];
const jail = process.env.JAIL
  ? (await import('@islet/kernel-sandbox')).wrapCommandForMode('read-only')
  : undefined;
const engine = createEngine({
  wrapCommand: (command, args) => {
    const withFlags = WRAP.length
      ? { command: WRAP[0]!, args: [...WRAP.slice(1), command, ...EXTRA_FLAGS, ...args] }
      : { command, args: [...EXTRA_FLAGS, ...args] };
    return jail ? jail(withFlags.command, withFlags.args) : withFlags;
  },
  ...(Object.keys(EXTRA_ENV).length ? { hostEnv: EXTRA_ENV } : {}),
  // One host for every measured run: its start and its replacement are not what is measured here.
  maxRunsPerProcess: 1_000_000,
  maxHostResidentGrowthBytes: 0,
  maxIdlePerPartition: 1,
  onProcessEvent: (e) => {
    if (e.type === 'started' && e.pid !== undefined) pids.push(e.pid);
  },
});
const settle = () => new Promise((r) => setTimeout(r, 300));
try {
  const once = async () => {
    const out = await engine.execute(PROGRAM);
    if (out.status !== 'completed' || (PROGRAM === TRIVIAL && out.valueJson !== '12'))
      throw new Error(`engine run failed: ${JSON.stringify(out.failure)}`);
  };
  for (let i = 0; i < 30; i++) await once();
  await settle();
  const pid = nodePid(pids[0]!);
  console.log(
    `host pid ${pid}; flags [${EXTRA_FLAGS.join(' ')}] env [${process.env.HOST_ENV ?? ''}]${jail ? ' (kernel launcher)' : ''}; idle RSS ${residentMiB(pid).toFixed(1)} MiB after 30 runs`,
  );
  const rows: string[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (process.env.PERF) {
      console.log(`host pid ${pid}`);
      await new Promise((res) => setTimeout(res, 2000));
    }
    const perf = perfStat(pid);
    const split = perfSplit(pid);
    if (perf || split) await new Promise((res) => setTimeout(res, split ? 1500 : 500));
    const a = snapshot(pid);
    for (let i = 0; i < RUNS; i++) await once();
    await settle();
    const b = snapshot(pid);
    const sys = (await perf?.stop()) ?? new Map<string, number>();
    if (pids.length !== 1) throw new Error('a host was started during a round');
    const per = (n: number) => (n / RUNS).toFixed(1);
    const threads = [...b.byThread]
      .map(([name, t]) => {
        const t0 = a.byThread.get(name) ?? { minflt: 0, majflt: 0, ticks: 0 };
        return { name, minflt: t.minflt - t0.minflt, ticks: t.ticks - t0.ticks };
      })
      .filter((t) => t.minflt > 0 || t.ticks > 0)
      .map((t) => `${t.name} ${per(t.minflt)}`)
      .join(', ');
    const sc = SYSCALLS.map((s) => `${s} ${per(sys.get(s) ?? 0)}`).join(' ');
    const line = `round ${r + 1}: faults ${per(b.minflt - a.minflt)} minor ${per(b.majflt - a.majflt)} major a run (${threads}); syscalls ${per(sys.get('all') ?? 0)}: ${sc}; host CPU ${(((b.ticks - a.ticks) * TICK_MS) / RUNS).toFixed(2)} ms a run; idle RSS ${residentMiB(pid).toFixed(1)} MiB`;
    rows.push(line);
    console.log(line);
    const stages = await split?.stop();
    if (stages) {
      const byEvent = new Map<string, { parts: string[]; n: number }>();
      for (const [key, n] of [...stages].sort((x, y) => y[1] - x[1])) {
        const [event, ...stage] = key.split(' ');
        const row = byEvent.get(event!) ?? { parts: [], n: 0 };
        row.parts.push(`${stage.join(' ')} ${per(n)}`);
        row.n += n;
        byEvent.set(event!, row);
      }
      // perf drops samples when its buffer fills (a dwarf stack each): the recorded total is shown.
      for (const [event, row] of byEvent)
        console.log(`  ${event} a run by stage (${per(row.n)} recorded): ${row.parts.join(', ')}`);
    }
  }
} finally {
  await engine.close();
}
