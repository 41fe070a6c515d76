/**
 * `node test/bench/one-run-trace.ts`: every command Redis runs for sequential trivial runs (after
 * `WARM` runs, default 50; MONITOR over `RUNS`, default 3), in order, each with its arguments
 * (long ones cut to `CUT` characters, default 60, with their length): the submit's and the end's
 * scripts read command by command.
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 3);
const WARM = Number(process.env.WARM ?? 50);
const CUT = Number(process.env.CUT ?? 60);
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000', ...JSON.parse(process.env.BENCH_ENV ?? '{}') },
});
const once = trivialRun(cluster, 'Trace a trivial program', { tenantApps: true });
const cut = (a: string) => (a.length > CUT ? `${a.slice(0, CUT)}…(${a.length})` : a);
try {
  for (let i = 0; i < WARM; i++) await once();
  const monitor = createRedis(cluster.redisUrl);
  const m = await monitor.monitor();
  const lines: string[] = [];
  m.on('monitor', (_t: string, args: string[], source: string) => {
    const name = (args[0] ?? '').toLowerCase();
    if (source !== 'lua' && (name === 'evalsha' || name === 'eval')) {
      const nk = Number(args[2]);
      const argBytes = args.slice(3 + nk).reduce((s, a) => s + a.length, 0);
      lines.push(
        `${name} ${nk} keys, ${args.length - 3 - nk} args (${argBytes} B): ${args.slice(3, 5).map(cut).join(' ')}`,
      );
    } else lines.push(`${source === 'lua' ? '    ' : ''}${args.map(cut).join(' ')}`);
  });
  m.on('error', () => {});
  for (let i = 0; i < RUNS; i++) await once();
  await new Promise((r) => setTimeout(r, 300));
  m.disconnect();
  monitor.disconnect();
  console.log(lines.join('\n'));
} finally {
  await cluster.stop();
}
process.exit(0);
