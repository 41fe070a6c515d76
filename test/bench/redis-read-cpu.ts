/**
 * `node test/bench/redis-read-cpu.ts` (round 42, `binding-floor`): a Redis reply's read alone in this
 * process, through the socket's readable stream (ioredis as it comes) against through `onread`
 * (core's `readRepliesDirect`, the gateway's main connection since this round): two clients on one
 * Redis (no AOF: the reply's read, not the disk), blocks of `N` (default 2,000) sequential commands
 * (`EVALSHA` of a short script answering an array of two short strings, as the claim's and the
 * outcome's replies are) alternated between the two, `ROUNDS` (default 20) rounds, the first block
 * of each round alternating. Main thread's CPU (`/proc/thread-self/schedstat`) µs a command; the
 * `nextTick`s a command counted. A time: under the bench lock.
 */
import { readFileSync } from 'node:fs';
import { createRedis, readRepliesDirect } from '@islet/core';
import { startRedis } from '@islet/testkit';

const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 20);
const server = await startRedis({ appendOnly: false });
const stream = createRedis(server.url);
const direct = createRedis(server.url);
readRepliesDirect(direct);
let ticks = 0;
const nextTick = process.nextTick;
process.nextTick = function (this: unknown, ...args: Parameters<typeof nextTick>) {
  ticks++;
  return nextTick.apply(this, args);
} as typeof nextTick;
const cpuNs = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
const script = "return {'new', ARGV[1]}";
try {
  const sha = (await stream.script('LOAD', script)) as string;
  await direct.ping();
  const block = async (r: typeof stream) => {
    const t0 = cpuNs();
    const k0 = ticks;
    for (let i = 0; i < N; i++) await r.evalsha(sha, 0, 'x');
    return { us: (cpuNs() - t0) / 1000 / N, ticks: (ticks - k0) / N };
  };
  for (const r of [stream, direct]) await block(r);
  const rows: { stream: number; direct: number; ticks: [number, number] }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const first = round % 2 === 0 ? 'stream' : 'direct';
    const a = await block(first === 'stream' ? stream : direct);
    const b = await block(first === 'stream' ? direct : stream);
    const s = first === 'stream' ? a : b;
    const d = first === 'stream' ? b : a;
    rows.push({ stream: s.us, direct: d.us, ticks: [s.ticks, d.ticks] });
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1] ?? Number.NaN;
  const lower = rows.filter((r) => r.direct < r.stream).length;
  console.log(`main-thread CPU µs a command (${N} a block, ${ROUNDS} rounds):`);
  console.log(`  stream: ${rows.map((r) => r.stream.toFixed(2)).join(' ')}`);
  console.log(`  onread: ${rows.map((r) => r.direct.toFixed(2)).join(' ')}`);
  console.log(
    `  median stream ${med(rows.map((r) => r.stream)).toFixed(2)}, onread ${med(rows.map((r) => r.direct)).toFixed(2)}; onread lower in ${lower} of ${rows.length} rounds; nextTick a command ${rows[0]!.ticks[0].toFixed(2)} → ${rows[0]!.ticks[1].toFixed(2)}`,
  );
} finally {
  stream.disconnect();
  direct.disconnect();
  await server.stop();
}
