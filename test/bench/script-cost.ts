/**
 * `node test/bench/script-cost.ts`: Redis's own time per sequential trivial run (`RUNS`, default
 * 200), by command and by script, from SLOWLOG with a threshold of 0 (each entry is one command's
 * or script's execution in Redis, without the network or the fsync). Scripts are named by their
 * SHA's first 8 digits and their first key with hash tags folded (`islet:run:{}`); commands a
 * script runs are logged too, so the per-command rows overlap the scripts' rows.
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 200);
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000', ...JSON.parse(process.env.BENCH_ENV ?? '{}') },
});
const redis = createRedis(cluster.redisConfig);
try {
  const once = trivialRun(cluster, 'Measure a trivial program');
  for (let i = 0; i < 50; i++) await once();
  await redis.config('SET', 'slowlog-log-slower-than', process.env.SLOWLOG_US ?? '0');
  await redis.config('SET', 'slowlog-max-len', '1000000');
  await redis.slowlog('RESET');
  for (let i = 0; i < RUNS; i++) await once();
  await redis.config('SET', 'slowlog-log-slower-than', '10000');
  const log = (await redis.slowlog('GET', 1_000_000)) as [number, number, number, string[]][];
  const rows = new Map<string, { calls: number; us: number }>();
  let scriptsUs = 0;
  for (const [, , us, args] of log) {
    const cmd = (args[0] ?? '').toLowerCase();
    const script = cmd === 'evalsha' || cmd === 'eval';
    const name = script
      ? `${cmd} ${cmd === 'eval' ? (args[1] ?? '').slice(0, 40).replace(/\s+/g, ' ') : (args[1] ?? '').slice(0, 8)} ${(args[3] ?? '').replace(/\{[^}]*\}/, '{}')}`
      : cmd;
    if (script) scriptsUs += us;
    const row = rows.get(name) ?? { calls: 0, us: 0 };
    row.calls++;
    row.us += us;
    rows.set(name, row);
  }
  console.log(`${RUNS} sequential runs: scripts ${(scriptsUs / RUNS).toFixed(0)} us of Redis time per run`);
  for (const [name, { calls, us }] of [...rows].sort((a, b) => b[1].us - a[1].us).slice(0, 30))
    console.log(
      `${(us / RUNS).toFixed(1).padStart(7)} us/run ${(calls / RUNS).toFixed(2).padStart(6)} calls/run ` +
        `${(us / calls).toFixed(0).padStart(5)} us/call  ${name}`,
    );
} finally {
  redis.disconnect();
  await cluster.stop();
}
