/**
 * Where a sequential run's time goes, syscall by syscall: a local cluster as `sequential.ts` sets
 * it up, `WARM` runs first, then `strace -f -ttt` attached to every process of the cluster (Redis,
 * gateway, runner, sandbox hosts) while `RUNS` more go one after another. Prints, for the run
 * whose latency is the median, each traced syscall between the client's send and its receipt,
 * labelled by process and thread, with the time since the send. strace slows each syscall, so
 * the gaps are inflated; what it shows is the order of the messages and every wait between them
 * (an `epoll_wait` that returns 0 is a timer firing, a read of EAGAIN a wake-up for nothing).
 *
 * `PERF=1` uses `perf record` of syscall tracepoints instead (a few µs a syscall, monotonic
 * clock): writes and reads with their sizes, fdatasync's entry and exit, epoll wake-ups; the
 * gaps are then close to the real ones, and the order is the same.
 *
 *   node test/bench/hop-trace.ts                 (BENCH_TENANT_SHARE default 0.5, RUNS 30)
 *   PERF=1 RUNS=60 node test/bench/hop-trace.ts
 *   TRACE='read,write,writev,epoll_wait,epoll_pwait,fdatasync' node test/bench/hop-trace.ts
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRedis, keys } from '@islet/core';
import { processTree } from './capacity-cpu.ts';
import { burst, stampedRun, startOneClientCluster } from './cluster-figures.ts';
import { hostAfterGaps } from './host-after-gaps.ts';
import { pickupGaps, type TracedRun } from './pickup-gaps.ts';
import { processKind } from './ping-app.ts';
import { stampsOf } from './stages.ts';

const RUNS = Number(process.env.RUNS ?? 30);
const WARM = Number(process.env.WARM ?? 300);
const TRACE =
  process.env.TRACE ??
  'read,write,writev,readv,sendto,recvfrom,sendmsg,recvmsg,epoll_wait,epoll_pwait,epoll_pwait2,fdatasync,fsync,futex,io_uring_enter,openat';
// In memory where there is one: perf's data written to the AOF's disk stretched Redis's fsyncs
// ~5× (round 35, `pickup`: fsync 1.9 ms p50 with it in /tmp, 0.38 in /dev/shm).
const OUT = process.env.OUT ?? `${existsSync('/dev/shm') ? '/dev/shm' : '/tmp'}/hop-trace-${process.pid}.txt`;
const PERF = process.env.PERF === '1';
/** `SCHED=1` (with PERF=1): the scheduler's switches and wake-ups too, each line with its CPU. */
const SCHED = process.env.SCHED === '1';
const PERF_EVENTS = [
  'syscalls:sys_enter_write',
  'syscalls:sys_enter_writev',
  'syscalls:sys_exit_read',
  'syscalls:sys_enter_fdatasync',
  'syscalls:sys_exit_fdatasync',
  'syscalls:sys_exit_epoll_wait',
  'syscalls:sys_exit_epoll_pwait',
  ...(SCHED ? ['sched:sched_switch', 'sched:sched_wakeup'] : []),
];

const kindOf = processKind;

const cluster = await startOneClientCluster('0.5');
// perf stamps with CLOCK_MONOTONIC (this kernel's perf has no realtime clock), strace with the wall clock.
const now = () =>
  PERF ? Number(process.hrtime.bigint()) / 1e9 : (performance.timeOrigin + performance.now()) / 1000;
