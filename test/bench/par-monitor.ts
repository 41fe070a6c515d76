/**
 * `node test/bench/par-monitor.ts`: one run of `CALLS` (default 100) parallel binding calls on a
 * local cluster, with Redis's MONITOR on: every command of the run in order (script calls by the
 * script's first key, commands inside them indented), for reading what a parallel run sends.
 */
import { createRedis } from '@islet/core';
import { startOneClientCluster } from './cluster-figures.ts';
import { parallelCallRun } from './parallel-run.ts';
import { startPingApp } from './ping-app.ts';

const CALLS = Number(process.env.CALLS ?? 100);
const { app, port } = await startPingApp();
const cluster = await startOneClientCluster('1');
const redis = createRedis(cluster.redisUrl);
const lines: string[] = [];
try {
  const run = await parallelCallRun(cluster, port, CALLS, 'Parallel calls');
  for (let i = 0; i < 20; i++) await run();
  const monitor = await redis.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    lines.push(
      `${source} ${args
        .slice(0, 4)
        .map((a) => a.slice(0, 60))
        .join(' ')}`,
    );
  });
  await new Promise((r) => setTimeout(r, 200));
  lines.length = 0;
  await run();
  await new Promise((r) => setTimeout(r, 200));
  monitor.disconnect();
} finally {
  redis.disconnect();
  await cluster.stop();
  app.close();
}
console.log(lines.join('\n'));
