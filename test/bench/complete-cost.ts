/**
 * `node test/bench/complete-cost.ts`: Redis instructions of a run's completion as the end runs it
 * (bull-quiet.ts `quietCompleteAsk` then `quietComplete` of moveToFinished-14) with the direct path
 * (handed-complete.ts) and without, in a redis-server under callgrind (`redis-callgrind.sh`). Each
 * call's keys are made afresh (FLUSHALL, an active job of a run, its lock, the queue's meta, `NEXT=1`:
 * a next job waiting; `DEFERRED=1`: a queue holding a deferral, as two tenants leave it: the pool's
 * waiting list there (the end's own key in its EXISTS) and a job in the delayed set not due yet;
 * `DUE=1`: that job due), the same on both sides, so the difference of two phases is the
 * completion's. `N` calls a phase (default 200), phases ABBA.
 */
import { handedComplete, quietComplete, quietCompleteAsk } from '@islet/runs';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { Packr } from 'msgpackr';
import { callgrindRedis } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 200);
const NEXT = process.env.NEXT === '1';
const DEFERRED = process.env.DEFERRED === '1' || process.env.DUE === '1';
/** The deferral's time, ms: 250 ms after the completion's (not due), or its very ms (due). */
const DEFERRED_MS = process.env.DUE === '1' ? 1764960000001n : 1764960000251n;
const { r, instructions, stop } = await callgrindRedis('complete-cost');
const Q = 'bull:q:';
const KEYS = [
  ...['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc'],
  ...['completed', 'r1', 'metrics:completed', 'marker'],
].map((k) => Q + k);
const opts = new Packr({ useRecords: false, encodeUndefinedAsNil: true }).pack({
  token: 'tok-1',
  name: 'runner-1',
  keepJobs: { age: 3600, count: 1000 },
  limiter: undefined,
  lockDuration: 30000,
  attempts: 1,
  maxMetricsSize: '',
  fpof: false,
  cpof: false,
  idof: false,
  rdof: false,
});
const ARGS = ['r1', '1764960000001', 'returnvalue', '{"ok":true}', 'completed', '1', Q, opts];
const body = moveToFinished.content;
const ask = `local seen = {}\n${quietCompleteAsk('KEYS', 'ARGV', 'seen', "'own'")}\n`;
const script = (direct?: string) =>
  `${ask}local function complete(KEYS, ARGV)\n${quietComplete(body, 'seen', direct)}\nend\nreturn complete(KEYS, ARGV)`;

async function setUp(): Promise<void> {
  const p = r.pipeline().flushall();
  p.hset(
    `${Q}r1`,
    'name',
    'run',
    'data',
    '{"runId":"r1"}',
    'opts',
    '{"attempts":1}',
    'timestamp',
    '1764960000000',
  );
  p.hset(
    `${Q}r1`,
    'delay',
    '0',
    'priority',
    '0',
    'processedOn',
    '1764960000000',
    'pb',
    'runner-1',
    'ats',
    '1',
  );
  p.lpush(`${Q}active`, 'r0', 'r1').set(`${Q}r1:lock`, 'tok-1', 'PX', 30000);
  p.hset(`${Q}meta`, 'opts.maxLenEvents', '10000').zadd(`${Q}completed`, '1764950000000', 'r-old');
  if (NEXT)
    p.hset(`${Q}r2`, 'name', 'run', 'data', '{}', 'opts', '{}', 'timestamp', '1', 'delay', '0').lpush(
      `${Q}wait`,
      'r2',
    );
  if (DEFERRED)
    p.rpush('own', 'tenant-b')
      .hset(
        `${Q}r9`,
        'name',
        'run',
        'data',
        '{}',
        'opts',
        '{}',
        'timestamp',
        '1',
        'delay',
        '250',
        'priority',
        '0',
      )
      .zadd(`${Q}delayed`, String(DEFERRED_MS * 4096n + 1n), 'r9');
  await p.exec();
}

try {
  await r.ping();
  const shas: Record<string, string> = {};
  for (const [name, src] of [
    ['text', script()],
    ['direct', script(handedComplete(body))],
  ] as const)
    shas[name] = (await r.script('LOAD', src)) as string;
  const got: Record<string, number[]> = { text: [], direct: [] };
  for (const form of ['text', 'direct', 'direct', 'text']) {
    const before = instructions();
    for (let i = 0; i < N; i++) {
      await setUp();
      await r.evalsha(shas[form]!, KEYS.length, ...KEYS, ...ARGS);
    }
    got[form]!.push((instructions() - before) / N);
  }
  const f = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' / ');
  console.log(
    `${NEXT ? 'a next job waiting' : 'nothing waiting'}${DEFERRED ? `, a deferral ${process.env.DUE === '1' ? 'due' : 'not due'}` : ''}: instructions a call (set-up and completion) text ${f(got.text!)}, direct ${f(got.direct!)}`,
  );
} finally {
  await stop();
}