try {
  const once = stampedRun(cluster, now);
  // `WARM_CLIENTS=4`: a first burst at that many clients starts as many sandbox hosts (a one-client
  // warm-up leaves one), as after the cluster bench's 16-client phase.
  const warmClients = Number(process.env.WARM_CLIENTS ?? 1);
  if (warmClients > 1) await burst(async () => void (await once()), 100, warmClients);
  for (let i = 0; i < WARM; i++) await once();
  const label = new Map<number, string>();
  const pids: number[] = [];
  for (const pid of processTree(process.pid).slice(1)) {
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    const kind = kindOf(cmd);
    if (!kind) continue;
    pids.push(pid);
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      let comm = '';
      try {
        comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      } catch {}
      label.set(Number(tid), `${kind}:${comm}`);
    }
  }
  // PERF=1: kernel tracepoints instead of ptrace (a few µs a syscall, not tens).
  const tracer = PERF
    ? spawn(
        'perf',
        [
          'record',
          '-q',
          '-k',
          'mono',
          '-o',
          `${OUT}.data`,
          '-p',
          pids.join(','),
          ...PERF_EVENTS.flatMap((e) => ['-e', e]),
        ],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      )
    : spawn(
        'strace',
        ['-f', '-ttt', '-T', '-e', `trace=${TRACE}`, '-o', OUT, ...pids.flatMap((p) => ['-p', String(p)])],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
  await new Promise((r) => setTimeout(r, 1500));
  const runs: { sent: number; received: number; id: string }[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once());
  await new Promise((r) => setTimeout(r, 300));
  if (tracer.exitCode !== null) throw new Error(`the tracer exited early (${tracer.exitCode})`);
  const exited = new Promise((r) => tracer.once('exit', r));
  tracer.kill('SIGINT');
  await exited;
  if (PERF)
    writeFileSync(
      OUT,
      execFileSync('perf', ['script', '-i', `${OUT}.data`, '-F', 'tid,cpu,time,event,trace'], {
        maxBuffer: 1 << 30,
      })
        .toString()
        // `tid [cpu] time: event: args` into strace's `tid time args` shape, the CPU last
        .replace(
          /^\s*(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(?:syscalls|sched):(\S+):?\s*(.*)$/gm,
          '$1 $3 $4 $5 cpu=$2',
        ),
    );
  const sorted = [...runs].sort((a, b) => a.received - a.sent - (b.received - b.sent));
  console.log(
    `latencies under the tracer (ms): ${sorted.map((r) => ((r.received - r.sent) * 1000).toFixed(1)).join(' ')}`,
  );
  const pick = sorted[Math.floor(sorted.length / 2)]!;
  const lines = readFileSync(OUT, 'utf8').split('\n');
  // Per run over the traced runs: each process's write-type syscalls and Redis's fsyncs, and with
  // PERF its reads and wake-ups (an epoll wait that returned events; one returning none is a
  // zero-timeout poll or a timer).
  const first = runs[0]!.sent;
  const last = runs.at(-1)!.received;
  const counts = new Map<string, number>();
  for (const line of lines) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(\w+):?\s*(\S*)/.exec(line);
    if (!m || Number(m[2]) < first || Number(m[2]) > last) continue;
    let call = m[3]!.replace(/^sys_(enter|exit)_/, '');
    if (PERF && m[3] === 'sys_exit_read') call = 'read';
    else if (PERF && /^sys_exit_epoll/.test(m[3]!)) {
      if (m[4] === '0x0') continue;
      call = 'wake-up';
    } else if (!/^(fdatasync|write|writev)$/.test(call) || m[3]!.startsWith('sys_exit_')) continue;
    const who = `${(label.get(Number(m[1])) ?? '?').split(':')[0]} ${call}`;
    counts.set(who, (counts.get(who) ?? 0) + 1);
  }
  console.log(
    `per run: ${[...counts]
      .sort()
      .map(([k, n]) => `${k} ${(n / runs.length).toFixed(2)}`)
      .join(', ')}`,
  );
  if (PERF) console.log(runnerGaps(lines, runs, label));
  if (PERF) console.log(endGaps(lines, runs, label));
  if (PERF) console.log(pickupGaps(lines, await withStamps(runs), label));
  if (PERF && SCHED) console.log(hostAfterGaps(lines, runs, label));
  console.log(`run ${pick.id}: ${((pick.received - pick.sent) * 1000).toFixed(2)} ms`);
  for (const line of lines) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const t = Number(m[2]);
    if (t < pick.sent - 0.0005 || t > pick.received + 0.0005) continue;
    const who = label.get(Number(m[1])) ?? `?:${m[1]}`;
    console.log(
      `${((t - pick.sent) * 1000).toFixed(3).padStart(8)}  ${who.padEnd(22)} ${m[3]!.slice(0, 150)}`,
    );
  }
  console.log(`full trace: ${OUT}`);
} finally {
  await cluster.stop();
}

/**
 * The runs with their `enqueued` and `pickedUp` stamps (the wall clock of `performance` in the
 * gateway and the runner) on the monotonic clock, by this process's offset between the two.
 */
