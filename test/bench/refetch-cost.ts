/**
 * `node test/bench/refetch-cost.ts`: Redis instructions of the fused end's refetch (a next job's
 * lease refused: `fetch-lease-begin-11`'s DEFER moves it to delayed and fetches again with the
 * fused fetch's body, `fetchAndLook` of BullMQ's moveToActive-11 through bull-quiet, prelude and
 * all), in a redis-server under callgrind (`redis-callgrind.sh`). Each call's keys are made afresh
 * (a next job waiting, `DEFERRED` deferrals not due in the delayed set, default 3; the queue's meta),
 * the same for the text, for the direct path (handed-refetch.ts, as the end runs it: tried before
 * the text) and for a script that only answers, so the difference of two phases is the refetch's.
 * `N` calls a phase (default 200), phases ABBA. `KNOWN=1`: the direct path with the options' parts
 * (a baked end's BO) against it with the packed options.
 */
import { fetchAndLook, handedRefetch } from '@islet/runs';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { Packr } from 'msgpackr';
import { callgrindRedis } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 200);
const DEFERRED = Number(process.env.DEFERRED ?? 3);
const { r, instructions, stop } = await callgrindRedis('refetch-cost');
const Q = 'bull:q:';
const KEYS = [
  ...['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc'],
  'marker',
].map((k) => Q + k);
const opts = new Packr({ useRecords: false, encodeUndefinedAsNil: true }).pack({
  token: 'tok-1',
  lockDuration: 30000,
  name: 'runner-1',
  limiter: undefined,
});
const TS = 1764960000001;
const ARGS: (string | Buffer)[] = [Q, String(TS), opts];

async function setUp(): Promise<void> {
  const p = r.pipeline().flushall();
  p.hset(`${Q}meta`, 'opts.maxLenEvents', '10000');
  p.hset(
    `${Q}r2`,
    'name',
    'run',
    'data',
    '{}',
    'opts',
    '{}',
    'timestamp',
    '1',
    'delay',
    '0',
    'priority',
    '0',
  );
  p.lpush(`${Q}wait`, 'r2').lpush(`${Q}active`, 'r0');
  for (let i = 0; i < DEFERRED; i++) {
    p.hset(
      `${Q}d${i}`,
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
    );
    p.zadd(`${Q}delayed`, String((BigInt(TS) + 250n) * 4096n + BigInt(i)), `d${i}`);
  }
  await p.exec();
}

try {
  await r.ping();
  const shas: Record<string, string> = {
    text: (await r.script('LOAD', fetchAndLook(moveToActive.content))) as string,
    direct: (await r.script(
      'LOAD',
      `${handedRefetch(moveToActive.content)}\nlocal handed = handedRefetch(KEYS, ARGV)\nif handed then return handed end\n${fetchAndLook(moveToActive.content)}`,
    )) as string,
    none: (await r.script('LOAD', 'return {}')) as string,
  };
  const forms = ['text', 'direct', 'none', 'none', 'direct', 'text'];
  // KNOWN=1 (round 52 `fetch-token`): the direct refetch as a baked end runs it, the worker's options
  // as their parts (BO, ARGV[3] false, no unpack) against the packed options' direct path; the
  // three parts sent to every form alike.
  if (process.env.KNOWN === '1') {
    shas.known = (await r.script(
      'LOAD',
      `local BO = {ARGV[4], ARGV[5], ARGV[6]}\n${handedRefetch(moveToActive.content)}\nlocal handed = handedRefetch(KEYS, {ARGV[1], ARGV[2], false}, BO)\nif handed then return handed end\nreturn 'text'`,
    )) as string;
    forms.splice(0, forms.length, 'direct', 'known', 'none', 'none', 'known', 'direct');
    ARGS.push('tok-1', '30000', 'runner-1');
  }
  const got: Record<string, number[]> = { text: [], direct: [], none: [], known: [] };
  for (const form of forms) {
    const before = instructions();
    for (let i = 0; i < N; i++) {
      await setUp();
      await r.evalsha(shas[form]!, KEYS.length, ...KEYS, ...ARGS);
    }
    got[form]!.push((instructions() - before) / N);
  }
  const f = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' / ');
  console.log(
    `a next job waiting, ${DEFERRED} deferrals not due: instructions a call (set-up included) text ${f(got.text!)}, direct ${f(got.direct!)}, known ${f(got.known!)}, an empty script ${f(got.none!)}`,
  );
} finally {
  await stop();
}
