/**
 * `git apply test/bench/end-why.patch && node test/bench/end-why.ts`: why the end's direct
 * completion (handed-complete.ts) is taken or refused, counted by the patched end script itself
 * (HINCRBY of `bench:end-*` hashes: what its EXISTS found, key by key; whether the completion
 * fetches next; the delayed set's due and total members; what the direct path did; the
 * completion's answer), at 16 clients on a local cluster (one runner, 4 slots, default settings
 * but the rate limit), a lone tenant then two tenants (8 clients each, as `npm run bench:cluster`'s
 * fair-share phase), `RUNS` runs a phase (default 1000). The patch adds commands to the end: counts
 * only, no time. `git apply -R test/bench/end-why.patch` after.
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { callgrindRedis } from './callgrind-redis.ts';
import { burst, trivialRun } from './cluster-figures.ts';
import { deferralsOf } from './pool-sampler.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
// `CALLGRIND=1`: the cluster's Redis under callgrind (as redis-per-run.ts: slower, its own timing).
const cg = process.env.CALLGRIND ? await callgrindRedis('end-why') : undefined;
await cg?.r.ping();
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
  ...(cg ? { redisUrl: `redis://127.0.0.1:${(cg.r.options as { port: number }).port}` } : {}),
});
const redis = createRedis(cluster.redisUrl);
const a = api(cluster.url, cluster.devKey);
const HASHES = [
  'bench:end-why',
  'bench:end-due',
  'bench:end-direct',
  'bench:end-answer',
  'bench:end-refetch',
];
async function show(name: string, n: number, deferrals: number) {
  console.log(`${name}: ${n} runs, fair-share deferrals a run ${(deferrals / n).toFixed(3)}`);
  for (const h of HASHES) {
    const got = Object.entries(await redis.hgetall(h)).sort((x, y) => Number(y[1]) - Number(x[1]));
    const total = got.reduce((s, [, v]) => s + Number(v), 0);
    console.log(
      `  ${h} (${total}): ${got.map(([k, v]) => `${k} ${v} (${((100 * Number(v)) / total).toFixed(1)} %)`).join('; ')}`,
    );
  }
  await redis.del(...HASHES);
}
try {
  const one1 = trivialRun(cluster, 'x');
  await burst(one1, 64, 16);
  const second = 'bench-second';
  await a('POST', '/v1/admin/tenants', { id: second, name: second });
  const made = await a('POST', `/v1/admin/tenants/${second}/keys`, { scopes: ['apps.use', 'sessions.read'] });
  if (made.status !== 201) throw new Error(`key: ${made.status}`);
  const one2 = trivialRun({ url: cluster.url, devKey: (made.body as { key: string }).key }, 'x');
  await burst(one2, 8, 8);
  await redis.del(...HASHES);
  let d0 = await deferralsOf(cluster.runners[0]!.url);
  await burst(one1, RUNS, 16);
  let d1 = await deferralsOf(cluster.runners[0]!.url);
  await show('lone (16 clients)', RUNS, d1 - d0);
  let turn = 0;
  d0 = d1;
  await burst(() => (turn++ % 2 ? one2 : one1)(), RUNS, 16);
  d1 = await deferralsOf(cluster.runners[0]!.url);
  await show('two tenants (8 + 8 clients)', RUNS, d1 - d0);
} finally {
  redis.disconnect();
  await cluster.stop();
  await cg?.stop();
}
process.exit(0);
