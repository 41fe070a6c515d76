/**
 * `node test/chaos/failover-probe.ts`: is an acknowledged run ever lost when a Redis Cluster master
 * dies? Many clients submit trivial runs (202 = acknowledged) as fast as they can while the master
 * of the queue slot is SIGKILLed; then every acknowledged run must reach a final status. Prints
 * lost runs per round. PROBE_ROUNDS (3), PROBE_SECONDS (10), PROBE_CLIENTS (32); extra env for the
 * services as PROBE_ENV='ISLET_REDIS_WAIT_REPLICAS=1'.
 */
import { startCluster } from '@islet/devstack';
import { startRedisCluster } from '@islet/testkit';
import { api, sleep } from '../e2e/helpers.ts';
import { clusterRedisConfig } from '../e2e/redis-cluster-config.ts';

const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 3);
const SECONDS = Number(process.env.PROBE_SECONDS ?? 10);
const CLIENTS = Number(process.env.PROBE_CLIENTS ?? 32);
const EXTRA = Object.fromEntries(
  (process.env.PROBE_ENV ?? '')
    .split(',')
    .filter(Boolean)
    .map((kv) => kv.split('=') as [string, string]),
);

for (let round = 0; round < ROUNDS; round++) {
  const redis = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
  const cluster = await startCluster({
    redisConfig: clusterRedisConfig(redis),
    gateways: 2,
    runners: [{ modes: ['read-only'], concurrency: 4 }],
    codeMode: false,
    env: { ISLET_RATE_LIMIT_PER_MINUTE: '10000000', ISLET_MAX_IN_FLIGHT_RUNS: '100000', ...EXTRA },
  });
  try {
    const acked: string[] = [];
    const refused = new Map<string, number>();
    const refuse = (why: string) => refused.set(why, (refused.get(why) ?? 0) + 1);
    const until = Date.now() + SECONDS * 1000;
    let n = 0;
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < until) {
        const a = api(cluster.gatewayUrls[n++ % 2]!, cluster.devKey);
        try {
          const r = await a('POST', '/v1/runs', {
            code: 'return 1',
            description: 'probe',
            sessionId: 'probe',
            turnId: 't',
            callId: `c${n}`,
          });
          if (r.status === 202) acked.push(r.body.id);
          else refuse(`${r.status} ${r.body?.code ?? ''}`);
        } catch (err) {
          refuse((err as Error).message);
        }
      }
    });
    await sleep((SECONDS * 1000) / 3);
    const t0 = Date.now();
    const port = await redis.killMaster(await redis.masterOf('{runs-read-only}'));
    const failoverMs = Date.now() - t0;
    await Promise.all(clients);
    const a = api(cluster.url, cluster.devKey);
    const deadline = Date.now() + 90_000;
    let open = [...acked];
    while (open.length > 0 && Date.now() < deadline) {
      const next: string[] = [];
      for (const id of open) {
        const r = await a('GET', `/v1/code-runs/${id}`);
        if (!['Completed', 'Failed', 'Cancelled'].includes(r.body?.status)) next.push(id);
      }
      open = next;
      if (open.length) await sleep(1000);
    }
    const missing = [];
    for (const id of open) missing.push(`${id}: ${(await a('GET', `/v1/code-runs/${id}`)).status}`);
    console.log(
      `round ${round}: killed ${port} (failover ${failoverMs} ms); ${acked.length} acknowledged, not acknowledged: ${JSON.stringify(Object.fromEntries(refused))}, ${open.length} never ended ${missing.slice(0, 5).join('; ')}`,
    );
  } finally {
    await cluster.stop();
    await redis.stop();
  }
}
process.exit(0);
