/**
 * `npm run bench:sequential`: one client's trivial runs over HTTP (`Prefer: wait`), one after
 * another, on a fresh local cluster set up as the cluster bench's; prints p50, p90, p99 and the
 * mean. The cluster bench's 3-second sequential phase (~500 runs, between other phases) moves by
 * ±0.3 ms from one invocation to the next here; this runs `RUNS` (default 2000) and nothing else,
 * for A/Bs of a change to a run's path: `bash test/bench/ab.sh <base> 2 "node test/bench/sequential.ts"`.
 * `STAGES=1` also prints the cluster bench's stage breakdown (p50 and mean) over the same runs; the
 * read of each run's stamps goes between runs, outside the latencies, but the next submit then no
 * longer follows its predecessor's response at once (what Redis still does for the previous run,
 * BullMQ's completion, no longer meets it), so p50s with and without it differ. `CALLS=1` also
 * prints script calls (EVALSHA + EVAL) and all commands (scripts' own included) per run, from
 * `INFO commandstats` before and after the timed runs.
 */
import { createRedis, keys } from '@islet/core';
import { pct } from './baselines.ts';
import { commandCalls } from './bullmq-floor.ts';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';
import { clockStepNote, clockWatch, stageLines, stageRow, stagesOf } from './stages.ts';

const RUNS = Number(process.env.RUNS ?? 2000);
const STAGES = process.env.STAGES === '1';
const now = () => performance.timeOrigin + performance.now();

const clockStep = clockWatch();
// One tenant drives it: no fair share unless BENCH_TENANT_SHARE sets one (the cluster bench's
// default settings are 0.5).
const cluster = await startOneClientCluster('1');
const CALLS = process.env.CALLS === '1';
const redis = STAGES || CALLS ? createRedis(cluster.redisUrl) : undefined;
const stageRows: { stages: number[]; latencyMs: number }[] = [];
try {
  const stamped = stampedRun(cluster, now);
  const once = async () => {
    const run = await stamped();
    return { ...run, ms: run.received - run.sent };
  };
  for (let i = 0; i < 50; i++) await once();
  const callsBefore = CALLS && redis ? commandCalls(await redis.info('commandstats')) : undefined;
  const lat: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const run = await once();
    lat.push(run.ms);
    if (STAGES && redis) {
      const [createdAt, timings] = await redis.hmget(keys.run(run.id), 'createdAt', 'timings');
      stageRows.push({ stages: stageRow(run.sent, run.received, createdAt, timings), latencyMs: run.ms });
    }
  }
  const mean = lat.reduce((a, b) => a + b, 0) / lat.length;
  console.log(
    `${RUNS} sequential runs: p50 ${pct(lat, 50).toFixed(2)} / p90 ${pct(lat, 90).toFixed(2)} / ` +
      `p99 ${pct(lat, 99).toFixed(2)} ms, mean ${mean.toFixed(2)} ms`,
  );
  if (callsBefore && redis) {
    const after = commandCalls(await redis.info('commandstats'));
    const delta = (name: string) => (after.get(name) ?? 0) - (callsBefore.get(name) ?? 0);
    const all = [...after.keys()].filter((n) => n !== 'info').reduce((n, name) => n + delta(name), 0);
    console.log(
      `  per run: ${((delta('evalsha') + delta('eval')) / RUNS).toFixed(2)} script calls, ` +
        `${(all / RUNS).toFixed(1)} commands (scripts' own included)`,
    );
  }
  if (STAGES) {
    console.log(`${'  stages (sub-ms stamps)'.padEnd(94)}${'mean ms'.padStart(8)}${'p50 ms'.padStart(9)}`);
    for (const line of stageLines(stagesOf(stageRows))) console.log(line);
  }
  const clockNote = STAGES ? clockStepNote(clockStep()) : undefined;
  if (clockNote) console.log(`  ${clockNote}`);
} finally {
  redis?.disconnect();
  await cluster.stop();
}
