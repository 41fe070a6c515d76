/**
 * `node test/bench/aof-member-cost.ts`: what an inner write's AOF propagation costs Redis, apart
 * from the write itself. A private redis-server (`appendfsync always`, as the devstack's), one
 * client sending `N` (default 4000) script calls one after another, each a ZADD of a `BYTES`-long
 * member (default 1,400: a hand-off's answer) to a key and the ZPOPMIN that takes it (as the hand-off's
 * add and the worker's blocking pop do), in rounds alternating the ZADD propagated (A) and not
 * (B, `redis.set_repl(redis.REPL_NONE)` around it), ABBA, `ROUNDS` times (default 3). Per call:
 * redis-server's user and system CPU (/proc) and the AOF's bytes. (Round 32, `redis-aof`.)
 */
import { readFileSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { startRedis } from '@islet/testkit';

const N = Number(process.env.N ?? 4000);
const BYTES = Number(process.env.BYTES ?? 1400);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const TICKS = 100;

const server = await startRedis({ appendFsync: 'always' });
const redis = createRedis(server.url);
try {
  const pid = Number((await redis.info('server')).match(/process_id:(\d+)/)?.[1]);
  const cpu = () => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return { user: Number(f[11]) / TICKS, sys: Number(f[12]) / TICKS };
  };
  const aof = async () => Number((await redis.info('persistence')).match(/aof_current_size:(\d+)/)?.[1]);
  const body = (
    quiet: boolean,
  ) => `${quiet ? 'redis.set_repl(redis.REPL_NONE)\n' : ''}redis.call('ZADD', KEYS[1], 0, ARGV[1])
${quiet ? 'redis.set_repl(redis.REPL_ALL)\n' : ''}redis.call('ZPOPMIN', KEYS[1])
return 1`;
  const shas = {
    A: (await redis.script('LOAD', body(false))) as string,
    B: (await redis.script('LOAD', body(true))) as string,
  };
  const member = 'x'.repeat(BYTES);
  const side = async (s: 'A' | 'B') => {
    const c0 = cpu();
    const a0 = await aof();
    for (let i = 0; i < N; i++) await redis.evalsha(shas[s], 1, 'islet:{q}:handoff:w', `${i}:${member}`);
    const c1 = cpu();
    const a1 = await aof();
    const us = (x: number) => ((x * 1e6) / N).toFixed(1);
    console.log(
      `${s} ${s === 'A' ? 'propagated    ' : 'not propagated'}  µs a call: user ${us(c1.user - c0.user)} sys ${us(c1.sys - c0.sys)} total ${us(c1.user - c0.user + c1.sys - c0.sys)}  AOF ${((a1 - a0) / N).toFixed(0)} B a call  load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
    );
  };
  await side('A');
  for (let r = 0; r < ROUNDS; r++) for (const s of ['A', 'B', 'B', 'A'] as const) await side(s);
} finally {
  redis.disconnect();
  await server.stop();
}
