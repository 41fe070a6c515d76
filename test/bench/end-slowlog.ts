/**
 * What Redis spends on each command of a sequential run (SLOWLOG with every call logged: µs as
 * Redis measures a call, its script's own commands included; no parse, no AOF write, no fsync),
 * p50 and mean per command, a script call named by its key and argument counts and first key,
 * over `RUNS` sequential runs after 50 to warm up. Redis 7 logs a script's commands on their own
 * too (the rows of plain commands). Load moves the µs (a call's time is its CPU on this core,
 * cold caches included), so read it A/B (`test/bench/ab.sh`).
 *
 *   RUNS=200 BENCH_TENANT_SHARE=0.5 node test/bench/end-slowlog.ts
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { pct } from './baselines.ts';
import { stampedRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 200);
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: {
    ISLET_TENANT_POOL_SHARE: process.env.BENCH_TENANT_SHARE ?? '0.5',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
  },
});
const redis = createRedis(cluster.redisUrl);
try {
  const once = stampedRun(cluster, () => performance.timeOrigin + performance.now());
  for (let i = 0; i < 50; i++) await once();
  await redis.config('SET', 'slowlog-max-len', String(RUNS * 200));
  await redis.config('SET', 'slowlog-log-slower-than', '0');
  await redis.slowlog('RESET');
  for (let i = 0; i < RUNS; i++) await once();
  await redis.config('SET', 'slowlog-log-slower-than', '10000');
  const log = (await redis.slowlog('GET', RUNS * 200)) as [number, number, number, string[]][];
  const by = new Map<string, number[]>();
  for (const [, , us, args] of log) {
    const cmd = String(args[0]).toLowerCase();
    const name =
      cmd === 'evalsha' || cmd === 'eval'
        ? `${cmd} ${args[2]} keys${/more arguments/.test(String(args.at(-1))) ? `, ${String(args.at(-1)).replace(/\D/g, '')} + 31 args` : `, ${args.length} args`}, ${String(
            args[3] ?? '',
          )
            .replace(/[0-9a-f-]{36}|\d+/g, '#')
            .slice(0, 60)}`
        : cmd;
    by.set(name, [...(by.get(name) ?? []), us]);
  }
  for (const [name, us] of [...by].sort((a, b) => pct(b[1], 50) * b[1].length - pct(a[1], 50) * a[1].length))
    console.log(
      `${(us.length / RUNS).toFixed(2).padStart(6)} a run  p50 ${pct(us, 50).toFixed(0).padStart(5)} µs  mean ${(us.reduce((a, b) => a + b, 0) / us.length).toFixed(0).padStart(5)}  ${name}`,
    );
} finally {
  redis.disconnect();
  await cluster.stop();
}
