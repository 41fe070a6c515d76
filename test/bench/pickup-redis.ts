/**
 * `node test/bench/pickup-redis.ts` (round 49, `pickup-hop`): Redis's own share of the one-client
 * handed pick-up hop, by call. The cluster bench's one-client cluster (share 0.5), `WARM` runs
 * (300), then `RUNS` (500) with `SLOWLOG` at a 0 µs threshold: each top-level command's execution
 * time as Redis measures it (the script's body and the writes it calls, not the request's read, the
 * AOF write or its fsync), grouped by command and its script (a script told apart by its first
 * key's shape, ids cut); `INFO commandstats` calls a run; the AOF's bytes a run (`aof_current_size`,
 * the fsync'd write each script call appends). Timed figures (execution µs): under the bench lock.
 */
import { createRedis } from '@islet/core';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 500);
const WARM = Number(process.env.WARM ?? 300);

const cluster = await startOneClientCluster('0.5', JSON.parse(process.env.BENCH_ENV ?? '{}'));
const redis = createRedis(cluster.redisUrl);
try {
  const once = stampedRun(cluster, () => performance.timeOrigin + performance.now());
  for (let i = 0; i < WARM; i++) await once();
  const aofOf = async () => Number(/aof_current_size:(\d+)/.exec(await redis.info('persistence'))?.[1]);
  await redis.config('SET', 'slowlog-log-slower-than', '0');
  await redis.config('SET', 'slowlog-max-len', String(RUNS * 100));
  await redis.config('RESETSTAT');
  await redis.slowlog('RESET');
  const aof0 = await aofOf();
  for (let i = 0; i < RUNS; i++) await once();
  const aof1 = await aofOf();
  const log = (await redis.slowlog('GET', -1)) as [number, number, number, string[], string][];
  await redis.config('SET', 'slowlog-log-slower-than', '10000');
  const stats = await redis.info('commandstats');
  const groups = new Map<string, number[]>();
  // A script's own commands are logged before it, with the script's client (no peer address of
  // their own in 7.0: its fake client's): each script call's inner commands, summed by script.
  const inner = new Map<string, { sum: number[]; n: number[] }>();
  let pending: { us: number; n: number } = { us: 0, n: 0 };
  for (const [, , us, args, addr] of [...log].reverse()) {
    const top = typeof addr === 'string' && addr.includes(':') && !addr.startsWith('?');
    const c = String(args[0]).toLowerCase();
    if (!top) {
      pending.us += us;
      pending.n++;
      continue;
    }
    if (c === 'evalsha' || c === 'eval') {
      const name = `${c} ${c === 'eval' ? 'text' : String(args[1]).slice(0, 8)}`;
      const g = inner.get(name) ?? { sum: [], n: [] };
      g.sum.push(pending.us);
      g.n.push(pending.n);
      inner.set(name, g);
    }
    pending = { us: 0, n: 0 };
  }
  for (const [, , us, args] of log) {
    const cmd = String(args[0]).toLowerCase();
    if (['slowlog', 'info', 'config'].includes(cmd)) continue;
    let name = cmd;
    if (cmd === 'evalsha' || cmd === 'eval') {
      const key = String(args[3] ?? '').replace(/[0-9a-f-]{20,}|\d{3,}/g, '*');
      name = `${cmd} ${cmd === 'eval' ? 'text' : String(args[1]).slice(0, 8)} numkeys ${args[2]} key1 ${key}`;
    } else if (args[1] !== undefined)
      name = `${cmd} ${String(args[1]).replace(/[0-9a-f-]{20,}|\d{3,}/g, '*')}`;
    const g = groups.get(name) ?? [];
    g.push(us);
    groups.set(name, g);
  }
  const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))]!;
  console.log(`${RUNS} runs; AOF ${((aof1 - aof0) / RUNS).toFixed(0)} B a run`);
  console.log(
    '| command (script by its first key) | a run | execution µs p50 | mean | p90 |\n|---|---|---|---|---|',
  );
  for (const [name, us] of [...groups].sort((a, b) => b[1].length - a[1].length)) {
    const mean = us.reduce((s, x) => s + x, 0) / us.length;
    console.log(
      `| ${name} | ${(us.length / RUNS).toFixed(2)} | ${q(us, 0.5)} | ${mean.toFixed(1)} | ${q(us, 0.9)} |`,
    );
  }
  console.log(
    "a script call's own commands (logged before it), by script: commands a call, their execution µs summed p50 / mean",
  );
  for (const [name, g] of inner) {
    const n = g.n.reduce((a, b) => a + b, 0) / g.n.length;
    const mean = g.sum.reduce((a, b) => a + b, 0) / g.sum.length;
    console.log(
      `  ${name}: ${g.n.length} calls, ${n.toFixed(2)} commands a call, ${q(g.sum, 0.5)} / ${mean.toFixed(1)} µs`,
    );
  }
  console.log('commandstats (calls a run, µs a call):');
  for (const m of stats.matchAll(/cmdstat_(\w+(?:\|\w+)?):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/g))
    if (Number(m[2]) >= RUNS / 2)
      console.log(`  ${m[1]} ${(Number(m[2]) / RUNS).toFixed(2)} a run, ${m[4]} µs a call`);
} finally {
  redis.disconnect();
  await cluster.stop();
}
