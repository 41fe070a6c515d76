/**
 * `node test/bench/fsync-bytes.ts` (round 35, `pickup`): the floor's fsync'd write taken apart, and
 * whether it grows with the bytes it appends to the AOF. A private redis-server (`appendfsync
 * always`, as the devstack's), one client, SETs of a value of each size in `SIZES` (bytes, default
 * 64,4074: a one-key write, and the submit's AOF write) one after another with a 1 ms pause (as
 * message-floor.ts), the sizes interleaved in rounds (`N` writes a size a round, default 300;
 * `ROUNDS`, default 4, the order reversed every other round). Prints each size's round trip
 * p50 / mean / p90, µs.
 *
 * `PERF=1`: Redis's own syscalls recorded (`perf record -p`, CLOCK_MONOTONIC like the client's
 * `process.hrtime`, its data in /dev/shm so perf's writes stay off the AOF's disk), and each write
 * split on one clock as `pickup-hop.ts` splits the submit: sent → Redis reads it → AOF write →
 * fdatasync → fdatasync's end → reply written → the client has it.
 *
 * Each size's batch also reads the disk's own counters (`/sys/block/$DEV/stat`, DEV default vda:
 * write requests and sectors written) and prints them per write: the I/O an fsync'd write costs
 * the device (the whole box's I/O is in them: another process's writes show as noise).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis } from '@islet/core';
import { startRedis } from '@islet/testkit';
import { pct } from './baselines.ts';

const SIZES = (process.env.SIZES ?? '64,4074').split(',').map(Number);
const N = Number(process.env.N ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const PERF = process.env.PERF === '1';
const PAUSE_MS = 1;
const DEV = process.env.DEV ?? 'vda';
/** The disk's write requests and sectors written so far (fields 5 and 7 of its stat file). */
const diskWrites = (): [number, number] => {
  try {
    const f = readFileSync(`/sys/block/${DEV}/stat`, 'utf8').trim().split(/\s+/).map(Number);
    return [f[4] ?? Number.NaN, f[6] ?? Number.NaN];
  } catch {
    return [Number.NaN, Number.NaN];
  }
};

const mono = () => Number(process.hrtime.bigint()) / 1e3;
const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'fsync-bytes-'));
const server = await startRedis({ appendFsync: 'always' });
const redis = createRedis(server.url);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let perf: ChildProcess | undefined;
try {
  const pid = Number((await redis.info('server')).match(/process_id:(\d+)/)?.[1]);
  await redis.set('warm', 'x');
  if (PERF) {
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
        String(pid),
        ...[
          'syscalls:sys_exit_read',
          'syscalls:sys_enter_write',
          'syscalls:sys_enter_fdatasync',
          'syscalls:sys_exit_fdatasync',
        ].flatMap((e) => ['-e', e]),
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    await sleep(1500);
  }
  const all = new Map<number, { sent: number; got: number }[]>(SIZES.map((s) => [s, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? SIZES : [...SIZES].reverse();
    const line: string[] = [];
    for (const size of order) {
      const value = 'x'.repeat(size);
      const times: { sent: number; got: number }[] = [];
      const disk0 = diskWrites();
      for (let i = 0; i < N; i++) {
        await sleep(PAUSE_MS);
        const sent = mono();
        await redis.set(`k${i % 16}`, value);
        times.push({ sent, got: mono() });
      }
      const disk1 = diskWrites();
      all.get(size)?.push(...times);
      const ios = ((disk1[0] - disk0[0]) / N).toFixed(2);
      const kb = (((disk1[1] - disk0[1]) * 512) / 1024 / N).toFixed(1);
      const p50 = pct(
        times.map((t) => t.got - t.sent),
        50,
      ).toFixed(0);
      line.push(`${size} B ${p50} (${ios} writes, ${kb} KB)`);
    }
    console.log(`round ${round + 1}: ${line.join(', ')} (µs p50; the disk's write requests and KB a write)`);
  }
  if (perf) {
    const exited = new Promise((r) => perf?.once('exit', r));
    perf.kill('SIGINT');
    await exited;
  }
  const events = perf ? redisEvents() : [];
  for (const [size, t] of all) {
    const rt = t.map((x) => x.got - x.sent);
    const mean = rt.reduce((a, b) => a + b, 0) / rt.length;
    console.log(
      `${String(size).padStart(6)} B: round trip p50 ${pct(rt, 50).toFixed(1)}  mean ${mean.toFixed(1)}  p90 ${pct(rt, 90).toFixed(1)} µs [${rt.length}]`,
    );
    if (events.length > 0) split(t, events);
  }
} finally {
  perf?.kill('SIGINT');
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

interface Ev {
  t: number;
  ev: string;
  size: number;
}

/** Redis's syscalls, µs on the monotonic clock. */
function redisEvents(): Ev[] {
  const text = execFileSync('perf', ['script', '-i', join(dir, 'redis.data'), '-F', 'time,event,trace'], {
    maxBuffer: 1 << 30,
  }).toString();
  const out: Ev[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+\.\d+):\s+syscalls:sys_(enter|exit)_(\w+):?\s*(.*)$/.exec(line);
    if (!m) continue;
    const [, t, side, call, args] = m as unknown as [string, string, string, string, string];
    const size =
      call === 'read'
        ? Number.parseInt(args, 16)
        : Number.parseInt(/count: (0x[0-9a-f]+)/.exec(args)?.[1] ?? '0', 16);
    out.push({ t: Number(t) * 1e6, ev: call === 'fdatasync' ? `fdatasync-${side}` : call, size });
  }
  return out;
}

/** Each write's hops, joined by time order: its read, the next write (the AOF's), fdatasync, the reply. */
function split(writes: { sent: number; got: number }[], events: Ev[]): void {
  const labels = [
    'sent → Redis reads it',
    '→ AOF write',
    '→ fdatasync starts',
    'fdatasync',
    '→ reply written',
    '→ the client has it',
  ];
  const hops: number[][] = labels.map(() => []);
  let i = 0;
  for (const w of writes) {
    while (i < events.length && (events[i] as Ev).t < w.sent) i++;
    const within = events.slice(i).filter((e) => e.t <= w.got);
    const read = within.find((e) => e.ev === 'read' && e.size > 0);
    const aof = within.find((e) => e.ev === 'write' && read && e.t > read.t);
    const enter = within.find((e) => e.ev === 'fdatasync-enter' && aof && e.t > aof.t);
    const exit = within.find((e) => e.ev === 'fdatasync-exit' && enter && e.t > enter.t);
    const reply = within.find((e) => e.ev === 'write' && exit && e.t > exit.t);
    if (!read || !aof || !enter || !exit || !reply) continue;
    const points = [w.sent, read.t, aof.t, enter.t, exit.t, reply.t, w.got];
    for (let k = 0; k < labels.length; k++) hops[k]?.push((points[k + 1] as number) - (points[k] as number));
  }
  for (let k = 0; k < labels.length; k++) {
    const h = hops[k] as number[];
    console.log(
      `    ${(labels[k] as string).padEnd(24)} p50 ${pct(h, 50).toFixed(1).padStart(6)}  mean ${(h.reduce((a, b) => a + b, 0) / h.length).toFixed(1).padStart(6)} µs [${h.length}]`,
    );
  }
}
