/**
 * `node test/bench/defer-trace.ts`: repeated bursts of trivial runs on one local cluster (one
 * runner, 4 slots, one tenant, `CLIENTS` clients, `ROUNDS` bursts of `RUNS` runs), MONITOR on. The
 * pool's busy set is followed from the stream (every ZADD/ZREM on it, with the script that made
 * it); at the first deferral of a round (a ZADD to a tenant's deferred set), the members held then
 * and the calls that added them are printed. `BENCH_ENV`: JSON of settings for the cluster.
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { burst, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 200);
const CLIENTS = Number(process.env.CLIENTS ?? 16);
const ROUNDS = Number(process.env.ROUNDS ?? 20);
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: {
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(process.env.BENCH_ENV ? JSON.parse(process.env.BENCH_ENV) : {}),
  },
});
const one = trivialRun(cluster, 'defer trace', { tenantApps: true });
const monitor = createRedis(cluster.redisUrl);
const m = await monitor.monitor();
const busy = new Map<string, string>();
const ring: string[] = [];
let script = '';
let deferrals = 0;
let reported = false;
let seen = 0;
m.on('monitor', (time: string, args: string[], source: string, database: string) => {
  const name = (args[0] ?? '').toLowerCase();
  if (source !== 'lua') script = `${time} ${database} ${name} ${args.slice(1, 4).join(' ').slice(0, 120)}`;
  const line = `${source === 'lua' ? '    ' : ''}${time} ${args.join(' ').slice(0, 160)}`;
  ring.push(line);
  if (ring.length > 400) ring.shift();
  const key = args[1] ?? '';
  if (key.endsWith(':busy')) {
    if (name === 'zadd') busy.set(args[args.length - 1]!, script);
    if (name === 'zrem') busy.delete(args[2]!);
  }
  if (name === 'zadd' && key.endsWith(':deferred')) {
    deferrals++;
    if (!reported) {
      reported = true;
      console.log(`first deferral: ${line}\nbusy (${busy.size}):`);
      for (const [id, by] of busy) console.log(`  ${id} by ${by}`);
      console.log(`last commands:\n${ring.join('\n')}`);
    }
  }
});
m.on('error', () => undefined);
try {
  for (let r = 0; r < ROUNDS; r++) {
    const before = deferrals;
    reported = false;
    await burst(one, RUNS, CLIENTS);
    console.log(`round ${r}: deferrals ${deferrals - before} busy after ${busy.size}`);
    const out = cluster
      .output('runner', 0)
      .split('\n')
      .filter((l) => l && !l.includes('ready'));
    for (const l of out.slice(seen)) console.log(`  runner: ${l.slice(0, 300)}`);
    seen = out.length;
  }
} finally {
  m.disconnect();
  monitor.disconnect();
  await cluster.stop();
}
process.exit(0);