async function withStamps(runs: { sent: number; received: number; id: string }[]): Promise<TracedRun[]> {
  const redis = createRedis(cluster.redisUrl);
  try {
    const offsetS =
      (performance.timeOrigin + performance.now()) / 1000 - Number(process.hrtime.bigint()) / 1e9;
    return await Promise.all(
      runs.map(async (run) => {
        const t = stampsOf(await redis.hget(keys.run(run.id), 'timings'));
        const mono = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000 - offsetS);
        return { ...run, enqueued: mono(t.enqueued), pickedUp: mono(t.pickedUp) };
      }),
    );
  } finally {
    redis.disconnect();
  }
}

/**
 * The runner's own gaps on a run's path, p50 (mean) over the traced runs (PERF only): from the
 * start's reply (its first read over 1 KiB in the run: the hand-off's pop, or the fused fetch's
 * answer) to its next write (the program to its host); from the host's `done` (its write to
 * stdout) to the runner's next read; from that read to the runner's next write (the end).
 */
function runnerGaps(
  lines: string[],
  runs: { sent: number; received: number }[],
  label: Map<number, string>,
): string {
  const events = lines.flatMap((line) => {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(\w+):?\s*(.*)$/.exec(line);
    const who = m && (label.get(Number(m[1])) ?? '').split(':')[0];
    return m && (who === 'runner' || who === 'host')
      ? [{ t: Number(m[2]), who, ev: m[3]!, args: m[4]! }]
      : [];
  });
  const gaps: Record<'reply → program' | 'done → read' | 'done read → end sent', number[]> = {
    'reply → program': [],
    'done → read': [],
    'done read → end sent': [],
  };
  for (const run of runs) {
    const inRun = events.filter((e) => e.t >= run.sent && e.t <= run.received);
    const next = (from: number, ok: (e: (typeof inRun)[number]) => boolean) =>
      inRun.find((e, i) => i > from && ok(e));
    const reply = inRun.findIndex(
      (e) => e.who === 'runner' && e.ev === 'sys_exit_read' && Number.parseInt(e.args, 16) > 1024,
    );
    if (reply < 0) continue;
    const program = next(reply, (e) => e.who === 'runner' && e.ev === 'sys_enter_write');
    if (!program) continue;
    gaps['reply → program'].push(program.t - inRun[reply]!.t);
    const done = inRun.findIndex(
      (e) => e.t > program.t && e.who === 'host' && e.ev === 'sys_enter_write' && /fd: 0x0+1,/.test(e.args),
    );
    if (done < 0) continue;
    const readAt = inRun.findIndex((e, i) => i > done && e.who === 'runner' && e.ev === 'sys_exit_read');
    if (readAt < 0) continue;
    gaps['done → read'].push(inRun[readAt]!.t - inRun[done]!.t);
    const end = next(readAt, (e) => e.who === 'runner' && /^sys_enter_write/.test(e.ev));
    if (end) gaps['done read → end sent'].push(end.t - inRun[readAt]!.t);
  }
  const fmt = (a: number[]) => {
    const s = [...a].sort((x, y) => x - y);
    const mean = a.reduce((x, y) => x + y, 0) / (a.length || 1);
    return `${((s[Math.floor(s.length / 2)] ?? Number.NaN) * 1000).toFixed(2)} (${(mean * 1000).toFixed(2)})`;
  };
  return `runner gaps, ms p50 (mean): ${Object.entries(gaps)
    .map(([k, a]) => `${k} ${fmt(a)} [${a.length}]`)
    .join('; ')}`;
}

/**
 * The end's hops, p50 (mean) over the traced runs (PERF only), each from the one before: the
 * host's `done` (its write to stdout) → the runner reads it → the runner writes the end (its next
 * write to Redis: a write of the size Redis then reads) → Redis reads it → Redis's fsync starts →
 * ends → Redis's reply to the runner (its first write after the fsync) → the message to the waiter
 * (Redis's write of the size the gateway then reads) → the gateway reads it → the gateway writes
 * the response → the client has it (the bench's own stamp, same clock).
 */
