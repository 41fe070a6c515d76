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
 * `INFO commandstats` before and after the timed runs. `CLIENTS=16`: that many clients at once (the
 * stages and `TAIL=1` still per run; `TAIL=1` then reads no per-run scheduling). `LAT_DUMP=<file>`:
 * every run's latency in order, as JSON (fold-phases.ts reads it).
 */
import { writeFileSync } from 'node:fs';
import { createRedis, keys } from '@islet/core';
import { pct } from './baselines.ts';
import { benchNow } from './bench-clock.ts';
import { commandCalls } from './bullmq-floor.ts';
import { burst, stampedRun, startOneClientCluster } from './cluster-figures.ts';
import { clockStepNote, clockWatch, stageLines, stageRow, stagesOf } from './stages.ts';
import {
  clusterPids,
  fsyncTrace,
  type Sched,
  schedDelta,
  schedNow,
  type TailRun,
  tailCauses,
} from './tail-causes.ts';

const RUNS = Number(process.env.RUNS ?? 2000);
/** `CLIENTS=16`: that many clients, each submitting its next run as its last one's response comes. */
const CLIENTS = Number(process.env.CLIENTS ?? 1);
// TAIL=1 (implies STAGES): the slow runs' stages and what overlapped them (tail-causes.ts).
const TAIL = process.env.TAIL === '1';
const STAGES = process.env.STAGES === '1' || TAIL;
const now = benchNow;

const clockStep = clockWatch();
// One tenant drives it: no fair share unless BENCH_TENANT_SHARE sets one (the cluster bench's
// default settings are 0.5).
const cluster = await startOneClientCluster('1');
const CALLS = process.env.CALLS === '1';
const redis = STAGES || CALLS ? createRedis(cluster.redisUrl) : undefined;
const stageRows: { stages: number[]; latencyMs: number }[] = [];
const tail: TailRun[] = [];
try {
  const stamped = stampedRun(cluster, now);
  let pids = new Map<number, string>();
  const once = async () => {
    // Read again each run: the engine replaces hosts (runs or resident growth), and a new host's pid
    // must count from its start.
    if (TAIL && pids.size) pids = clusterPids();
    // With several clients a process's scheduling over one run is every run's: not read.
    const before = TAIL && CLIENTS === 1 ? schedNow(pids) : undefined;
    const run = await stamped();
    const sched: Sched | undefined = before ? schedDelta(before, schedNow(pids)) : undefined;
    const hostPids = [...pids].filter(([, k]) => k === 'host').map(([p]) => p);
    return { ...run, ms: run.received - run.sent, sched, hostPids };
  };
  // `WARM_CLIENTS=4`: the warm-up at that many clients starts as many sandbox hosts (one client's
  // leaves one), as after the cluster bench's 16-client phase.
  const warmClients = Number(process.env.WARM_CLIENTS ?? CLIENTS);
  if (warmClients !== CLIENTS) await burst(async () => void (await once()), 100, warmClients);
  await burst(async () => void (await once()), 50, CLIENTS);
  pids = TAIL ? clusterPids() : pids;
  const redisPid = [...pids].find(([, kind]) => kind === 'redis')?.[0];
  const fsyncs =
    TAIL && redisPid && process.env.FSYNC_TRACE !== '0'
      ? fsyncTrace(redisPid, `/tmp/tail-fsync-${process.pid}.txt`)
      : undefined;
  if (fsyncs) await new Promise((r) => setTimeout(r, 500));
  const callsBefore = CALLS && redis ? commandCalls(await redis.info('commandstats')) : undefined;
  // Redis's own slow events (AOF write/fsync, expiry cycles, commands) of 1 ms and more.
  if (TAIL && redis) await redis.config('SET', 'latency-monitor-threshold', '1');
  const infoBefore = TAIL && redis ? await redis.info() : '';
  const lat: number[] = [];
  const record = async () => {
    const run = await once();
    lat.push(run.ms);
    if (STAGES && redis) {
      const [createdAt, timings] = await redis.hmget(keys.run(run.id), 'createdAt', 'timings');
      const row = stageRow(run.sent, run.received, createdAt, timings, run.bytesAt, run.writtenAt);
      stageRows.push({ stages: row, latencyMs: run.ms });
      if (TAIL)
        tail.push({
          sent: run.sent,
          received: run.received,
          ms: run.ms,
          stages: row,
          hostPids: run.hostPids,
          ...(run.sched ? { sched: run.sched } : {}),
        });
    }
  };
  await burst(record, RUNS, CLIENTS);
  // LAT_DUMP=<file>: every run's latency in order, for fold-phases.ts (round 39, `fold-off`).
  if (process.env.LAT_DUMP) writeFileSync(process.env.LAT_DUMP, JSON.stringify(lat));
  const mean = lat.reduce((a, b) => a + b, 0) / lat.length;
  console.log(
    `${RUNS} ${CLIENTS === 1 ? 'sequential runs' : `runs from ${CLIENTS} clients`}: p50 ${pct(lat, 50).toFixed(2)} / p90 ${pct(lat, 90).toFixed(2)} / ` +
      `p99 ${pct(lat, 99).toFixed(2)} ms, mean ${mean.toFixed(2)} ms`,
  );
  // The sandbox hosts alive at the end (one client: one, or two alternating; round 43 `engine-floor`).
  console.log(`  sandbox hosts alive: ${[...clusterPids().values()].filter((k) => k === 'host').length}`);
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
  const fsyncList = fsyncs ? await fsyncs.stop() : [];
  // TAIL_DUMP=<file>: every run's figures and the fsyncs, for a read of one's own.
  if (TAIL && process.env.TAIL_DUMP)
    writeFileSync(
      process.env.TAIL_DUMP,
      JSON.stringify({
        runs: tail.map((r) => ({ ...r, sched: Object.fromEntries(r.sched ?? []) })),
        fsyncs: fsyncList,
      }),
    );
  if (TAIL) for (const line of tailCauses(tail, process.env.GC_LOG_DIR, fsyncList)) console.log(`  ${line}`);
  if (TAIL && redis) {
    const field = (info: string, f: string) => Number(new RegExp(`^${f}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    const infoAfter = await redis.info();
    const moved = [
      'aof_rewrites',
      'rdb_bgsave_in_progress',
      'expired_keys',
      'evicted_keys',
      'aof_delayed_fsync',
    ]
      .map((f) => `${f} +${field(infoAfter, f) - field(infoBefore, f)}`)
      .join(', ');
    console.log(`  redis over the runs: ${moved}`);
    const latest = (await redis.call('LATENCY', 'LATEST')) as [string, number, number, number][];
    for (const [event, , , max] of latest) {
      const seconds = ((await redis.call('LATENCY', 'HISTORY', event)) as unknown[]).length;
      console.log(`  redis latency event ${event}: in ${seconds} seconds, max ${max} ms`);
    }
  }
  const clockNote = STAGES ? clockStepNote(clockStep()) : undefined;
  if (clockNote) console.log(`  ${clockNote}`);
} finally {
  redis?.disconnect();
  await cluster.stop();
}
