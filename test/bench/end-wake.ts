/**
 * `node test/bench/end-wake.ts <end-trace OUT>` (round 37, `end-hop`): what happens on the CPUs
 * from the end's fsync to the response, read from `end-trace.ts`'s perf data (`<OUT>.data`, the
 * scheduler's switches and wake-ups of the whole machine, the cluster's syscalls) and its thread
 * labels (`<OUT>.labels.json`). For each end (an fsync after which Redis writes the gateway a
 * message ≥ `MIN_PUSH_BYTES`, default 200: the pushed end), on CLOCK_MONOTONIC:
 *
 * - the order Redis writes its replies after the fsync (the runner's answer, the gateway's push)
 *   and the time from the fsync's return to each write;
 * - which of the two woken processes gets a CPU first, on which CPU (the waker's: Redis's, or the
 *   other one), and what the gateway waits behind when it does not run at once (the runner's turn,
 *   a sandbox host, Redis's own rest);
 * - the gateway's turn from the push's read to the response's write: preempted or not, by whom,
 *   and its length against what ran on its CPU in the `COLD_US` (default 1,000) µs before the
 *   wake (a sandbox host making its next isolate, the runner);
 * - the other CPU: how much of [fsync returns, response written] it sat idle.
 *
 *   OUT=/dev/shm/et RUNS=400 node test/bench/end-trace.ts && node test/bench/end-wake.ts /dev/shm/et
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pct } from './baselines.ts';

// 200 since round 41's lean push (~350 B with its framing; the whole record was over 512).
const MIN_PUSH_BYTES = Number(process.env.MIN_PUSH_BYTES ?? 200);
const COLD_US = Number(process.env.COLD_US ?? 1000);
const out = process.argv[2];
if (!out) throw new Error('usage: node test/bench/end-wake.ts <end-trace OUT prefix>');

const labels = JSON.parse(readFileSync(`${out}.labels.json`, 'utf8')) as {
  label: [number, string][];
  mains: { runner: number; redis: number; gateway: number; client: number };
};
const label = new Map(labels.label);
const aof = labels as { aofStatS?: number; aofBytesBefore?: number; aofBytesAfter?: number };
const { runner, redis, gateway, client } = labels.mains;
const kindOf = (tid: number) => (tid === 0 ? 'idle' : (label.get(tid)?.split(':')[0] ?? 'other'));

interface Ev {
  tid: number;
  cpu: number;
  t: number; // µs
  ev: string;
  args: string;
}
const text = execFileSync('perf', ['script', '-i', `${out}.data`, '-F', 'tid,cpu,time,event,trace'], {
  maxBuffer: 1 << 30,
  stdio: ['ignore', 'pipe', 'ignore'],
}).toString();
const evs: Ev[] = [];
for (const line of text.split('\n')) {
  const m = /^\s*(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(?:syscalls|sched):(\w+):?\s*(.*)$/.exec(line);
  if (m) evs.push({ tid: Number(m[1]), cpu: Number(m[2]), t: Number(m[3]) * 1e6, ev: m[4]!, args: m[5]! });
}
const size = (e: Ev) =>
  e.ev === 'sys_exit_read'
    ? Number.parseInt(e.args, 16)
    : Number.parseInt(/count: (0x[0-9a-f]+)/.exec(e.args)?.[1] ?? 'NaN', 16);
const isWrite = (e: Ev) => e.ev === 'sys_enter_write' || e.ev === 'sys_enter_writev';
const nextPid = (e: Ev) => Number(/next_pid=(\d+)/.exec(e.args)?.[1]);
const prevPid = (e: Ev) => Number(/prev_pid=(\d+)/.exec(e.args)?.[1]);
const prevState = (e: Ev) => /prev_state=(\S+)/.exec(e.args)?.[1] ?? '';
const wokenPid = (e: Ev) => Number(/ pid=(\d+)/.exec(e.args)?.[1]);
const targetCpu = (e: Ev) => Number(/target_cpu=(\d+)/.exec(e.args)?.[1]);

// Who ran on each CPU when: [from, to, tid] from the switches.
const ncpu = evs.reduce((n, e) => Math.max(n, e.cpu + 1), 0);
const spans: [number, number, number][][] = Array.from({ length: ncpu }, () => []);
const cur: { tid: number; from: number }[] = Array.from({ length: ncpu }, () => ({ tid: -1, from: 0 }));
for (const e of evs) {
  if (e.ev !== 'sched_switch') continue;
  const c = cur[e.cpu]!;
  if (c.tid >= 0) spans[e.cpu]!.push([c.from, e.t, c.tid]);
  cur[e.cpu] = { tid: nextPid(e), from: e.t };
}
/** µs each kind held `cpu` in [a, b]. */
const heldOn = (cpu: number, a: number, b: number) => {
  const m = new Map<string, number>();
  for (const [x, y, tid] of spans[cpu]!) {
    if (y <= a || x >= b) continue;
    const k = tid === gateway ? 'gateway' : tid === runner ? 'runner' : kindOf(tid);
    m.set(k, (m.get(k) ?? 0) + Math.min(y, b) - Math.max(x, a));
  }
  return m;
};

