/**
 * A redis-server under callgrind (`redis-callgrind.sh`: only script calls counted) on a free port,
 * for the benches that count a script's instructions (start-cost, register-cost, complete-cost):
 * `instructions()` reads the server's count so far (`callgrind_control -e`), `stop()` ends it and
 * waits for its exit. `name` names the callgrind output (`CG_OUT`, default /tmp/<name>.callgrind).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { channels } from '@islet/core';
import { freePort } from '@islet/testkit';
import { Redis } from 'ioredis';

export interface CallgrindRedis {
  r: Redis;
  proc: ChildProcess;
  instructions: () => number;
  stop: () => Promise<void>;
}

export async function callgrindRedis(name: string): Promise<CallgrindRedis> {
  const port = await freePort();
  const wrapper = fileURLToPath(new URL('./redis-callgrind.sh', import.meta.url));
  const proc = spawn(
    wrapper,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore', env: { ...process.env, CG_OUT: process.env.CG_OUT ?? `/tmp/${name}.callgrind` } },
  );
  const r = new Redis(port, { retryStrategy: () => 100 });
  const instructions = () =>
    Number(
      /Th 1\s+([\d,]+)/
        .exec(execFileSync('callgrind_control', ['-e', String(proc.pid)], { encoding: 'utf8' }))![1]!
        .replaceAll(',', ''),
    );
  const stop = async () => {
    r.disconnect();
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((done) => proc.once('exit', done));
    proc.kill('SIGTERM');
    await exited;
  };
  // valgrind's start under load can outlast ioredis's retries of one command (round 42: a side
  // failed so twice): ping until it answers, and leave no server behind when it never does.
  for (let i = 0; ; i++) {
    try {
      await r.ping();
      break;
    } catch (err) {
      if (i > 60) {
        await stop();
        throw err;
      }
      await new Promise((done) => setTimeout(done, 500));
    }
  }
  return { r, proc, instructions, stop };
}

/**
 * A connection of its own on the run-events channel keeping each pushed end's bytes in `pushes`
 * (the caller empties it between sides, awaits `subscribed` before the first end and disconnects
 * `listener` in its finally): the end-push and journal-end benches' reading of the push.
 */
export function endPushListener(redis: Redis): {
  listener: Redis;
  pushes: number[];
  subscribed: Promise<unknown>;
} {
  const listener = redis.duplicate();
  const pushes: number[] = [];
  listener.on('message', (_c: string, m: string) => {
    // `end` (a whole record, before round 41) or `end2` (its lean form, round 41 `push-lean`).
    if (/^\S+ end2? /.test(m)) pushes.push(Buffer.byteLength(m));
  });
  return { listener, pushes, subscribed: listener.subscribe(channels.runEvents) };
}

/**
 * A redis-server under callgrind collecting inside `points` (function names joined by `+`, each a
 * `--toggle-collect`) into `file`, on a free port, once it answers: `zero()` drops the counts so far
 * (a warm-up's and the set-up's, the scripts' compiles among them), `stop()` ends it and waits for
 * its exit (the counts written). For the counts of baked-fetch-counts.ts and end-start-baked-counts.ts.
 */
export async function callgrindRedisAt(points: string, file: string) {
  const port = await freePort();
  const proc = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      ...points.split('+').map((f) => `--toggle-collect=${f}`),
      `--callgrind-out-file=${file}`,
      'redis-server',
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 400; i++) {
    const probe = new Redis(port, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    const up = await probe.connect().then(
      () => true,
      () => false,
    );
    probe.disconnect();
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    zero: () => execFileSync('callgrind_control', ['-z', String(proc.pid)], { stdio: 'ignore' }),
    stop: async () => {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
