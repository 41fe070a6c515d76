/**
 * `node test/bench/end-order-monitor.ts` (round 42, `end-floor`): the top-level Redis commands of
 * `RUNS` (default 2) sequential waited runs on the cluster bench's one-client settings (the fair
 * share at 0.5: the fused end), MONITOR'd, each with its connection (by client address, numbered in
 * order of first appearance) and its argument bytes — which connection sends what around a run's end,
 * and in which order. `WARM` (default 50) runs first.
 */
import { createRedis } from '@islet/core';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 2);
const WARM = Number(process.env.WARM ?? 50);
const cluster = await startOneClientCluster('0.5', JSON.parse(process.env.BENCH_ENV ?? '{}'));
const monitor = createRedis(cluster.redisUrl);
try {
  const once = stampedRun(cluster, () => performance.now());
  for (let i = 0; i < WARM; i++) await once();
  const lines: string[] = [];
  const m = await monitor.monitor();
  m.on('monitor', (time: string, args: string[], source: string) => {
    lines.push(
      `${time} ${source} ${args[0]} ${args[1]?.slice(0, 60) ?? ''} (${args.slice(1).reduce((s, a) => s + Buffer.byteLength(String(a)), 0)} B)`,
    );
  });
  await new Promise((r) => setTimeout(r, 200));
  lines.push('--- runs start');
  for (let i = 0; i < RUNS; i++) {
    await once();
    lines.push(`--- run ${i} answered`);
  }
  await new Promise((r) => setTimeout(r, 300));
  m.disconnect();
  const conns = new Map<string, number>();
  for (const l of lines) {
    const src = l.split(' ')[1] ?? '';
    if (!l.startsWith('---') && !src.startsWith('lua') && !conns.has(src)) conns.set(src, conns.size);
    console.log(l.startsWith('---') || src === 'lua' ? l : l.replace(src, `conn${conns.get(src)}`));
  }
} finally {
  monitor.disconnect();
  await cluster.stop();
}