// Each AOF write (Redis's write to the fd it fdatasyncs) placed in the file from the size stat'd
// while perf recorded: the 4 KB blocks it touches (2: it crosses one; round 35 `pickup` §1).
const aofFd = evs
  .find((e) => e.tid === redis && e.ev === 'sys_enter_fdatasync')
  ?.args.match(/fd: (0x[0-9a-f]+)/)?.[1];
const blocksOf = new Map<number, number>();
let aofSum = 0;
if (aof.aofBytesBefore !== undefined && aof.aofStatS !== undefined && aofFd) {
  let at = aof.aofBytesBefore;
  for (const [k, e] of evs.entries()) {
    if (e.tid !== redis || e.ev !== 'sys_enter_write' || e.t < aof.aofStatS * 1e6) continue;
    if (!e.args.startsWith(`fd: ${aofFd},`)) continue;
    const n = size(e);
    blocksOf.set(k, Math.floor((at + n - 1) / 4096) - Math.floor(at / 4096) + 1);
    at += n;
    aofSum += n;
  }
  // Writes missed (or another writer): the offsets are not known.
  if (aof.aofBytesBefore + aofSum !== aof.aofBytesAfter) blocksOf.clear();
}

const rows: Record<string, number[]> = {};
const add = (k: string, v: number) => {
  rows[k] ??= [];
  rows[k].push(v);
};
const tally = new Map<string, number>();
const count = (k: string) => tally.set(k, (tally.get(k) ?? 0) + 1);
let ends = 0;

