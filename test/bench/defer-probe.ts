/**
 * `node test/bench/defer-probe.ts`: the runner's fair-share deferrals per run, phase by phase, at
 * 16 clients on a local cluster (one runner, 4 slots, default settings): a lone tenant, two
 * tenants (8 clients each), then the lone tenant again four times; after each phase the pool's
 * queued counts, waiting tenants and busy leases. A lone tenant is never held to its share (no
 * other tenant waits), so any deferral there is a lease seen held that was already given back.
 * `SEED=1` adds a lone burst seeded with one busy member no runner holds (round 20's chain).
 */
import { createRedis, keys } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { burst, trivialRun } from './cluster-figures.ts';

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
});
const redis = createRedis(cluster.redisUrl);
const a = api(cluster.url, cluster.devKey);
const one1 = trivialRun(cluster, 'x');
const deferrals = async () => {
  const text = await (await fetch(`${cluster.runners[0]!.url}/metrics`)).text();
  return [...text.matchAll(/^islet_tenant_share_deferrals_total\{[^}]*\} (\d+)/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
};
const state = async () => {
  const m = 'read-only';
  return JSON.stringify({
    queued: await redis.hgetall(keys.poolQueued(m)),
    waiting: await redis.zrange(keys.poolWaiting(m), 0, -1),
    busy: await redis.zcard(keys.poolBusy(m)),
    slots: await redis.hgetall(keys.poolSlots(m)),
  });
};
let last = 0;
const phase = async (name: string, fn: () => Promise<void>, n: number) => {
  const t = performance.now();
  await fn();
  const d = await deferrals();
  console.log(
    `${name}: ${(n / ((performance.now() - t) / 1000)).toFixed(1)}/s deferrals ${d - last} (${((d - last) / n).toFixed(3)}/run) ${await state()}`,
  );
  last = d;
};
try {
  await phase('warm', () => burst(one1, 64, 16), 64);
  await phase('lone', () => burst(one1, 300, 16), 300);
  const second = 'bench-second';
  await a('POST', '/v1/admin/tenants', { id: second, name: second });
  const key = (
    (await a('POST', `/v1/admin/tenants/${second}/keys`, { scopes: ['apps.use', 'sessions.read'] })).body as {
      key: string;
    }
  ).key;
  const one2 = trivialRun({ url: cluster.url, devKey: key }, 'x');
  await phase('second warm', () => burst(one2, 8, 8), 8);
  let turn = 0;
  await phase('two', () => burst(() => (turn++ % 2 ? one2 : one1)(), 300, 16), 300);
  for (let i = 0; i < 4; i++) await phase(`lone ${i}`, () => burst(one1, 200, 16), 200);
  // SEED=1: a lone burst with one seed of the chain (round 20): after its 50th run, a busy member
  // no runner holds (a release that lands late), lapsing 2 s later; the deferrals after it count.
  if (process.env.SEED === '1')
    await phase(
      'lone seeded',
      async () => {
        let done = 0;
        let seeded = false;
        await burst(
          async () => {
            await one1();
            if (++done === 50 && !seeded) {
              seeded = true;
              const [s] = await redis.time();
              await redis.zadd(keys.poolBusy('read-only'), Number(s) * 1000 + 2000, 'late');
            }
          },
          400,
          16,
        );
      },
      400,
    );
} finally {
  redis.disconnect();
  await cluster.stop();
}
process.exit(0);
