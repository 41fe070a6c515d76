/**
 * `node test/bench/call-lone-counts.ts` (round 45, `call-regress`): what a lone sequential binding
 * call costs each process by count — main-thread wake-ups, whole-process minor page faults — and,
 * for the gateway, its V8 garbage collections (scavenges and mark-compacts, `--trace-gc` lines on
 * its output) and its Redis commands, over `RUNS` (default 40) programs of `CALLS` (default 20)
 * sequential calls to an instant loopback App (`ping-app.ts`), after `WARM` (default 30). The runs'
 * own submit and end are spread over their calls, alike for both sides of an ABBA. Counts: they read
 * the same at any load. Main-thread CPU µs a call is printed too (schedstat): a time, claimed only
 * under the bench lock.
 *
 *   node test/bench/call-lone-counts.ts
 *   RUNS=100 node test/bench/call-lone-counts.ts
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { commandStats } from './cluster-figures.ts';
import { pingConnection, runWithApp, startPingApp } from './ping-app.ts';
import { threadCpu } from './thread-perf.ts';

const RUNS = Number(process.env.RUNS ?? 40);
const CALLS = Number(process.env.CALLS ?? 20);
const WARM = Number(process.env.WARM ?? 30);

const { app, port } = await startPingApp();
// The gateway's and runner's --trace-gc lines (ISLET_DEV_NODE_FLAGS, cluster-child.ts) reach this
// process's stderr through the cluster's `verbose`, prefixed by the process: counted, not echoed.
process.env.ISLET_DEV_NODE_FLAGS = `${process.env.ISLET_DEV_NODE_FLAGS ?? ''} --trace-gc`;
const gc = { scavenge: 0, markCompact: 0, other: 0 };
const write = process.stderr.write.bind(process.stderr);
process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
  if (/^\[(gateway|runner)-\d+\] /.test(text)) {
    if (text.startsWith('[gateway-') && /\bms: /.test(text)) {
      if (text.includes('Scavenge')) gc.scavenge++;
      else if (text.includes('Mark-Compact') || text.includes('Mark-sweep')) gc.markCompact++;
      else gc.other++;
    }
    return true;
  }
  return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stderr.write;
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: { ISLET_TENANT_POOL_SHARE: '1', ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
  verbose: true,
});
const gateway = cluster.gateways[0];
const redis = createRedis(cluster.redisUrl);
try {
  const a = api(cluster.url, cluster.devKey);
  const connection = await pingConnection(a, port);
  const program = sequentialCalls(CALLS);
  for (let i = 0; i < WARM; i++) await runWithApp(a, program, connection);
  const pids = { gateway: gateway?.pid, runner: cluster.runners[0]?.pid };
  const c0 = commandStats(await redis.info('commandstats'));
  const gc0 = { ...gc };
  const before = { gateway: threadCpu(pids.gateway), runner: threadCpu(pids.runner) };
  for (let i = 0; i < RUNS; i++) await runWithApp(a, program, connection);
  const after = { gateway: threadCpu(pids.gateway), runner: threadCpu(pids.runner) };
  const c1 = commandStats(await redis.info('commandstats'));
  const calls = RUNS * CALLS;
  const per = (n: number) => (n / calls).toFixed(3);
  const line = (who: 'gateway' | 'runner') =>
    `${who}: wake-ups ${per(after[who].wakes - before[who].wakes)}, faults ${per(after[who].faults - before[who].faults)}, ` +
    `main CPU µs ${per(after[who].main - before[who].main)} a call`;
  const commands = [...c1]
    .map(([name, n]) => [name, (n - (c0.get(name) ?? 0)) / calls] as const)
    .filter(([name, n]) => n > 0 && name !== 'info')
    .sort((x, y) => y[1] - x[1]);
  console.log(`${RUNS} runs of ${CALLS} sequential calls (${calls} calls), per call:`);
  console.log(line('gateway'));
  console.log(line('runner'));
  console.log(
    `gateway GCs: scavenges ${per(gc.scavenge - gc0.scavenge)}, mark-compacts ${per(gc.markCompact - gc0.markCompact)}, other ${per(gc.other - gc0.other)} a call`,
  );
  console.log(
    `Redis commands a call ${commands.reduce((s, [, n]) => s + n, 0).toFixed(2)}: ${commands
      .slice(0, 8)
      .map(([name, n]) => `${name} ${n.toFixed(2)}`)
      .join(', ')}`,
  );
} finally {
  redis.disconnect();
  await cluster.stop();
  app.close();
}
