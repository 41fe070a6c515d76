/**
 * `node test/bench/proc-syscalls.ts`: what a trivial run costs each process of a local cluster in
 * the kernel — syscalls by name, page faults, context switches and wake-ups for nothing — per run
 * and per process kind (`processKind`: redis, gateway, runner, host), thread group by thread group
 * (`MainThread`, `V8Worker` = V8's platform threads, `libuv-worker`, `redis-server`,
 * `jemalloc_bg_thd`, `bio_*`: a thread's `comm` with its digits cut). On this PVM guest a syscall
 * costs ~1 µs, a first-touch fault 10–15 µs and a wake-up a few µs: their counts a run are real
 * costs, and a loaded machine moves them much less than a time.
 *
 * The cluster is `startOneClientCluster`'s (`BENCH_SLOTS`, default 4). First `PRIME` runs at 16
 * clients (default 2000: every slot's sandbox host started, the hot code compiled; before that V8's
 * compile jobs fault and wake its workers), then for each client count of `CLIENTS` (default
 * `1,16`) `WARM` runs (default 300) and `RUNS` counted (default 500): from /proc each thread's
 * minor and major faults and voluntary and involuntary switches (a thread started inside the window
 * counts from zero; one gone is reported), each kind's RSS at the end, Redis's dataset and
 * allocator growth; unless `SYSCALLS=0`, every syscall of the gateway, runner and Redis threads
 * with its result (`perf trace record`, switched on and off around exactly those runs). Wake-ups
 * for nothing: epoll waits with a timeout that returned no event (a timer), epoll calls with
 * timeout 0 (a poll: the loop had work queued), futex wakes that woke a thread, reads and recvs
 * that failed EAGAIN. `FAULTS=1`: where each thread group's faults come from (`perf record -e
 * page-faults -g`, the first frame naming a cause). `KEEP=1` keeps perf's files.
 *
 *   node test/bench/proc-syscalls.ts
 *   CLIENTS=1 RUNS=1000 SYSCALLS=0 node test/bench/proc-syscalls.ts
 *   ISLET_DEV_NODE_FLAGS=--single-threaded-gc FAULTS=1 node test/bench/proc-syscalls.ts
 *
 * `BENCH_ENV` (a JSON object) is extra environment for the gateway and the runner;
 * `ISLET_DEV_NODE_FLAGS` (devstack) extra Node flags for both. `TOP` (default 8) is how many
 * syscalls a thread group lists.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { createRedis } from '@islet/core';
import { processTree } from './capacity-cpu.ts';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';
import { processKind } from './ping-app.ts';
import { taskIds } from './proc-tasks.ts';

const RUNS = Number(process.env.RUNS ?? 500);
const WARM = Number(process.env.WARM ?? 300);
const PRIME = Number(process.env.PRIME ?? 2000);
const CLIENTS = (process.env.CLIENTS ?? '1,16').split(',').map(Number);
const SYSCALLS = process.env.SYSCALLS !== '0';
const FAULTS = process.env.FAULTS === '1';
const TOP = Number(process.env.TOP ?? 8);
const EXTRA_ENV = JSON.parse(process.env.BENCH_ENV ?? '{}') as Record<string, string>;

interface ThreadCounts {
  kind: string;
  /** `comm` with digits cut: one group for the pool's threads. */
  group: string;
  minflt: number;
  majflt: number;
  vol: number;
  invol: number;
}

/** Every thread of the cluster's processes (this bench and its tracer excluded), by tid. */
/** Resident memory of each kind's processes at the window's end, MB (the sandbox hosts summed). */
function residentMb(): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of processTree(process.pid).slice(1)) {
    try {
      const kind = processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
      const kb = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      if (kind) out.set(kind, (out.get(kind) ?? 0) + kb / 1024);
    } catch {
      // gone
    }
  }
  return out;
}