function endGaps(
  lines: string[],
  runs: { sent: number; received: number }[],
  label: Map<number, string>,
): string {
  const events = lines.flatMap((line) => {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(\w+):?\s*(.*)$/.exec(line);
    const who = m && (label.get(Number(m[1])) ?? '').split(':')[0];
    if (!m || !who) return [];
    const ev = m[3]!;
    const args = m[4]!;
    const size =
      ev === 'sys_exit_read'
        ? Number.parseInt(args, 16)
        : Number.parseInt(/count: (0x[0-9a-f]+)/.exec(args)?.[1] ?? 'NaN', 16);
    return [{ t: Number(m[2]), who, ev, size, stdout: /fd: 0x0+1,/.test(args) }];
  });
  const names = [
    'done → runner reads',
    'read → end written',
    'end written → Redis reads',
    'Redis reads → fsync starts (the script)',
    'fsync',
    'fsync → reply to runner',
    'reply → message to waiter',
    'message → gateway reads',
    'gateway reads → response written',
    'response written → client has it',
    'all: done → client',
    'all: end written → client',
  ] as const;
  const gaps = new Map<string, number[]>(names.map((n) => [n, []]));
  for (const run of runs) {
    const inRun = events.filter((e) => e.t >= run.sent && e.t <= run.received);
    const after = (from: number, ok: (e: (typeof inRun)[number]) => boolean) => {
      for (let i = from + 1; i < inRun.length; i++) if (ok(inRun[i]!)) return i;
      return -1;
    };
    // The host's last write to stdout in the run is its `done`.
    let done = -1;
    for (let i = inRun.length - 1; i >= 0 && done < 0; i--)
      if (inRun[i]!.who === 'host' && inRun[i]!.ev === 'sys_enter_write' && inRun[i]!.stdout) done = i;
    if (done < 0) continue;
    const read = after(done, (e) => e.who === 'runner' && e.ev === 'sys_exit_read');
    // The end: the runner's first write after it (to Redis: nothing else goes out before it).
    const end = read < 0 ? -1 : after(read, (e) => e.who === 'runner' && /^sys_enter_write/.test(e.ev));
    if (end < 0) continue;
    const redisRead = after(
      end,
      (e) =>
        e.who === 'redis' &&
        e.ev === 'sys_exit_read' &&
        (Number.isNaN(inRun[end]!.size) || e.size === inRun[end]!.size),
    );
    if (redisRead < 0) continue;
    const fsync = after(redisRead, (e) => e.who === 'redis' && e.ev === 'sys_enter_fdatasync');
    const fsynced = after(fsync, (e) => e.who === 'redis' && e.ev === 'sys_exit_fdatasync');
    const reply = after(fsynced, (e) => e.who === 'redis' && /^sys_enter_write/.test(e.ev));
    const gwRead = after(fsynced, (e) => e.who === 'gateway' && e.ev === 'sys_exit_read');
    const msg =
      gwRead < 0
        ? -1
        : after(
            fsynced,
            (e) => e.who === 'redis' && /^sys_enter_write/.test(e.ev) && e.size === inRun[gwRead]!.size,
          );
    const response = after(gwRead, (e) => e.who === 'gateway' && /^sys_enter_write/.test(e.ev));
    if ([fsync, fsynced, reply, gwRead, msg, response].some((i) => i < 0)) continue;
    const t = (i: number) => inRun[i]!.t;
    const hops = [
      t(read) - t(done),
      t(end) - t(read),
      t(redisRead) - t(end),
      t(fsync) - t(redisRead),
      t(fsynced) - t(fsync),
      t(reply) - t(fsynced),
      t(msg) - t(reply),
      t(gwRead) - t(msg),
      t(response) - t(gwRead),
      run.received - t(response),
      run.received - t(done),
      run.received - t(end),
    ];
    for (const [i, h] of hops.entries()) gaps.get(names[i]!)!.push(h);
  }
  const fmt = (a: number[]) => {
    const s = [...a].sort((x, y) => x - y);
    const mean = a.reduce((x, y) => x + y, 0) / (a.length || 1);
    return `${((s[Math.floor(s.length / 2)] ?? Number.NaN) * 1000).toFixed(3)} (${(mean * 1000).toFixed(3)})`;
  };
  return `the end's hops, ms p50 (mean) [runs]:\n${[...gaps]
    .map(([k, a]) => `  ${k.padEnd(42)} ${fmt(a)} [${a.length}]`)
    .join('\n')}`;
}
