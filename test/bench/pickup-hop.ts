/**
 * The pick-up's hop end to end, one clock (round 33, `pickup-hop`): from the gateway's EVALSHA
 * reaching its socket to the runner's processor, on a local cluster as `sequential.ts` sets it up
 * (fair share 0.5 unless BENCH_TENANT_SHARE), `WARM` runs, then `RUNS` one after another.
 *
 * - the gateway and the runner: `pickup-hop-preload.mjs` (NODE_OPTIONS `--import`; no product code
 *   touched): socket writes and `data` events, ioredis's parsed replies, BullMQ's take and start;
 * - Redis: `perf record` of its own syscalls only (`-p`, CLOCK_MONOTONIC: the read of the EVALSHA,
 *   the AOF's write, fdatasync's entry and exit, the replies' writes), `PERF=0` to leave it out;
 *   SLOWLOG at 0 µs (each script's own time in Redis), `INFO commandstats` and `LATENCY LATEST`
 *   over the timed runs;
 * - each run's `enqueued` and `pickedUp` stamps (its record's `timings`; written on the wall clock
 *   of `performance` in each process, moved here by this process's offset, so they carry each
 *   process's `timeOrigin` error, tens to hundreds of µs: the hops between them are on one clock).
 *
 * `PIN=split`: the runner on CPU 0, Redis and the gateway on CPU 1; `PIN=same`: all three on CPU 1.
 *
 * Prints each hop's p50 / mean / p90 from the one before, µs, over the runs where all were found;
 * which of the two woken processes ran first after the fsync (the gateway's reply or the runner's
 * hand-off); and the order of the replies Redis wrote.
 *
 *   bash scripts/toolchain.sh node test/bench/pickup-hop.ts        (RUNS 300, WARM 200)
 *
 * The runner's own steps between BullMQ's (the pop's continuation, the member's decode, the stand-in
 * returning, `takeHanded`'s answer read and job built) need stamp points in its code:
 * `git apply test/bench/pickup-hop.patch` first (`globalThis.__pickupHop`, which the preload sets),
 * `git apply -R` after. That patch no longer applies; round 40's `seq-stages.patch` stamps the same
 * path anew (the processor, slot, lease, `pickedUp`, the attempt's start, the engine's host and run)
 * and the end's (`end-turn.ts`). The program's write to its host (`pipe-write`, the preload's
 * `fs.writeSync`) ends the runner's part: the rows from `pickedUp` and from its `data` to it. Every runner stamp from its data event to the processor is then listed
 * with the one before it (to `h-engine`, the engine's call, where the patch stamps it: round 35
 * `runner-js` added the record's two opens, `h-code-opened` and `h-request-opened`, and `h-begun`).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis, keys } from '@islet/core';
import { pct } from './baselines.ts';
import { processTree } from './capacity-cpu.ts';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';
import { processKind } from './ping-app.ts';
import { stampsOf } from './stages.ts';

const RUNS = Number(process.env.RUNS ?? 300);
const WARM = Number(process.env.WARM ?? 200);
const PERF = process.env.PERF !== '0';
// In memory where there is one: perf's data on the AOF's disk would stretch Redis's fsyncs.
const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pickup-hop-'));
const preload = new URL('./pickup-hop-preload.mjs', import.meta.url).pathname;

const mono = () => Number(process.hrtime.bigint()) / 1e9;
const cluster = await startOneClientCluster('0.5', {
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${preload}`.trim(),
  PICKUP_HOP_DIR: dir,
});
const redis = createRedis(cluster.redisUrl);
let perf: ChildProcess | undefined;
try {
  const once = stampedRun(cluster, mono);
  for (let i = 0; i < WARM; i++) await once();
  const pidOf = (kind: string) =>
    processTree(process.pid)
      .slice(1)
      .find((pid) => {
        try {
          return processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')) === kind;
        } catch {
          return false;
        }
      });
  const redisPid = pidOf('redis');
  // NICE_GATEWAY=5: the gateway's threads at that nice value, so where it and the runner are woken
  // together by the fsync (its reply, the runner's hand-off) and one CPU is free, the runner tends
  // to get it: a probe of how much of the runner's wake-up is that race, not a setting to keep.
  const gatewayPid = pidOf('gateway');
  if (process.env.NICE_GATEWAY && gatewayPid !== undefined)
    for (const tid of readdirSync(`/proc/${gatewayPid}/task`))
      execFileSync('renice', ['-n', process.env.NICE_GATEWAY, '-p', tid], { stdio: 'ignore' });
  // PIN=split: the runner's threads on CPU 0, Redis's and the gateway's on CPU 1, so the fsync's two
  // wake-ups (the runner's hand-off, the gateway's reply) never share a CPU; PIN=same: all three on
  // CPU 1 (what this VM's scheduler mostly does unpinned, round 35 `pickup`). Sandbox hosts as they are.
  const runnerPid = pidOf('runner');
  const pin = (cpu: string, pid: number | undefined) =>
    pid !== undefined && execFileSync('taskset', ['-a', '-p', '-c', cpu, String(pid)], { stdio: 'ignore' });
  if (process.env.PIN === 'split' || process.env.PIN === 'same') {
    pin(process.env.PIN === 'split' ? '0' : '1', runnerPid);
    pin('1', redisPid);
    pin('1', gatewayPid);
  }
  if (PERF && redisPid !== undefined) {
    perf = spawn(
      'perf',
      [
        'record',
        '-q',
        '-k',
        'mono',
        '-o',
        join(dir, 'redis.data'),
        '-p',
        String(redisPid),
        ...[
          'syscalls:sys_exit_read',
          'syscalls:sys_enter_write',
          'syscalls:sys_enter_writev',
          'syscalls:sys_enter_fdatasync',
          'syscalls:sys_exit_fdatasync',
          'syscalls:sys_exit_epoll_wait',
        ].flatMap((e) => ['-e', e]),
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    await new Promise((r) => setTimeout(r, 1500));
  }
  await redis.config('SET', 'slowlog-log-slower-than', '0');
  await redis.config('SET', 'slowlog-max-len', String(RUNS * 60));
  await redis.config('SET', 'latency-monitor-threshold', '1');
  await redis.slowlog('RESET');
  await redis.call('LATENCY', 'RESET');
  const before = await redis.info('commandstats');
  const runs: { sent: number; received: number; id: string }[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once());
  const after = await redis.info('commandstats');
  const slow = (await redis.slowlog('GET', RUNS * 60)) as [number, number, number, string[]][];
  const latency = await redis.call('LATENCY', 'LATEST');
  await redis.config('SET', 'slowlog-log-slower-than', '10000');
  if (perf) {
    const exited = new Promise((r) => perf?.once('exit', r));
    perf.kill('SIGINT');
    await exited;
  }
  await new Promise((r) => setTimeout(r, 1200)); // the preloads' flush
  const offsetS = (performance.timeOrigin + performance.now()) / 1000 - mono();
  const timed = await Promise.all(
    runs.map(async (run) => {
      // Compact since round 38 (`aof-cut`): stages.ts' reader takes both forms.
      const t = stampsOf(await redis.hget(keys.run(run.id), 'timings'));
      const m = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000 - offsetS);
      return { ...run, enqueued: m(t.enqueued), pickedUp: m(t.pickedUp) };
    }),
  );
  console.log(report(timed, readStamps(), perf ? redisEvents() : [], slow, before, after, latency));
} finally {
  perf?.kill('SIGINT');
  redis.disconnect();
  await cluster.stop();
  // KEEP=1: the stamp files and Redis's perf data stay for a look of one's own.
  if (process.env.KEEP === '1') console.log(`stamps kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}

interface Ev {
  t: number;
  who: 'gateway' | 'runner' | 'redis';
  ev: string;
  fd: number;
  size: number;
}

function readStamps(): Ev[] {
  const out: Ev[] = [];
  for (const f of readdirSync(dir)) {
    const m = /^pickup-hop-(gateway|runner)-\d+\.txt$/.exec(f);
    if (!m) continue;
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const [ns, ev, a, b] = line.split(' ');
      if (!ns || !ev || ev === 'clock') continue;
      out.push({
        t: Number(BigInt(ns)) / 1e9,
        who: m[1] as 'gateway' | 'runner',
        ev,
        fd: Number(a ?? -1),
        size: Number(b ?? 0),
      });
    }
  }
  return out.sort((x, y) => x.t - y.t);
}

function redisEvents(): Ev[] {
  const text = execFileSync('perf', ['script', '-i', join(dir, 'redis.data'), '-F', 'time,event,trace'], {
    maxBuffer: 1 << 30,
  }).toString();
  const out: Ev[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+\.\d+):\s+syscalls:sys_(enter|exit)_(\w+):?\s*(.*)$/.exec(line);
    if (!m) continue;
    const [, t, side, call, args] = m as unknown as [string, string, string, string, string];
    if (call.startsWith('epoll') && /^0x0\b/.test(args)) continue;
    const fd = Number.parseInt(/fd: (0x[0-9a-f]+)/.exec(args)?.[1] ?? '-1', 16);
    const size =
      call === 'read'
        ? Number.parseInt(args, 16)
        : Number.parseInt(/count: (0x[0-9a-f]+)/.exec(args)?.[1] ?? '0', 16);
    out.push({
      t: Number(t),
      who: 'redis',
      ev: `${call}${call === 'fdatasync' ? `-${side}` : ''}`,
      fd,
      size,
    });
  }
  return out;
}

function report(
  runs: { sent: number; received: number; id: string; enqueued?: number; pickedUp?: number }[],
  stamps: Ev[],
  redisEv: Ev[],
  slow: [number, number, number, string[]][],
  before: string,
  after: string,
  latency: unknown,
): string {
  const all = [...stamps, ...redisEv].sort((a, b) => a.t - b.t);
  const names = [
    'enqueued (gateway JS) → EVALSHA to its socket',
    'EVALSHA written → Redis reads it',
    'Redis read → AOF write (the script)',
    'AOF write → fsync starts',
    'fsync',
    'fsync end → hand-off written to the runner',
    'hand-off written → runner `data` event',
    'EVALSHA written → runner `data` (no perf)',
    'runner `data` → ioredis parsed (bzpopmin reply)',
    'parsed → BullMQ waitForJob resolved',
    'waited → takeHanded builds the job',
    'Job.fromJSON',
    'fromJSON → BullMQ processJob',
    'processJob → processor (callProcessJob)',
    'processor → pickedUp stamp',
    'all: enqueued → pickedUp',
    'all: runner `data` → processor',
    'gateway reply `data` − runner `data` (+: runner first)',
    'gateway: its reply `data` → the end of that turn (its JS on the reply)',
    'runner: its `data` → the end of that turn',
    'hand-off written → runner `data`, runs where the runner came first',
    'hand-off written → runner `data`, runs where the gateway came first',
    "Redis: the hand-off's write → the gateway's reply's write",
    'pickedUp stamp → program written to the host (pipe)',
    'all: runner `data` → program written to the host (its part of the path)',
    'program written → the end of that turn (off the path)',
    'all: enqueued → program written to the host',
    'take → BullMQ processJob (the job built: fromJSON or its own)',
  ] as const;
  const col = new Map<string, number[]>(names.map((n) => [n, []]));
  const put = (n: (typeof names)[number], from: number | undefined, to: number | undefined) => {
    if (from !== undefined && to !== undefined) col.get(n)!.push((to - from) * 1e6);
  };
  const steps = new Map<string, number[]>();
  let sameTurn = 0;
  let laterTurn = 0;
  let runnerFirst = 0;
  let gatewayFirst = 0;
  let handoffWriteFirst = 0;
  let handoffWriteSecond = 0;
  for (const run of runs) {
    const ev = all.filter((e) => e.t >= run.sent && e.t <= run.received);
    const find = (from: number, ok: (e: Ev) => boolean) => ev.find((e) => e.t >= from && ok(e));
    const gw = find(run.sent, (e) => e.who === 'gateway' && e.ev === 'write-evalsha');
    if (!gw) continue;
    const rdata = find(gw.t, (e) => e.who === 'runner' && e.ev === 'data' && e.size >= 1000);
    const gdata = find(gw.t, (e) => e.who === 'gateway' && e.ev === 'data');
    put(names[0], run.enqueued, gw.t);
    put(names[7], gw.t, rdata?.t);
    if (gdata)
      put(names[18], gdata.t, find(gdata.t, (e) => e.who === 'gateway' && e.ev === 'turn-end-evalsha')?.t);
    if (rdata)
      put(names[19], rdata.t, find(rdata.t, (e) => e.who === 'runner' && e.ev === 'turn-end-bzpopmin')?.t);
    if (rdata && gdata) {
      put(names[17], rdata.t, gdata.t);
      if (rdata.t < gdata.t) runnerFirst++;
      else gatewayFirst++;
    }
    if (redisEv.length) {
      const rread = find(gw.t, (e) => e.who === 'redis' && e.ev === 'read' && e.size > 0);
      const fsIn = rread && find(rread.t, (e) => e.who === 'redis' && e.ev === 'fdatasync-enter');
      const aof =
        fsIn &&
        [...ev]
          .reverse()
          .find((e) => e.t <= fsIn.t && e.who === 'redis' && e.ev === 'write' && e.fd === fsIn.fd);
      const fsOut = fsIn && find(fsIn.t, (e) => e.who === 'redis' && e.ev === 'fdatasync-exit');
      const hand =
        fsOut &&
        rdata &&
        find(fsOut.t, (e) => e.who === 'redis' && /^write/.test(e.ev) && e.size === rdata.size);
      // The other reply the fsync released: the first write after it on another connection (a
      // writev's size is not in perf's record, so not matched by size).
      const gwReply =
        fsOut &&
        hand &&
        find(
          fsOut.t,
          (e) => e.who === 'redis' && /^write/.test(e.ev) && e.fd !== hand.fd && e.fd !== fsIn.fd,
        );
      put(names[1], gw.t, rread?.t);
      put(names[2], rread?.t, aof?.t);
      put(names[3], aof?.t, fsIn?.t);
      put(names[4], fsIn?.t, fsOut?.t);
      put(names[5], fsOut?.t, hand?.t);
      put(names[6], hand?.t, rdata?.t);
      if (rdata && gdata) put(rdata.t < gdata.t ? names[20] : names[21], hand?.t, rdata.t);
      if (hand && gwReply) {
        col.get(names[22])!.push((gwReply.t - hand.t) * 1e6);
        if (hand.t <= gwReply.t) handoffWriteFirst++;
        else handoffWriteSecond++;
      }
    }
    if (!rdata) continue;
    const parsed = find(rdata.t, (e) => e.who === 'runner' && e.ev === 'reply-bzpopmin');
    const waited = parsed && find(parsed.t, (e) => e.who === 'runner' && e.ev === 'waited');
    const take = waited && find(waited.t, (e) => e.who === 'runner' && e.ev === 'take');
    // A runner that builds its jobs without `Job.fromJSON` (round 40 `bull-path`) stamps none: the
    // processJob after the take then.
    const pjOfTake = take && find(take.t, (e) => e.who === 'runner' && e.ev === 'processJob');
    const fjIn = take && find(take.t, (e) => e.who === 'runner' && e.ev === 'fromJSON<');
    const fjOut =
      fjIn && (!pjOfTake || fjIn.t < pjOfTake.t)
        ? find(fjIn.t, (e) => e.who === 'runner' && e.ev === 'fromJSON>')
        : undefined;
    const pj = fjOut ? find(fjOut.t, (e) => e.who === 'runner' && e.ev === 'processJob') : pjOfTake;
    put(names[27], take?.t, pj?.t);
    // The processor: the first after the pop's reply. A runner that starts a handed job's processor
    // from the pop's answer (round 41 `pickup-direct`) stamps BullMQ's chain (waited, take) after it.
    const proc = parsed && find(parsed.t, (e) => e.who === 'runner' && e.ev === 'processor');
    put(names[8], rdata.t, parsed?.t);
    put(names[9], parsed?.t, waited?.t);
    put(names[10], waited?.t, take?.t);
    put(names[11], fjIn?.t, fjOut?.t);
    put(names[12], fjOut?.t, pj?.t);
    put(names[13], pj?.t, proc?.t);
    put(names[14], proc?.t, run.pickedUp);
    put(names[16], rdata.t, proc?.t);
    // Whether anything on the way let the event loop turn (a timer, `setImmediate`, more I/O first):
    // the `setImmediate` made at the pop's reply then runs before the processor starts.
    const turnEnd = parsed && find(parsed.t, (e) => e.who === 'runner' && e.ev === 'turn-end-bzpopmin');
    if (proc && turnEnd) {
      if (proc.t < turnEnd.t) sameTurn++;
      else laterTurn++;
    }
    put(names[15], run.enqueued, run.pickedUp);
    const program = proc && find(proc.t, (e) => e.who === 'runner' && e.ev === 'pipe-write');
    put(names[23], run.pickedUp, program?.t);
    put(names[24], rdata.t, program?.t);
    if (program)
      put(
        names[25],
        program.t,
        find(program.t, (e) => e.who === 'runner' && e.ev === 'turn-end-bzpopmin')?.t,
      );
    put(names[26], run.enqueued, program?.t);
    // Every runner stamp from its data event to the processor (to the run's `pickedUp` where the
    // patch stamps it there, on this clock), each from the one before.
    if (proc) {
      const last =
        program ??
        find(proc.t, (e) => e.who === 'runner' && e.ev === 'h-engine') ??
        find(proc.t, (e) => e.who === 'runner' && e.ev === 'h-pickedUp') ??
        proc;
      const seq = ev.filter((e) => e.who === 'runner' && e.t >= rdata.t && e.t <= last.t);
      for (let i = 1; i < seq.length; i++) {
        const label = `${seq[i - 1]!.ev} → ${seq[i]!.ev}`;
        const xs = steps.get(label) ?? [];
        xs.push((seq[i]!.t - seq[i - 1]!.t) * 1e6);
        steps.set(label, xs);
      }
    }
  }
  const lines = [`the pick-up's hop, µs p50 / mean / p90 [runs] (${runs.length} runs):`];
  for (const n of names) {
    const xs = col.get(n)!;
    if (xs.length === 0) continue;
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    lines.push(
      `  ${n.padEnd(58)} ${pct(xs, 50).toFixed(1).padStart(8)} ${mean.toFixed(1).padStart(8)} ${pct(xs, 90).toFixed(1).padStart(8)} [${xs.length}]`,
    );
  }
  lines.push(
    'the runner, stamp by stamp (data event → processor, or `h-pickedUp`), µs p50 / mean [times a run]:',
  );
  for (const [k, xs] of steps) {
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    lines.push(
      `  ${k.padEnd(58)} ${pct(xs, 50).toFixed(1).padStart(8)} ${mean.toFixed(1).padStart(8)} [${(xs.length / runs.length).toFixed(2)}]`,
    );
  }
  lines.push(
    `the processor started in the pop's reply's own event-loop turn: ${sameTurn}, in a later one: ${laterTurn}`,
  );
  lines.push(
    `after the fsync, which process's data event came first: runner ${runnerFirst}, gateway ${gatewayFirst}`,
  );
  if (redisEv.length)
    lines.push(
      `Redis wrote the hand-off before the gateway's reply: ${handoffWriteFirst}, after: ${handoffWriteSecond}`,
    );
  // Redis's own time per script call (SLOWLOG at 0 µs: the command's execution, no I/O).
  const bySha = new Map<string, number[]>();
  for (const [, , us, args] of slow) {
    const name = String(args[0] ?? '').toLowerCase();
    const key =
      name === 'evalsha' || name === 'eval'
        ? `${name} ${String(args[1]).slice(0, 8)} ${String(args[3] ?? '').replace(/[0-9a-f-]{8,}/g, '*')}`
        : name;
    const xs = bySha.get(key) ?? [];
    xs.push(us);
    bySha.set(key, xs);
  }
  lines.push("Redis: each command's own time (SLOWLOG at 0), µs p50 / mean / p90, calls a run:");
  for (const [k, xs] of [...bySha]
    .sort((a, b) => b[1].reduce((s, x) => s + x, 0) - a[1].reduce((s, x) => s + x, 0))
    .slice(0, 10)) {
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    lines.push(
      `  ${k.slice(0, 70).padEnd(70)} ${pct(xs, 50).toFixed(0).padStart(6)} ${mean.toFixed(0).padStart(6)} ${pct(xs, 90).toFixed(0).padStart(6)}  ${(xs.length / runs.length).toFixed(2)}`,
    );
  }
  const stats = (text: string) =>
    new Map(
      [...text.matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+)/gm)].map((m) => [
        m[1]!,
        [Number(m[2]), Number(m[3])],
      ]),
    );
  const a = stats(after);
  const b = stats(before);
  const deltas = [...a].map(([k, [calls, us]]) => {
    const [c0, u0] = b.get(k) ?? [0, 0];
    return [k, (calls! - c0!) / runs.length, (us! - u0!) / runs.length] as const;
  });
  lines.push(
    `INFO commandstats a run: ${deltas
      .filter(([, c]) => c > 0)
      .sort((x, y) => y[2] - x[2])
      .slice(0, 8)
      .map(([k, c, us]) => `${k} ${c.toFixed(2)} calls ${us.toFixed(0)} µs`)
      .join(', ')}`,
  );
  lines.push(`LATENCY LATEST (events ≥ 1 ms): ${JSON.stringify(latency)}`);
  return lines.join('\n');
}
