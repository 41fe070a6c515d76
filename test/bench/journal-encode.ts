/**
 * `node test/bench/journal-encode.ts` (round 38, `call-bisect`): a lone binding call's two journal
 * script calls (a claim, 17 arguments, and a completion with its `call` event, 15), text only, as
 * ioredis sends them (`redis.evalsha(flat)`: its `Command` copies the arguments, its `toWritable`
 * builds one string, a rope of ~4 strings an argument, which the socket's write flattens and
 * encodes) against core's `OneCopyCommand` writing them into one buffer. Three measures, the sides
 * alternated round by round in one process (allocations: `gateway-calls-cpu.ts` `ALLOC=1`):
 *   - encode: the command made and its RESP built, no socket; hot (`N` in a row, median of
 *     `ROUNDS`) and spaced (one pair every `GAP_MS`, default 1, as lone calls come; p50);
 *   - send: the same spaced, the command made and written to a real redis-server's socket (the
 *     synchronous part: `sendCommand` with the write syscall), p50;
 * Each is this process's CPU (`process.cpuUsage`), not wall time, so a busy box's preemptions are
 * not counted (its cache misses still are: compare the sides of one run only).
 */
import { OneCopyCommand } from '@islet/core/lua-script';
import { startRedis } from '@islet/testkit';
import { Command, Redis } from 'ioredis';

const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const SPACED = Number(process.env.SPACED ?? 2000);
const GAP_MS = Number(process.env.GAP_MS ?? 1);

const id = '3f1c0b8e-8a77-4c55-9d0e-2b1f3f1d9a10';
const sealed = (n: number) => `v1.k1.${'Qx9'.repeat(Math.ceil(n / 3)).slice(0, n)}`;
const sha = 'f'.repeat(40);
/** The claim (claim-1.lua): key, then CLAIM_FIELDS (12) for the one call. */
const claim = (): (string | number)[] => [
  sha,
  1,
  `islet:journal:{${id}}`,
  '0',
  1,
  'ping',
  'QmFzZTY0dXJsSE1BQ2hhc2hfX19fX19fX19fX19fXw',
  sealed(120),
  '{"kind":"app","app":"ping","operation":"ping"}',
  `${id}-0`,
  Date.now(),
  '0',
  604800,
  '6f1d2c3b-4a59-4e8f-9a0b-1c2d3e4f5a6b',
  '1',
];
/** The completion (complete-2.lua) with its `call` event: 2 keys, 4 shared, 5 a call. */
const complete = (): (string | number)[] => [
  sha,
  2,
  `islet:journal:{${id}}`,
  `islet:run:{${id}}:events`,
  604800,
  1000,
  `islet:run:{${id}}:wake`,
  '1',
  '0',
  sealed(180),
  Date.now(),
  'call',
  sealed(420),
];

type Side = [string, (args: (string | number)[]) => Command];
const ours = (args: (string | number)[]) => {
  const command = new OneCopyCommand('evalsha', args, { replyEncoding: 'utf8' });
  (command as unknown as { bufferMode: boolean }).bufferMode = true;
  return command;
};
const theirs = (args: (string | number)[]) => new Command('evalsha', args, { replyEncoding: 'utf8' });
const sides: Side[] = [
  ["ioredis's Command (one string)", theirs],
  ['OneCopyCommand (one buffer)', ours],
];
for (const make of [claim, complete]) {
  const a = Buffer.from(theirs(make()).toWritable({}) as string);
  const b = ours(make()).toWritable({}) as Buffer;
  if (a.length !== b.length) throw new Error('the two encodings differ in length');
}

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const push = (m: Map<string, number[]>, k: string, v: number) => m.set(k, (m.get(k) ?? []).concat(v));
/**
 * This process's CPU, µs (`process.cpuUsage`, getrusage RUSAGE_SELF, whose reading brings the
 * running thread's time up to now; RUSAGE_THREAD's, `threadCpuUsage`, lags by up to a tick): time
 * the box gives others is not counted. The process's other threads are idle here but for GC's.
 */
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const hot = new Map<string, number[]>();
const spaced = new Map<string, number[]>();
const sent = new Map<string, number[]>();
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

const server = await startRedis({ appendOnly: false });
const redis = new Redis(server.port, '127.0.0.1');
await redis.ping();
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, make] of r % 2 ? [...sides].reverse() : sides) {
      const encodePair = () => {
        make(claim()).toWritable({});
        make(complete()).toWritable({});
      };
      for (let i = 0; i < N; i++) encodePair();
      const t0 = cpuUs();
      for (let i = 0; i < N; i++) encodePair();
      push(hot, name, (cpuUs() - t0) / N);
      let encodeUs = 0;
      let sendUs = 0;
      const pairs = Math.ceil(SPACED / ROUNDS);
      for (let i = 0; i < pairs; i++) {
        await sleep(GAP_MS);
        let t = cpuUs();
        encodePair();
        encodeUs += cpuUs() - t;
        await sleep(GAP_MS);
        const a = claim();
        const b = complete();
        t = cpuUs();
        const c1 = make(a);
        redis.sendCommand(c1);
        const c2 = make(b);
        redis.sendCommand(c2);
        sendUs += cpuUs() - t;
        // NOSCRIPT (the script is not loaded): the error reply ends the round trip.
        await Promise.allSettled([c1.promise, c2.promise]);
      }
      push(spaced, name, encodeUs / pairs);
      push(sent, name, sendUs / pairs);
    }
  }
} finally {
  redis.disconnect();
  await server.stop();
}
const list = (xs: number[] | undefined) => (xs ?? []).map((x) => x.toFixed(1)).join(' ');
for (const [name] of sides) {
  console.log(
    `${name}, this process's CPU µs a pair (claim + completion), median of ${ROUNDS} rounds [rounds]:`,
  );
  console.log(`  encode, hot:          ${p50(hot.get(name) ?? []).toFixed(2)} [${list(hot.get(name))}]`);
  console.log(
    `  encode, spaced:       ${p50(spaced.get(name) ?? []).toFixed(2)} [${list(spaced.get(name))}]`,
  );
  console.log(`  made + written, spaced: ${p50(sent.get(name) ?? []).toFixed(2)} [${list(sent.get(name))}]`);
}
