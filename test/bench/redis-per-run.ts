/**
 * `node test/bench/redis-per-run.ts`: Redis's script instructions a run (EVAL/EVALSHA and the
 * commands they run: `redis-callgrind.sh`'s `evalGenericCommand`), counted on a local cluster whose
 * redis-server runs under callgrind, at 16 clients: a lone tenant, then two tenants (8 + 8, as the
 * fair-share row), `RUNS` runs a phase (default 400), with the runner's fair-share deferrals a run.
 * A count no load moves; the cluster under valgrind is slower, so its timing (and with it how
 * often the fair share defers) is not the live bench's: compare sides by deferrals too. No AOF.
 */
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { callgrindRedis } from './callgrind-redis.ts';
import { burst, trivialRun } from './cluster-figures.ts';
import { deferralsOf } from './pool-sampler.ts';

const RUNS = Number(process.env.RUNS ?? 400);
const cg = await callgrindRedis('redis-per-run');
await cg.r.ping();
const port = (cg.r.options as { port: number }).port;
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
  redisUrl: `redis://127.0.0.1:${port}`,
});
try {
  const a = api(cluster.url, cluster.devKey);
  const one1 = trivialRun(cluster, 'x');
  await burst(one1, 64, 16);
  const second = 'bench-second';
  await a('POST', '/v1/admin/tenants', { id: second, name: second });
  const made = await a('POST', `/v1/admin/tenants/${second}/keys`, { scopes: ['apps.use', 'sessions.read'] });
  if (made.status !== 201) throw new Error(`key: ${made.status}`);
  const one2 = trivialRun({ url: cluster.url, devKey: (made.body as { key: string }).key }, 'x');
  await burst(one2, 16, 8);
  const phase = async (name: string, run: () => Promise<void>) => {
    const d0 = await deferralsOf(cluster.runners[0]!.url);
    const i0 = cg.instructions();
    await burst(run, RUNS, 16);
    const i1 = cg.instructions();
    const d1 = await deferralsOf(cluster.runners[0]!.url);
    console.log(
      `${name}: ${RUNS} runs, script instructions a run ${((i1 - i0) / RUNS / 1000).toFixed(1)} K, deferrals a run ${((d1 - d0) / RUNS).toFixed(3)}`,
    );
  };
  let turn = 0;
  for (let i = 0; i < 2; i++) {
    await phase('lone', one1);
    await phase('two tenants', () => (turn++ % 2 ? one2 : one1)());
  }
} finally {
  await cluster.stop();
  await cg.stop();
}
process.exit(0);
