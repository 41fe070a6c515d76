/**
 * `node test/bench/seq-redis-instr.ts` (round 48, `seq-count`): Redis's script instructions a
 * ONE-CLIENT sequential trivial run (`redis-callgrind.sh`: EVAL / EVALSHA and the commands they run
 * — the submit, the registration, the end + completion), on the cluster bench's one-client cluster
 * (share 0.5) whose redis-server runs under callgrind; `WARM` runs (default 100), then `PASSES`
 * (default 3) of `RUNS` runs (default 200), each a line. For an ABBA of two commits' `services/`
 * (`bash test/bench/ab.sh <base> 1 "node test/bench/seq-redis-instr.ts"`). `LIVE=on|off`: the
 * gateway's hand-off liveness check. A count no load moves; no AOF (callgrind-redis.ts).
 */
import { startCluster } from '@islet/devstack';
import { callgrindRedis } from './callgrind-redis.ts';
import { burst, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 200);
const WARM = Number(process.env.WARM ?? 100);
const PASSES = Number(process.env.PASSES ?? 3);
const cg = await callgrindRedis('seq-redis-instr');
const port = (cg.r.options as { port: number }).port;
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: {
    ISLET_TENANT_POOL_SHARE: '0.5',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(process.env.LIVE ? { ISLET_HANDOFF_LIVE_CHECK: process.env.LIVE } : {}),
  },
  redisUrl: `redis://127.0.0.1:${port}`,
});
try {
  const once = trivialRun(cluster, 'Seq redis instr');
  await burst(once, WARM, 1);
  for (let i = 0; i < PASSES; i++) {
    const i0 = cg.instructions();
    await burst(once, RUNS, 1);
    const i1 = cg.instructions();
    console.log(
      `one client: ${RUNS} runs, script instructions a run ${((i1 - i0) / RUNS / 1000).toFixed(1)} K`,
    );
  }
} finally {
  await cluster.stop();
  await cg.stop();
}
process.exit(0);
