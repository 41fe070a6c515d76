/**
 * `node test/bench/redis-cluster-counts.ts`: a trivial run's Redis work on one redis-server and on
 * a 3-master Redis Cluster (testkit, no replicas, `appendfsync always` as the stack's own Redis), the
 * same one-gateway / one-runner stack (`startOneClientCluster`), in the same minutes (round 51
 * `cluster-path`). For each backend of `BENCH_BACKENDS` (default `one,cluster`) and each client
 * count of `CLIENTS` (default `1,16`): `WARM` runs (default 500), then over `RUNS` (default 1000),
 * a run's
 * - commands as `INFO commandstats` counts them (a script's inner commands included), summed over the
 *   masters, with the scripts' calls (EVALSHA + EVAL) apart;
 * - reads and writes Redis's loop served (`total_reads_processed` / `total_writes_processed`: a
 *   socket read is one batch of commands that arrived together, so these count the messages, not
 *   the commands in them);
 * - each process's CPU (10 ms ticks, all threads and reaped children: redis, gateway, runner +
 *   hosts, as the cluster bench's row);
 * - the client's submit → answer p50 / p99 (`Prefer: wait`).
 * Counts are the claim (the box's load moves the times).
 */

import { createRedis, type Redis, redisNodes } from '@islet/core';
import { startRedisCluster } from '@islet/testkit';
import { clusterRedisConfig } from '../e2e/redis-cluster-config.ts';
import { cpuMsOfDescendants } from './baselines.ts';
import { startOneClientCluster, trivialRun } from './cluster-figures.ts';

const BACKENDS = (process.env.BENCH_BACKENDS ?? 'one,cluster').split(',') as ('one' | 'cluster')[];
const CLIENT_COUNTS = (process.env.CLIENTS ?? '1,16').split(',').map(Number);
const WARM = Number(process.env.WARM ?? 500);
const RUNS = Number(process.env.RUNS ?? 1000);

const kindOf = (cmd: string) =>
  cmd.includes('redis-server') ? 'redis' : cmd.includes('gateway/src/main.ts') ? 'gateway' : 'runner + hosts';

/** Summed over `nodes`: every command's calls by name, and the loop's reads and writes. */
async function countsOf(nodes: Redis[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const add = (name: string, n: number) => out.set(name, (out.get(name) ?? 0) + n);
  for (const node of nodes) {
    for (const m of (await node.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
      add(m[1] as string, Number(m[2]));
    const stats = await node.info('stats');
    for (const name of ['total_reads_processed', 'total_writes_processed'])
      add(name, Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(stats)?.[1] ?? 0));
  }
  return out;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

for (const backend of BACKENDS) {
  const redisCluster =
    backend === 'cluster'
      ? await startRedisCluster({ masters: 3, replicasPerMaster: 0, appendFsync: 'always' })
      : undefined;
  const stack = await startOneClientCluster(
    '0.5',
    {},
    redisCluster ? { redisConfig: clusterRedisConfig(redisCluster) } : {},
  );
  const probe = redisCluster ? createRedis(clusterRedisConfig(redisCluster)) : createRedis(stack.redisUrl);
  try {
    const nodes = await redisNodes(probe);
    const once = trivialRun(stack, 'Cluster counts');
    for (const clients of CLIENT_COUNTS) {
      let left = WARM;
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (left-- > 0) await once();
        }),
      );
      const a = await countsOf(nodes);
      const cpuA = cpuMsOfDescendants(kindOf);
      const times: number[] = [];
      left = RUNS;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (left-- > 0) {
            const t = performance.now();
            await once();
            times.push(performance.now() - t);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const cpuB = cpuMsOfDescendants(kindOf);
      const b = await countsOf(nodes);
      const per = (name: string) => ((b.get(name) ?? 0) - (a.get(name) ?? 0)) / RUNS;
      // The probe's own INFO calls (2 a node a snapshot) are left out.
      const infoCalls = (2 * nodes.length) / RUNS;
      let all = -infoCalls;
      const byName: [string, number][] = [];
      for (const name of b.keys()) {
        if (name.startsWith('total_')) continue;
        const n = per(name) - (name === 'info' ? infoCalls : 0);
        all += per(name);
        if (n > 0.005) byName.push([name, n]);
      }
      byName.sort((x, y) => y[1] - x[1]);
      times.sort((x, y) => x - y);
      const cpu = Object.entries(cpuB)
        .map(([k, ms]) => `${k} ${(((ms - (cpuA[k] ?? 0)) * 1000) / RUNS).toFixed(0)}`)
        .join(', ');
      console.log(
        `${backend === 'cluster' ? 'Redis Cluster (3 masters)' : 'one redis-server'}, ${clients} client${clients > 1 ? 's' : ''}: ${RUNS} runs in ${seconds.toFixed(1)} s (${(RUNS / seconds).toFixed(1)}/s); p50 / p99 ${quantile(times, 0.5).toFixed(2)} / ${quantile(times, 0.99).toFixed(2)} ms`,
      );
      console.log(
        `  a run: commands ${all.toFixed(2)} (scripts' calls EVALSHA ${per('evalsha').toFixed(2)} + EVAL ${per('eval').toFixed(2)}); Redis reads ${per('total_reads_processed').toFixed(2)}, writes ${per('total_writes_processed').toFixed(2)}`,
      );
      console.log(`  by name: ${byName.map(([n, c]) => `${n} ${c.toFixed(2)}`).join(', ')}`);
      console.log(`  CPU µs a run (10 ms ticks): ${cpu}`);
    }
  } finally {
    probe.disconnect();
    await stack.stop();
    await redisCluster?.stop();
  }
}