function threads(): Map<number, ThreadCounts> {
  const out = new Map<number, ThreadCounts>();
  for (const pid of processTree(process.pid).slice(1)) {
    let kind: string | undefined;
    try {
      kind = processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      continue;
    }
    if (!kind) continue;
    const tids = taskIds(pid);
    for (const tid of tids) {
      try {
        const base = `/proc/${pid}/task/${tid}`;
        const stat = readFileSync(`${base}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const status = readFileSync(`${base}/status`, 'utf8');
        const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
        out.set(Number(tid), {
          kind,
          group: readFileSync(`${base}/comm`, 'utf8').trim().replace(/\d+$/, ''),
          minflt: Number(f[7]),
          majflt: Number(f[9]),
          vol: field('voluntary_ctxt_switches'),
          invol: field('nonvoluntary_ctxt_switches'),
        });
      } catch {
        // gone meanwhile
      }
    }
  }
  return out;
}

/**
 * One syscall line of `perf trace -i`: `ms ( dur ms): comm/tid name(args) = ret [ERRNO (text)]`;
 * a call that blocked is two lines, its start (`name(args) ...`) and its end (`... [continued]:
 * name()) = ret`). perf leaves out arguments that are 0: an epoll wait without `timeout:` polled.
 */
const LINE =
  /^\s*[\d.?]+\s+\(\s*[\d.]*\s*(?:ms)?\s*\):\s+(.*?)\/(\d+)\s+(\.\.\.\s+\[continued\]:\s+)?(\w+)\((.*?)\)\s*(?:\)\s*)?(?:=\s+(-?\w+)(?:\s+(E[A-Z]+)(?: \(.*\))?)?|\.\.\.)\s*$/;

interface Idle {
  /** epoll waits with a timeout that returned no event: a timer's wake-up. */
  timerWakes: number;
  /** epoll calls with timeout 0 (a poll: the loop had more to do, no sleep). */
  polls: number;
  /** futex wakes that woke a thread (V8's platform workers, libuv's threadpool). */
  futexWakes: number;
  /** reads, recvs and accepts that failed EAGAIN: woken for nothing. */
  eagain: number;
}

interface SyscallCounts {
  /** By `kind:group`, then by syscall name. */
  calls: Map<string, Map<string, number>>;
  idle: Map<string, Idle>;
  lost: number;
}

function syscallCounts(text: string, labelOf: (tid: number, comm: string) => string): SyscallCounts {
  const calls = new Map<string, Map<string, number>>();
  const idle = new Map<string, Idle>();
  const startArgs = new Map<number, string>();
  let lost = 0;
  for (const line of text.split('\n')) {
    if (/LOST/.test(line)) lost++;
    const m = LINE.exec(line);
    if (!m) continue;
    const tid = Number(m[2]);
    const name = m[4]!;
    const ret = m[6];
    // A start line: its arguments wait for its end (a call running when tracing began has none).
    if (ret === undefined) {
      startArgs.set(tid, m[5]!);
      continue;
    }
    const args = m[3] ? (startArgs.get(tid) ?? '') : m[5]!;
    startArgs.delete(tid);
    const label = labelOf(tid, m[1]!);
    const byName = calls.get(label) ?? new Map<string, number>();
    calls.set(label, byName);
    byName.set(name, (byName.get(name) ?? 0) + 1);
    const i = idle.get(label) ?? { timerWakes: 0, polls: 0, futexWakes: 0, eagain: 0 };
    idle.set(label, i);
    if (name.startsWith('epoll_')) {
      if (!/timeout:/.test(args) && !m[3]) i.polls++;
      else if (ret === '0') i.timerWakes++;
    }
    if (name === 'futex' && /op: WAKE/.test(args) && Number(ret) > 0) i.futexWakes += Number(ret);
    if (m[7] === 'EAGAIN' && /^(read|readv|recv|recvfrom|recvmsg|accept4?)$/.test(name)) i.eagain++;
  }
  return { calls, idle, lost };
}

/**
 * `perf <args>` started disabled, switched on and off through its control pipe (fd 3, acks on fd
 * 4): it counts exactly the runs between, not its own start-up's second.
 */
function controlledPerf(args: string[]) {
  const perf = spawn('perf', [...args, '-D', '-1', '--control', 'fd:3,4'], {
    stdio: ['ignore', 'ignore', 'inherit', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((r) => perf.once('exit', () => r()));
  return {
    control: async (command: 'enable' | 'disable') => {
      const acked = new Promise<boolean>((r) => (perf.stdio[4] as Readable).once('data', () => r(true)));
      (perf.stdio[3] as Writable).write(`${command}\n`);
      if (!(await Promise.race([acked, exited.then(() => false)])))
        throw new Error(`perf exited before it acknowledged "${command}" (code ${perf.exitCode})`);
    },
    stop: async () => {
      perf.kill('SIGINT');
      await exited;
    },
  };
}

/**
 * Where a kind's faults come from: each sampled fault's first frame that names a cause (V8's heap
 * and compiler, glibc malloc, Node's C++, Redis's own functions), else its leaf, by thread group.
 */
function faultSources(
  data: string,
  labelOf: (tid: number, comm: string) => string,
): Map<string, Map<string, number>> {
  const text = execFileSync('perf', ['script', '-i', data, '-F', 'comm,tid,period,ip,sym'], {
    maxBuffer: 2 ** 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();
  const out = new Map<string, Map<string, number>>();
  for (const sample of text.split(/\n\s*\n/)) {
    const [head, ...frames] = sample.split('\n').filter((l) => l.trim());
    const m = head ? /^\s*(.*?)\s+(\d+)\s+(\d+)\s*$/.exec(head) : null;
    if (!m) continue;
    const syms = frames.map((f) =>
      f
        .trim()
        .replace(/^[0-9a-f]+\s*/, '')
        .replace(/\s+\(.*\)$/, ''),
    );
    // A leaf without a symbol is V8's generated code: JS allocating in the young generation.
    const cause = /^(\[unknown\])?$/.test(syms[0] ?? '')
      ? '(JS code)'
      : (syms.find((f) =>
          /v8::internal::(?!Scavenger::|BodyDescriptor|Heap::CollectGarbage)|node::|_int_malloc|malloc|^uv_|lpNew|sdsnewlen|createEmbeddedString|dictAdd/.test(
            f,
          ),
        ) ??
        syms[0] ??
        '?');
    const label = labelOf(Number(m[2]), m[1]!);
    const byCause = out.get(label) ?? new Map<string, number>();
    out.set(label, byCause);
    const short = cause
      .replace(/^v8::internal::/, '')
      .replace(/\(.*$/, '')
      .slice(0, 70);
    byCause.set(short, (byCause.get(short) ?? 0) + Number(m[3]));
  }
  return out;
}

const cluster = await startOneClientCluster('0.5', EXTRA_ENV);
const dir = mkdtempSync(join(tmpdir(), 'proc-syscalls-'));
const redis = createRedis(cluster.redisUrl);
/** Redis's dataset and its allocator's resident bytes: a fault a new page, while they grow. */
const redisMemory = async () => {
  const info = await redis.info('memory');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return { used: field('used_memory'), resident: field('allocator_resident') };
};
try {
  const once = trivialRun(cluster, 'proc-syscalls');
  console.log(
    `proc-syscalls: ${PRIME} runs at 16 clients, then a phase each ${WARM} warm and ${RUNS} counted; BENCH_SLOTS ${process.env.BENCH_SLOTS ?? 4}` +
      `${Object.keys(EXTRA_ENV).length ? `; BENCH_ENV ${JSON.stringify(EXTRA_ENV)}` : ''}`,
  );
  // V8 still compiles the gateway's and runner's hot code through the first thousand runs (its
  // workers' faults and mprotects, see cpu-split.ts): the phases read the steady state after it.
  await burst(once, PRIME, 16);
  for (const clients of CLIENTS) {
    await burst(once, WARM, clients);
    // The sandbox hosts come and go (a pid gone before perf attaches fails it): perf follows the
    // long-lived processes, and the hosts the runner starts meanwhile through inheritance.
    const pids = processTree(process.pid)
      .slice(1)
      .filter((pid) => {
        try {
          const kind = processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
          return kind !== undefined && kind !== 'host';
        } catch {
          return false;
        }
      });
    const data = join(dir, `trace-${clients}.data`);
    const tracer = SYSCALLS
      ? controlledPerf(['trace', 'record', '-q', '-o', data, '-p', pids.join(',')])
      : undefined;
    const faultData = join(dir, `faults-${clients}.data`);
    const faults = FAULTS
      ? controlledPerf(['record', '-q', '-e', 'page-faults', '-g', '-o', faultData, '-p', pids.join(',')])
      : undefined;
    if (tracer || faults) await new Promise((r) => setTimeout(r, 1500));
    await tracer?.control('enable');
    await faults?.control('enable');
    const memA = await redisMemory();
    const a = threads();
    const started = performance.now();
    await burst(once, RUNS, clients);
    const ms = performance.now() - started;
    const b = threads();
    const rss = residentMb();
    const memB = await redisMemory();
    await faults?.control('disable');
    await tracer?.control('disable');
    await tracer?.stop();
    await faults?.stop();
    console.log(`\n== ${clients} client(s): ${RUNS} runs in ${(ms / 1000).toFixed(1)} s; per run:`);
    // /proc counts by kind and thread group.
    const byGroup = new Map<
      string,
      { threads: number; minflt: number; majflt: number; vol: number; invol: number }
    >();
    const byKind = new Map<string, { minflt: number; majflt: number; vol: number; invol: number }>();
    for (const [tid, t] of b) {
      const o = a.get(tid) ?? { minflt: 0, majflt: 0, vol: 0, invol: 0 };
      const d = {
        minflt: t.minflt - o.minflt,
        majflt: t.majflt - o.majflt,
        vol: t.vol - o.vol,
        invol: t.invol - o.invol,
      };
      const key = `${t.kind}:${t.group}`;
      const g = byGroup.get(key) ?? { threads: 0, minflt: 0, majflt: 0, vol: 0, invol: 0 };
      g.threads++;
      const k = byKind.get(t.kind) ?? { minflt: 0, majflt: 0, vol: 0, invol: 0 };
      for (const f of ['minflt', 'majflt', 'vol', 'invol'] as const) {
        g[f] += d[f];
        k[f] += d[f];
      }
      byGroup.set(key, g);
      byKind.set(t.kind, k);
    }
    const gone = [...a.keys()].filter((tid) => !b.has(tid)).length;
    const per = (n: number) => (n / RUNS).toFixed(2);
    const labelOf = (tid: number, comm: string) => {
      const t = b.get(tid) ?? a.get(tid);
      return t ? `${t.kind}:${t.group}` : `new:${comm.replace(/\d+$/, '')}`;
    };
    let traced: SyscallCounts | undefined;
    if (tracer) {
      execFileSync('perf', ['trace', '-i', data, '-o', `${data}.txt`], { stdio: 'ignore' });
      traced = syscallCounts(readFileSync(`${data}.txt`, 'utf8'), labelOf);
    }
    const sources = faults ? faultSources(faultData, labelOf) : undefined;
    const kinds = [...new Set([...byKind.keys()])].sort();
    for (const kind of kinds) {
      const k = byKind.get(kind)!;
      // Only the hosts started inside the window are traced (the perf note above): no syscalls for them.
      const seen = kind === 'host' ? undefined : traced;
      const sys = seen
        ? [...seen.calls]
            .filter(([l]) => l.startsWith(`${kind}:`))
            .reduce((s, [, m]) => s + [...m.values()].reduce((x, y) => x + y, 0), 0)
        : Number.NaN;
      console.log(
        `${kind}: syscalls ${seen ? per(sys) : '-'}, faults ${per(k.minflt)} (major ${per(k.majflt)}), ` +
          `switches voluntary ${per(k.vol)}, involuntary ${per(k.invol)}; RSS ${(rss.get(kind) ?? 0).toFixed(0)} MB`,
      );
      for (const [key, g] of [...byGroup].filter(([l]) => l.startsWith(`${kind}:`)).sort()) {
        const m = seen?.calls.get(key);
        const total = m ? [...m.values()].reduce((x, y) => x + y, 0) : 0;
        const i = seen?.idle.get(key);
        if (!total && !g.minflt && !g.vol && !g.invol) continue;
        const top = m
          ? [...m]
              .sort((x, y) => y[1] - x[1])
              .slice(0, TOP)
              .map(([n, c]) => `${n} ${per(c)}`)
              .join(', ')
          : '';
        console.log(
          `  ${key.slice(kind.length + 1)} (${g.threads}): faults ${per(g.minflt)}, vol ${per(g.vol)}, invol ${per(g.invol)}` +
            (seen
              ? `; syscalls ${per(total)}${i ? `; epoll polls ${per(i.polls)}, timer wakes ${per(i.timerWakes)}, futex wakes ${per(i.futexWakes)}, EAGAIN ${per(i.eagain)}` : ''}`
              : '') +
            (top ? `\n      ${top}` : ''),
        );
        const bySource = sources?.get(key);
        if (bySource) {
          const all = [...bySource.values()].reduce((x, y) => x + y, 0);
          console.log(
            `      faults from: ${[...bySource]
              .sort((x, y) => y[1] - x[1])
              .slice(0, 4)
              .map(([c, n]) => `${c} ${Math.round((100 * n) / all)}%`)
              .join(', ')}`,
          );
        }
      }
    }
    console.log(
      `  redis memory a run: dataset ${((memB.used - memA.used) / RUNS / 1024).toFixed(1)} KB, ` +
        `allocator resident ${((memB.resident - memA.resident) / RUNS / 1024).toFixed(1)} KB (4 KB a fault)`,
    );
    if (gone) console.log(`  threads gone in the window (their counts lost): ${gone}`);
    if (traced?.lost) console.log(`  perf lost events ${traced.lost} times: syscall counts are short`);
  }
} finally {
  redis.disconnect();
  await cluster.stop();
  if (process.env.KEEP !== '1') rmSync(dir, { recursive: true, force: true });
}
