/**
 * `node test/bench/redis-cluster-calls.ts`: where a trivial run's top-level Redis commands go on one
 * redis-server and on a 3-master Redis Cluster (round 51 `cluster-path`; `redis-cluster-counts.ts`
 * counts them, this names them). The one-client stack of `startOneClientCluster` on each backend of
 * `BENCH_BACKENDS` (default `one,cluster`); after `WARM` runs (default 200), MONITOR on every master
 * while `RUNS` runs (default 200) go through one client at a time; each top-level command (a
 * script's own commands left out) is grouped by name, a script by its first key's shape, and printed
 * a run, with its master.
 */
import { createRedis, type Redis, redisNodes } from '@islet/core';
import { startRedisCluster } from '@islet/testkit';
import { Redis as IORedis } from 'ioredis';
import { clusterRedisConfig } from '../e2e/redis-cluster-config.ts';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const BACKENDS = (process.env.BENCH_BACKENDS ?? 'one,cluster').split(',');
const WARM = Number(process.env.WARM ?? 200);
const RUNS = Number(process.env.RUNS ?? 200);

const shape = (key: string | undefined) =>
  (key ?? '')
    .replace(/\{[^}]*\}/g, '{…}')
    .replace(/[0-9a-f-]{20,}/g, '<id>')
    .replace(/:\d+$/, ':<n>');

const group = (args: string[]) => {
  const name = (args[0] ?? '?').toLowerCase();
  return name === 'evalsha' || name === 'eval' ? `${name} ${shape(args[3])}` : `${name} ${shape(args[1])}`;
};

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
  const monitors: Redis[] = [];
  try {
    const once = trivialRun(stack, 'Cluster calls');
    await burst(once, WARM, 1);
    const counts = new Map<string, number>();
    for (const node of await redisNodes(probe)) {
      const port = node.options.port;
      const client = new IORedis({ port, host: node.options.host });
      client.on('error', () => undefined);
      const m = await client.monitor();
      monitors.push(m as unknown as Redis, client as unknown as Redis);
      m.on('error', () => undefined);
      m.on('monitor', (_time: string, args: string[], source: string) => {
        if (source === 'lua') return;
        const g = `${group(args)}${redisCluster ? ` @${port}` : ''}`;
        counts.set(g, (counts.get(g) ?? 0) + 1);
      });
    }
    await burst(once, RUNS, 1);
    await new Promise((r) => setTimeout(r, 200));
    const rows = [...counts].map(([g, n]) => [g, n / RUNS] as const).filter(([, n]) => n >= 0.05);
    rows.sort((a, b) => b[1] - a[1]);
    const total = rows.reduce((s, [, n]) => s + n, 0);
    console.log(
      `${backend === 'cluster' ? 'Redis Cluster (3 masters)' : 'one redis-server'}: top-level commands a run ${total.toFixed(2)} (over ${RUNS} runs, 1 client; rows ≥ 0.05)`,
    );
    for (const [g, n] of rows) console.log(`  ${n.toFixed(2)}  ${g}`);
  } finally {
    for (const m of monitors) m.disconnect();
    probe.disconnect();
    await stack.stop();
    await redisCluster?.stop();
  }
}
