/**
 * `npm run bench:sequential`: one client's trivial runs over HTTP (`Prefer: wait`), one after
 * another, on a fresh local cluster set up as the cluster bench's; prints p50, p90, p99 and the
 * mean. The cluster bench's 3-second sequential phase (~500 runs, between other phases) moves by
 * ±0.3 ms from one invocation to the next here; this runs `RUNS` (default 2000) and nothing else,
 * for A/Bs of a change to a run's path: `bash test/bench/ab.sh <base> 2 "node test/bench/sequential.ts"`.
 */
import { startCluster } from '@islet/devstack';
import { PROGRAM, pct } from './baselines.ts';
import { leanPost } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 2000);

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  // One tenant drives it: no fair share (unless BENCH_TENANT_SHARE sets one: the cluster bench's
  // default settings are 0.5) and no rate limit in the way.
  env: {
    ISLET_TENANT_POOL_SHARE: process.env.BENCH_TENANT_SHARE ?? '1',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
  },
});
try {
  const post = leanPost(`${cluster.url}/v1/runs`, cluster.devKey);
  const once = async () => {
    const started = performance.now();
    const body = (await post({
      code: PROGRAM,
      description: 'Benchmark a trivial program',
      sessionId: 'bench',
      turnId: 't',
      callId: 'c',
      connections: [],
    })) as { status?: string };
    if (body?.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(body)}`);
    return performance.now() - started;
  };
  for (let i = 0; i < 50; i++) await once();
  const lat: number[] = [];
  for (let i = 0; i < RUNS; i++) lat.push(await once());
  const mean = lat.reduce((a, b) => a + b, 0) / lat.length;
  console.log(
    `${RUNS} sequential runs: p50 ${pct(lat, 50).toFixed(2)} / p90 ${pct(lat, 90).toFixed(2)} / ` +
      `p99 ${pct(lat, 99).toFixed(2)} ms, mean ${mean.toFixed(2)} ms`,
  );
} finally {
  await cluster.stop();
}
