/**
 * `node test/bench/fair-timeline.ts`: a deferred job's way back to a slot, step by step, in Redis's
 * own clock (MONITOR, which slows Redis: read the steps against each other, not as latencies). One
 * runner, 4 slots, default settings but the rate limit; two tenants at 16 clients (as
 * `npm run bench:cluster`'s fair-share phase), `RUNS` runs (default 150) watched after 200 unwatched.
 * Per job, its steps in order: queued (LPUSH to the wait list), fetched (the lock set), refused
 * (ZADD to its tenant's deferred set), moved to delayed (the runner's moveToDelayed), slot reserved
 * for it (ZADD to the pool's busy set by a release), read by the promoter (HGETALL from a client),
 * promoted (ZREM from the delayed set); the mean and p50 of each consecutive pair.
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { burst, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 150);
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
});
const a = api(cluster.url, cluster.devKey);
const steps = new Map<string, [string, number][]>();
const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
function step(time: string, args: string[], source: string) {
  const cmd = (args[0] ?? '').toUpperCase();
  const rest = args.slice(1).join(' ');
  const id = uuid.exec(rest)?.[0];
  if (!id) return;
  const key = args[1] ?? '';
  const name =
    cmd === 'ZADD' && key.endsWith(':deferred')
      ? 'refused'
      : cmd === 'ZADD' && key.endsWith('}:delayed')
        ? 'delayed'
        : cmd === 'ZADD' && key.endsWith('}:busy')
          ? 'leased'
          : cmd === 'LPUSH' && key.endsWith('}:wait')
            ? 'queued'
            : cmd === 'SET' && key.endsWith(':lock') && args.includes('PX')
              ? 'fetched'
              : cmd === 'HGETALL' && key.startsWith('islet:{runs-') && source !== 'lua'
                ? 'read by promoter'
                : cmd === 'ZREM' && key.endsWith('}:delayed')
                  ? 'promoted'
                  : undefined;
  if (!name) return;
  const list = steps.get(id) ?? [];
  // Queued again after its promotion: its second wait, told apart from the first.
  list.push([name === 'queued' && list.length > 0 ? 'queued again' : name, Number(time) * 1000]);
  steps.set(id, list);
}
try {
  const one1 = trivialRun(cluster, 'x');
  await burst(one1, 64, 16);
  await a('POST', '/v1/admin/tenants', { id: 'bench-second', name: 'bench-second' });
  const made = await a('POST', '/v1/admin/tenants/bench-second/keys', {
    scopes: ['apps.use', 'sessions.read'],
  });
  if (made.status !== 201) throw new Error(`key: ${made.status}`);
  const one2 = trivialRun({ url: cluster.url, devKey: (made.body as { key: string }).key }, 'x');
  await burst(one2, 8, 8);
  let turn = 0;
  const two = () => (turn++ % 2 ? one2 : one1)();
  await burst(two, 200, 16);
  const watcher = createRedis(cluster.redisUrl);
  const monitor = await watcher.monitor();
  monitor.on('monitor', (time: string, args: string[], source: string) => step(time, args, source));
  await burst(two, RUNS, 16);
  monitor.disconnect();
  watcher.disconnect();
} finally {
  await cluster.stop();
}
const gaps = new Map<string, number[]>();
let deferred = 0;
for (const list of steps.values()) {
  if (list.some(([n]) => n === 'refused')) deferred++;
  for (let i = 1; i < list.length; i++) {
    const pair = `${list[i - 1]![0]} → ${list[i]![0]}`;
    gaps.set(pair, [...(gaps.get(pair) ?? []), list[i]![1] - list[i - 1]![1]]);
  }
}
console.log(`${steps.size} jobs seen, ${deferred} refused at least once`);
console.log('step'.padEnd(36), 'n'.padStart(5), 'mean ms'.padStart(9), 'p50 ms'.padStart(9));
for (const [pair, v] of [...gaps].sort((x, y) => y[1].length - x[1].length)) {
  if (v.length < 5) continue;
  v.sort((x, y) => x - y);
  const mean = v.reduce((s, x) => s + x, 0) / v.length;
  console.log(
    pair.padEnd(36),
    String(v.length).padStart(5),
    mean.toFixed(2).padStart(9),
    v[Math.floor(v.length / 2)]!.toFixed(2).padStart(9),
  );
}
process.exit(0);