for (let i = 0; i < evs.length; i++) {
  const f = evs[i]!;
  if (f.tid !== redis || f.ev !== 'sys_exit_fdatasync') continue;
  // Redis's writes after the fsync, to its next read or fsync, each with the thread it woke.
  const writes: { at: number; t: number; woke?: number; bytes: number }[] = [];
  let j = i + 1;
  for (; j < evs.length; j++) {
    const e = evs[j]!;
    if (e.tid !== redis) continue;
    if (e.ev === 'sys_exit_read' || e.ev === 'sys_enter_fdatasync') break;
    if (isWrite(e)) writes.push({ at: j, t: e.t, bytes: size(e) });
    else if (e.ev === 'sched_wakeup' && writes.length > 0 && writes.at(-1)!.woke === undefined)
      writes.at(-1)!.woke = wokenPid(e);
  }
  // The push: the gateway's next read of ≥ MIN_PUSH_BYTES, matched to Redis's write of that size.
  let pushRead = -1;
  for (let k = i + 1; k < evs.length && evs[k]!.t < f.t + 20_000; k++) {
    const e = evs[k]!;
    if (e.tid === gateway && e.ev === 'sys_exit_read') {
      if (size(e) >= MIN_PUSH_BYTES) pushRead = k;
      break;
    }
  }
  if (pushRead < 0) continue;
  const push = writes.find((w) => w.bytes === size(evs[pushRead]!) || w.woke === gateway);
  if (!push) continue;
  const reply = writes.find((w) => w !== push && (w.woke === runner || Number.isNaN(w.bytes)));
  // The response: the gateway's first write after the push's read; the client's read of it.
  let resp = -1;
  for (let k = pushRead + 1; k < evs.length; k++)
    if (evs[k]!.tid === gateway && isWrite(evs[k]!)) {
      resp = k;
      break;
    }
  if (resp < 0) continue;
  let cRead = -1;
  for (let k = resp + 1; k < evs.length && evs[k]!.t < evs[resp]!.t + 20_000; k++)
    if (
      evs[k]!.tid === client &&
      evs[k]!.ev === 'sys_exit_read' &&
      (evs[resp]!.ev !== 'sys_enter_write' || size(evs[k]!) === size(evs[resp]!))
    ) {
      cRead = k;
      break;
    }
  ends++;
  const t0 = f.t;
  // This fsync's AOF write: Redis's last write to the AOF before the fsync began.
  let enter = i - 1;
  while (enter >= 0 && !(evs[enter]!.tid === redis && evs[enter]!.ev === 'sys_enter_fdatasync')) enter--;
  let aofWrite = enter - 1;
  while (aofWrite >= 0 && !(evs[aofWrite]!.tid === redis && isWrite(evs[aofWrite]!))) aofWrite--;
  const blocks = blocksOf.get(aofWrite);
  const endBlocks = blocks;
  const fsyncAt = enter >= 0 ? evs[enter]!.t : undefined;
  if (enter >= 0 && blocks !== undefined) {
    count(`the end's AOF write touches ${blocks} block(s) of 4 KB`);
    add(`fsync, the end's AOF write in ${blocks} block(s)`, f.t - evs[enter]!.t);
    add(`the end's AOF write, bytes (${blocks} block(s))`, size(evs[aofWrite]!));
  }
  count(
    reply === undefined
      ? 'order: push only (no runner reply seen)'
      : reply.t < push.t
        ? 'order: runner reply, then push'
        : 'order: push, then runner reply',
  );
  add('fsync returns → push written', push.t - t0);
  if (reply) add('fsync returns → runner reply written', reply.t - t0);
  // Wake-ups and first turns after the fsync.
  const wakeOf = (tid: number) => {
    for (let k = i + 1; k < evs.length && evs[k]!.t < t0 + 20_000; k++) {
      const e = evs[k]!;
      if (e.ev === 'sched_wakeup' && wokenPid(e) === tid)
        return { k, t: e.t, target: targetCpu(e), waker: e.tid };
    }
    return undefined;
  };
  const onCpuOf = (tid: number, from: number) => {
    for (let k = from; k < evs.length && evs[k]!.t < t0 + 20_000; k++) {
      const e = evs[k]!;
      if (e.ev === 'sched_switch' && nextPid(e) === tid) return { k, t: e.t, cpu: e.cpu };
    }
    return undefined;
  };
  /** The thread's turn from its switch-in at `k` to its next sleep (a switch out not runnable). */
  const turnOf = (tid: number, k: number) => {
    let on = 0;
    let since = evs[k]!.t;
    for (let q = k + 1; q < evs.length && evs[q]!.t < since + 20_000; q++) {
      const e = evs[q]!;
      if (e.ev !== 'sched_switch') continue;
      if (prevPid(e) === tid) {
        on += e.t - since;
        if (!prevState(e).startsWith('R')) return on;
      } else if (nextPid(e) === tid) since = e.t;
    }
    return Number.NaN;
  };
  const gw = wakeOf(gateway);
  const rw = wakeOf(runner);
  const gOn = gw ? onCpuOf(gateway, gw.k) : undefined;
  const rOn = rw ? onCpuOf(runner, rw.k) : undefined;
  const redisCpu = f.cpu;
  if (gw) {
    count(gw.target === redisCpu ? "gateway woken onto Redis's CPU" : 'gateway woken onto the other CPU');
    if (gOn) add('gateway woken → on a CPU', gOn.t - gw.t);
  }
  if (rw) count(rw.target === redisCpu ? "runner woken onto Redis's CPU" : 'runner woken onto the other CPU');
  if (gOn && rOn) {
    const gFirst = gOn.t < rOn.t;
    add(
      `fsync returns → gateway reads the push, ${gFirst ? 'gateway' : 'runner'} first on a CPU`,
      evs[pushRead]!.t - t0,
    );
    if (!gFirst) {
      add("runner first: its turn's length (µs on a CPU to its sleep)", turnOf(runner, rOn.k));
      count(
        `runner first, woken onto ${rw?.target === redisCpu ? "Redis's CPU" : 'the other CPU'}, push written ${push.t < rOn.t ? 'before' : 'after'} its turn began`,
      );
    }
    count(gFirst ? 'first on a CPU: gateway' : 'first on a CPU: runner');
    if (!gFirst && rOn.t < evs[resp]!.t) count("runner's turn before the response written");
  } else if (gOn) count('first on a CPU: gateway (runner not woken)');
  // What the gateway waited behind, on the CPU it was woken onto.
  if (gw && gOn && gOn.t - gw.t > 5) {
    const held = heldOn(gw.target, gw.t, gOn.t);
    const top = [...held].filter(([k]) => k !== 'gateway').sort((a, b) => b[1] - a[1])[0];
    count(`gateway waited > 5 µs, behind: ${top?.[0] ?? '?'}`);
    add(`gateway's wait behind ${top?.[0] ?? '?'}`, gOn.t - gw.t);
  }
  add('fsync returns → gateway reads the push', evs[pushRead]!.t - t0);
  // The gateway's turn: push read → response written; preempted?
  const turnA = evs[pushRead]!.t;
  const turnB = evs[resp]!.t;
  add('gateway: push read → response written', turnB - turnA);
  let offCpu = 0;
  let preemptedBy = '';
  for (let k = pushRead + 1; k < resp; k++) {
    const e = evs[k]!;
    if (e.ev === 'sched_switch' && prevPid(e) === gateway) {
      const back = onCpuOf(gateway, k + 1);
      if (back && back.t <= turnB) offCpu += back.t - e.t;
      preemptedBy ||= `${kindOf(nextPid(e))}${prevState(e) === 'R' || prevState(e) === 'R+' ? '' : ` (${prevState(e)})`}`;
    }
  }
  count(
    preemptedBy ? `gateway's turn interrupted, first by ${preemptedBy}` : "gateway's turn not interrupted",
  );
  add("gateway's turn off its CPU", offCpu);
  // Its length against what ran on its CPU just before it woke (the cache it finds).
  const gCpu = gOn?.cpu ?? evs[pushRead]!.cpu;
  const before = heldOn(gCpu, (gw?.t ?? turnA) - COLD_US, gw?.t ?? turnA);
  const hostBefore = before.get('host') ?? 0;
  add(
    `gateway's turn, host ran < 50 µs on its CPU in the ${COLD_US} µs before`,
    hostBefore < 50 ? turnB - turnA - offCpu : Number.NaN,
  );
  add(
    `gateway's turn, host ran ≥ 50 µs on its CPU in the ${COLD_US} µs before`,
    hostBefore >= 50 ? turnB - turnA - offCpu : Number.NaN,
  );
  add(`host µs on the gateway's CPU in the ${COLD_US} µs before its wake`, hostBefore);
  add(`runner µs on the gateway's CPU in the ${COLD_US} µs before its wake`, before.get('runner') ?? 0);
  count(gCpu === redisCpu ? "gateway's turn on Redis's CPU" : "gateway's turn on the other CPU");
  // The other CPU meanwhile.
  for (let c = 0; c < ncpu; c++) {
    if (c === gCpu) continue;
    const h = heldOn(c, t0, turnB);
    add(
      'the other CPU idle, fsync returns → response written (share)',
      (h.get('idle') ?? 0) / Math.max(1, turnB - t0),
    );
  }
  if (cRead >= 0) {
    add('response written → client read', evs[cRead]!.t - turnB);
    add('fsync returns → client reads the response', evs[cRead]!.t - t0);
    if (endBlocks !== undefined && fsyncAt !== undefined)
      add(
        `fsync starts → client reads the response, the end's AOF write in ${endBlocks} block(s)`,
        evs[cRead]!.t - fsyncAt,
      );
    count(evs[cRead]!.cpu === gCpu ? "client read on the gateway's CPU" : 'client read on the other CPU');
  }
}

console.log(`ends found: ${ends} (${out}.data)`);
if (aof.aofBytesAfter !== undefined)
  console.log(
    `AOF: ${aof.aofBytesBefore} B at the stat, ${aofSum} B of traced writes after it, ${aof.aofBytesAfter} B at the end (${aof.aofBytesBefore! + aofSum === aof.aofBytesAfter ? 'consistent' : 'NOT consistent: blocks not read'})`,
  );
for (const [k, v] of [...tally].sort()) console.log(`  ${k.padEnd(64)} ${String(v).padStart(5)}`);
for (const [k, raw] of Object.entries(rows)) {
  const v = raw.filter((x) => Number.isFinite(x));
  if (v.length === 0) continue;
  const share = k.includes('(share)');
  const f = (x: number) => (share ? x.toFixed(2) : x.toFixed(1));
  console.log(
    `  ${k.padEnd(64)} n ${String(v.length).padStart(4)}  p50 ${f(pct(v, 50)).padStart(7)}  mean ${f(v.reduce((a, b) => a + b, 0) / v.length).padStart(7)}  p90 ${f(pct(v, 90)).padStart(7)}`,
  );
}
