/**
 * The end's stage ("end sent → end written → waiter woken → response") taken apart with every
 * process's scheduling in it: a one-client cluster as `sequential.ts` sets it up, `WARM` runs,
 * then `perf record -a` (the whole machine: the other processes that take a CPU are seen too) of
 * the scheduler's switches and wake-ups and the syscalls that carry the end, while `RUNS` more go
 * one after another. Per run, on the monotonic clock (the runner's `endSent` stamp brought over by
 * this process's wall/monotonic offset, the client's receipt stamped here):
 *
 *   endSent → the runner writes the end → Redis is woken → on a CPU → reads it → its fsync starts
 *   (the script) → ends → Redis writes the reply (runner) and the push (gateway) → the gateway is
 *   woken → on a CPU → reads → writes the response → the client is woken → on a CPU → reads →
 *   has the parsed answer.
 *
 * Each step's p50 and mean, and for each the time the process that step waits on was runnable but
 * not on a CPU (a wake-up's or a preemption's wait), with who held the CPUs meanwhile (by process
 * kind: runner, host, redis, gateway, client, or `other:<comm>`; both CPUs', then the CPU's it waited
 * on alone: a wake-up's target_cpu or the CPU it was preempted on). So the stage splits into
 * messages, fsync, each process's own work on a CPU, and waits for a CPU.
 *
 *   PERF_EVENTS_EXTRA=… RUNS=150 node test/bench/end-trace.ts
 *   BENCH_ENV='{"ISLET_…":"…"}' …   extra cluster settings
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRedis, keys } from '@islet/core';
import { benchNow } from './bench-clock.ts';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';
import { clusterThreads } from './cluster-threads.ts';
import { stampsOf } from './stages.ts';

const RUNS = Number(process.env.RUNS ?? 150);
const WARM = Number(process.env.WARM ?? 300);
const MIN_PUSH_BYTES = Number(process.env.MIN_PUSH_BYTES ?? 200);
// In memory where there is one: perf's data written to the AOF's disk stretched Redis's fsyncs
// ~5× (round 35, `pickup`); until round 37 this bench wrote it to /tmp.
const OUT = process.env.OUT ?? `${existsSync('/dev/shm') ? '/dev/shm' : '/tmp'}/end-trace-${process.pid}`;
const EVENTS = [
  'sched:sched_switch',
  'sched:sched_wakeup',
  'syscalls:sys_enter_write',
  'syscalls:sys_enter_writev',
  'syscalls:sys_exit_read',
  'syscalls:sys_enter_fdatasync',
  'syscalls:sys_exit_fdatasync',
];

const cluster = await startOneClientCluster('1', JSON.parse(process.env.BENCH_ENV ?? '{}'));
const mono = () => Number(process.hrtime.bigint()) / 1e9;
try {
  const once = stampedRun(cluster, mono);
  for (let i = 0; i < WARM; i++) await once();
  // Thread labels: the cluster's processes by kind, this process (the client) as `client`.
  const label = new Map<number, string>(clusterThreads().map((t) => [t.tid, `${t.kind}:${t.comm}`]));
  const main = (kind: string) =>
    [...label].find(
      ([, l]) =>
        l.startsWith(`${kind}:`) &&
        (kind !== 'redis' || l === 'redis:redis-server') &&
        (kind === 'redis' || l.endsWith(':MainThread') || kind === 'client'),
    )?.[0];
  const mains = {
    runner: main('runner'),
    redis: main('redis'),
    gateway: main('gateway'),
    client: process.pid,
  };
  if (Object.values(mains).some((t) => t === undefined))
    throw new Error(`threads not found: ${JSON.stringify(mains)}`);
  // The syscalls of the cluster's threads only (the whole machine's would cost every process a
  // record a syscall); the scheduler's events of every process.
  const only = [...label.keys()].map((tid) => `common_pid == ${tid}`).join(' || ');
  const args = EVENTS.flatMap((e) => (e.startsWith('syscalls:') ? ['-e', e, '--filter', only] : ['-e', e]));
  // The AOF's incremental file (Redis 7's multi-part AOF), whose size after the trace places each
  // traced AOF write in the file: which 4 KB blocks it touches (end-wake.ts).
  const aofRedis = createRedis(cluster.redisUrl);
  const cfg = async (name: string) => ((await aofRedis.config('GET', name)) as string[])[1] ?? '';
  const aofDir = join(await cfg('dir'), await cfg('appenddirname'));
  aofRedis.disconnect();
  const aofFile = join(
    aofDir,
    readdirSync(aofDir)
      .filter((f) => f.endsWith('.incr.aof'))
      .sort()
      .at(-1) ?? '',
  );
  const perf = spawn('perf', ['record', '-q', '-a', '-k', 'mono', '-o', `${OUT}.data`, ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await new Promise((r) => setTimeout(r, 1500));
  // Perf records by now: every AOF write after this stat is traced, in order, from this offset.
  const aofStatS = mono();
  const aofBytesBefore = statSync(aofFile).size;
  const runs: { sent: number; received: number; id: string }[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once());
  await new Promise((r) => setTimeout(r, 200));
  if (perf.exitCode !== null) throw new Error(`perf exited early (${perf.exitCode})`);
  const exited = new Promise((r) => perf.once('exit', r));
  perf.kill('SIGINT');
  await exited;
  const aofBytesAfter = statSync(aofFile).size;
  // The runner's endSent stamps (wall ms) on the monotonic clock.
  const redis = createRedis(cluster.redisUrl);
  const offsetS = benchNow() / 1000 - mono();
  const endSent = await Promise.all(
    runs.map(async (r) => {
      const t = stampsOf(await redis.hget(keys.run(r.id), 'timings'));
      return t.endSent === undefined ? Number.NaN : t.endSent / 1000 - offsetS;
    }),
  );
  redis.disconnect();
  const text = execFileSync('perf', ['script', '-i', `${OUT}.data`, '-F', 'tid,cpu,time,event,trace'], {
    maxBuffer: 1 << 30,
  }).toString();
  console.log(analyse(text, runs, endSent, label, mains as Record<keyof typeof mains, number>));
  // For `end-wake.ts`: the threads by kind, and each run's client send and receipt (monotonic s).
  writeFileSync(
    `${OUT}.labels.json`,
    JSON.stringify({ label: [...label], mains, runs, aofStatS, aofBytesBefore, aofBytesAfter }),
  );
  console.log(`perf data: ${OUT}.data (labels: ${OUT}.labels.json)`);
} finally {
  await cluster.stop();
}

interface Ev {
  tid: number;
  cpu: number;
  t: number;
  ev: string;
  args: string;
}

function analyse(
  text: string,
  runs: { sent: number; received: number }[],
  endSent: number[],
  label: Map<number, string>,
  mains: { runner: number; redis: number; gateway: number; client: number },
): string {
  const evs: Ev[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(?:syscalls|sched):(\w+):?\s*(.*)$/.exec(line);
    if (m) evs.push({ tid: Number(m[1]), cpu: Number(m[2]), t: Number(m[3]), ev: m[4]!, args: m[5]! });
  }
  const comms = new Map<number, string>();
  // Who runs on each CPU, when; and each thread's runnable-but-not-running intervals.
  const onCpu: { tid: number; cpu: number; from: number; to: number }[] = [];
  const running = new Map<number, { tid: number; from: number }>();
  // Where it waits: the CPU it was woken onto (target_cpu) or was preempted on.
  const runnableSince = new Map<number, { t: number; cpu: number }>();
  const waits = new Map<number, [number, number, number][]>();
  for (const e of evs) {
    if (e.ev === 'sched_switch') {
      const m = /prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)/.exec(
        e.args,
      );
      if (!m) continue;
      const prev = Number(m[2]);
      const next = Number(m[5]);
      comms.set(prev, m[1]!);
      comms.set(next, m[4]!);
      const was = running.get(e.cpu);
      if (was) onCpu.push({ tid: was.tid, cpu: e.cpu, from: was.from, to: e.t });
      running.set(e.cpu, { tid: next, from: e.t });
      // Preempted while runnable: it waits for a CPU from now.
      if (prev !== 0 && (m[3] === 'R' || m[3] === 'R+')) runnableSince.set(prev, { t: e.t, cpu: e.cpu });
      const since = runnableSince.get(next);
      if (since !== undefined) {
        const list = waits.get(next) ?? [];
        list.push([since.t, e.t, since.cpu]);
        waits.set(next, list);
        runnableSince.delete(next);
      }
    } else if (e.ev === 'sched_wakeup') {
      const m = /pid=(\d+)/.exec(e.args);
      const tid = Number(m?.[1]);
      const target = Number(/target_cpu=(\d+)/.exec(e.args)?.[1] ?? e.cpu);
      if ([...running.values()].some((r) => r.tid === tid)) continue;
      if (!runnableSince.has(tid)) runnableSince.set(tid, { t: e.t, cpu: target });
    }
  }
  const kindOf = (tid: number) =>
    tid === 0 ? 'idle' : (label.get(tid)?.split(':')[0] ?? `other:${comms.get(tid) ?? tid}`);
  const waitIn = (tid: number, a: number, b: number) =>
    (waits.get(tid) ?? []).reduce((s, [x, y]) => s + Math.max(0, Math.min(y, b) - Math.max(x, a)), 0);
  const cpuIn = (tid: number, a: number, b: number) =>
    onCpu.reduce((s, r) => (r.tid === tid ? s + Math.max(0, Math.min(r.to, b) - Math.max(r.from, a)) : s), 0);
  // Who held the CPUs while `tid` waited for one in [a, b].
  const heldWhileWaiting = new Map<string, number>();
  // The same, on the CPU it waited on only (the other CPU's occupant does not keep it waiting there).
  const heldOwnCpu = new Map<string, number>();
  const heldByStep = new Map<string, Map<string, number>>();
  const blame = (tid: number, a: number, b: number, step: string) => {
    const mine = heldByStep.get(step) ?? new Map<string, number>();
    heldByStep.set(step, mine);
    for (const [x, y, cpu] of waits.get(tid) ?? []) {
      const lo = Math.max(x, a);
      const hi = Math.min(y, b);
      if (hi <= lo) continue;
      for (const r of onCpu) {
        const o = Math.min(r.to, hi) - Math.max(r.from, lo);
        if (o > 0 && r.tid !== tid) {
          heldWhileWaiting.set(kindOf(r.tid), (heldWhileWaiting.get(kindOf(r.tid)) ?? 0) + o);
          mine.set(kindOf(r.tid), (mine.get(kindOf(r.tid)) ?? 0) + o);
          if (r.cpu === cpu) heldOwnCpu.set(kindOf(r.tid), (heldOwnCpu.get(kindOf(r.tid)) ?? 0) + o);
        }
      }
    }
  };
  const size = (e: Ev) =>
    e.ev === 'sys_exit_read'
      ? Number.parseInt(e.args, 16)
      : Number.parseInt(/count: (0x[0-9a-f]+)|vlen: (0x[0-9a-f]+)/.exec(e.args)?.[1] ?? 'NaN', 16);
  const names = [
    'endSent → runner writes the end',
    'written → Redis woken',
    'Redis woken → on a CPU',
    'on a CPU → reads the end',
    'read → fsync starts (the script)',
    'fsync',
    'fsync → push written',
    'push written → gateway woken',
    'gateway woken → on a CPU',
    'on a CPU → reads the push',
    'read → response written',
    'response written → client woken',
    'client woken → on a CPU',
    'on a CPU → reads the response',
    'read → answer parsed (client)',
    'all: endSent → answer',
  ];
  const steps = names.map(() => [] as number[]);
  const waitSteps = names.map(() => [] as number[]);
  const cpuSteps = names.map(() => [] as number[]);
  const extra: Record<string, number[]> = {
    'Redis writes the reply before the push (of runs)': [],
    'runs whose end was announced (of runs)': [],
    'announcement written → end written': [],
    'gateway CPU, announcement written → push written': [],
    'gateway CPU, read → response written': [],
    'runner CPU in the same window': [],
    'host CPU in the same window': [],
    'redis CPU in the same window': [],
  };
  let used = 0;
  let from = 0;
  const skipped = new Map<string, number>();
  const skip = (why: string) => skipped.set(why, (skipped.get(why) ?? 0) + 1);
  for (const [i, run] of runs.entries()) {
    const a = endSent[i]!;
    if (!Number.isFinite(a)) {
      skip('no endSent');
      continue;
    }
    while (from < evs.length && evs[from]!.t < a - 0.001) from++;
    const find = (start: number, ok: (e: Ev) => boolean) => {
      for (let j = start; j < evs.length && evs[j]!.t <= run.received + 0.001; j++) if (ok(evs[j]!)) return j;
      return -1;
    };
    const woken = (start: number, tid: number) =>
      find(start, (e) => e.ev === 'sched_wakeup' && new RegExp(`pid=${tid} `).test(e.args));
    const onAt = (start: number, tid: number) =>
      find(
        start,
        (e) =>
          (e.ev === 'sched_switch' && new RegExp(`next_pid=${tid}( |$)`).test(e.args)) ||
          (e.tid === tid && e.ev !== 'sched_switch'),
      );
    const startAt = find(from, (e) => e.t >= a);
    if (startAt < 0) continue;
    // The end: the first runner write after endSent whose bytes Redis reads and then fsyncs (an
    // announcement of the end's sealed values, `channels.runEnding`, goes before it: a PUBLISH,
    // not in the AOF).
    let endW = -1;
    let rRead = -1;
    let announced = -1;
    for (let w = startAt; ; w++) {
      w = find(w, (e) => e.tid === mains.runner && /^sys_enter_write/.test(e.ev));
      if (w < 0) break;
      // A writev's size is not in its record: then the next read.
      const sent = evs[w]!.ev === 'sys_enter_write' ? size(evs[w]!) : Number.NaN;
      const rr = find(
        w,
        (e) => e.tid === mains.redis && e.ev === 'sys_exit_read' && (Number.isNaN(sent) || size(e) === sent),
      );
      if (rr < 0) break;
      const next = find(
        rr + 1,
        (e) => e.tid === mains.redis && (e.ev === 'sys_exit_read' || e.ev === 'sys_enter_fdatasync'),
      );
      if (next >= 0 && evs[next]!.ev === 'sys_enter_fdatasync') {
        endW = w;
        rRead = rr;
        break;
      }
      if (announced < 0) announced = w;
    }
    if (endW < 0) {
      skip('no end write');
      continue;
    }
    const rWake = woken(endW, mains.redis);
    const rOn = rWake >= 0 && rWake < rRead ? onAt(rWake, mains.redis) : rRead;
    const fs = find(rRead, (e) => e.tid === mains.redis && e.ev === 'sys_enter_fdatasync');
    const fe = fs < 0 ? -1 : find(fs, (e) => e.tid === mains.redis && e.ev === 'sys_exit_fdatasync');
    // The pushed end: over MIN_PUSH_BYTES (200 since round 41's lean push, ~350 B with its framing;
    // it was 512 for the whole record).
    const gRead =
      fe < 0
        ? -1
        : find(fe, (e) => e.tid === mains.gateway && e.ev === 'sys_exit_read' && size(e) >= MIN_PUSH_BYTES);
    if (gRead < 0) {
      skip('no push read');
      continue;
    }
    const push = find(
      fe,
      (e) =>
        e.tid === mains.redis &&
        /^sys_enter_write/.test(e.ev) &&
        e.ev === 'sys_enter_write' &&
        size(e) === size(evs[gRead]!),
    );
    const pushEv = push < 0 ? undefined : evs[push];
    const reply = find(fe, (e) => e.tid === mains.redis && /^sys_enter_write/.test(e.ev) && e !== pushEv);
    if (push < 0) {
      skip('no push write');
      continue;
    }
    const gWake = woken(push, mains.gateway);
    const gOn = gWake >= 0 && gWake < gRead ? onAt(gWake, mains.gateway) : gRead;
    const resp = find(gRead, (e) => e.tid === mains.gateway && /^sys_enter_write/.test(e.ev));
    if (resp < 0) {
      skip('no response');
      continue;
    }
    const cRead = find(
      resp,
      (e) => e.tid === mains.client && e.ev === 'sys_exit_read' && size(e) === size(evs[resp]!),
    );
    if (cRead < 0) {
      skip('no client read');
      continue;
    }
    const cWake = woken(resp, mains.client);
    const cOn = cWake >= 0 && cWake < cRead ? onAt(cWake, mains.client) : cRead;
    const T = (j: number) => evs[j]!.t;
    const rW = rWake >= 0 && rWake < rRead ? T(rWake) : T(rRead);
    const gW = gWake >= 0 && gWake < gRead ? T(gWake) : T(gRead);
    const cW = cWake >= 0 && cWake < cRead ? T(cWake) : T(cRead);
    // Each step, and the process whose progress it waits on.
    const marks: [number, number, number][] = [
      [a, T(endW), mains.runner],
      [T(endW), rW, 0],
      [rW, T(rOn), mains.redis],
      [T(rOn), T(rRead), mains.redis],
      [T(rRead), T(fs), mains.redis],
      [T(fs), T(fe), 0],
      [T(fe), T(push), mains.redis],
      [T(push), gW, 0],
      [gW, T(gOn), mains.gateway],
      [T(gOn), T(gRead), mains.gateway],
      [T(gRead), T(resp), mains.gateway],
      [T(resp), cW, 0],
      [cW, T(cOn), mains.client],
      [T(cOn), T(cRead), mains.client],
      [T(cRead), run.received, mains.client],
      [a, run.received, 0],
    ];
    for (const [k, [x, y, tid]] of marks.entries()) {
      steps[k]!.push(y - x);
      waitSteps[k]!.push(tid ? waitIn(tid, x, y) : 0);
      cpuSteps[k]!.push(tid ? cpuIn(tid, x, y) : 0);
      if (tid) blame(tid, x, y, names[k]!);
    }
    extra['Redis writes the reply before the push (of runs)']!.push(reply < push ? 1 : 0);
    extra['runs whose end was announced (of runs)']!.push(announced >= 0 ? 1 : 0);
    if (announced >= 0) {
      extra['announcement written → end written']!.push(T(endW) - T(announced));
      extra['gateway CPU, announcement written → push written']!.push(
        cpuIn(mains.gateway, T(announced), T(push)),
      );
    }
    extra['gateway CPU, read → response written']!.push(cpuIn(mains.gateway, T(gRead), T(resp)));
    for (const who of ['runner', 'host', 'redis'] as const)
      extra[`${who} CPU in the same window`]!.push(
        [...label]
          .filter(([, l]) => l.startsWith(`${who}:`))
          .reduce((s, [tid]) => s + cpuIn(tid, T(gRead), T(resp)), 0),
      );
    used++;
  }
  const ms = (v: number) => (v * 1000).toFixed(3);
  const p50 = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)] ?? Number.NaN;
  const mean = (v: number[]) => v.reduce((x, y) => x + y, 0) / (v.length || 1);
  const out = [
    `the end's stage, step by step, ${used} of ${runs.length} runs${skipped.size ? ` (left out: ${[...skipped].map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}; ms p50 (mean); of the waiting process: on a CPU (mean), runnable but waiting for one (mean)`,
  ];
  for (const [k, n] of names.entries())
    out.push(
      `  ${n.padEnd(40)} ${ms(p50(steps[k]!)).padStart(8)} (${ms(mean(steps[k]!))})` +
        (cpuSteps[k]!.some((v) => v > 0) || waitSteps[k]!.some((v) => v > 0)
          ? `   cpu ${ms(mean(cpuSteps[k]!))}  wait ${ms(mean(waitSteps[k]!))}`
          : ''),
    );
  for (const [k, v] of Object.entries(extra))
    out.push(`  ${k}: p50 ${k.includes('of runs') ? mean(v).toFixed(2) : `${ms(p50(v))} (${ms(mean(v))})`}`);
  const total = [...heldWhileWaiting.values()].reduce((x, y) => x + y, 0);
  out.push(
    `  while a step's process waited for a CPU, the CPUs ran (ms a run): ${[...heldWhileWaiting]
      .sort((x, y) => y[1] - x[1])
      .slice(0, 12)
      .map(([k, v]) => `${k} ${ms(v / (used || 1))}`)
      .join(', ')} (all ${ms(total / (used || 1))})`,
  );
  const ownTotal = [...heldOwnCpu.values()].reduce((x, y) => x + y, 0);
  out.push(
    `    of which on the CPU it waited on (woken onto, or preempted on): ${[...heldOwnCpu]
      .sort((x, y) => y[1] - x[1])
      .slice(0, 8)
      .map(([k, v]) => `${k} ${ms(v / (used || 1))}`)
      .join(', ')} (all ${ms(ownTotal / (used || 1))})`,
  );
  for (const [step, m] of heldByStep) {
    const all = [...m.values()].reduce((x, y) => x + y, 0);
    if (all / (used || 1) < 0.01e-3) continue;
    out.push(
      `    ${step}: ${[...m]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 6)
        .map(([k, v]) => `${k} ${ms(v / (used || 1))}`)
        .join(', ')}`,
    );
  }
  return out.join('\n');
}
