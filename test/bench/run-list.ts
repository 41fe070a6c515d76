/**
 * How long `GET /v1/runs` takes on a tenant with many runs: fills a real Redis (a fresh one on a
 * free port) with N runs through the run store (the index is written by the store's own create and
 * finish scripts), then asks the gateway for pages through fastify inject and prints the median
 * and p95 per query. `npm run bench:run-list` (N = 10000 by default: `node test/bench/run-list.ts 50000`).
 */
import { createLogger, generateSealKey, loadConfig } from '@islet/core';
import { buildApp, createGatewayDeps } from '@islet/gateway';
import { startRedis } from '@islet/testkit';

const N = Number(process.argv[2] ?? 10_000);
const ROUNDS = 50;

const redis = await startRedis({ appendOnly: false });
const config = loadConfig({
  ISLET_REDIS_URL: redis.url,
  ISLET_SEAL_KEYS: generateSealKey(),
  ISLET_INTERNAL_TOKEN: 'internal-token-for-bench',
});
const deps = await createGatewayDeps(config, createLogger({ name: 'bench', level: 'silent' }));
const app = await buildApp(deps);
try {
  await deps.tenants.createTenant({ id: 'bench', name: 'Bench' });
  const { key } = await deps.tenants.createKey('bench', ['apps.use', 'sessions.read', 'sessions.admin'], {
    principal: 'ann',
  });
  const filled = performance.now();
  const base = Date.now() - N;
  const WAVE = 200;
  for (let i = 0; i < N; i += WAVE) {
    await Promise.all(
      Array.from({ length: Math.min(WAVE, N - i) }, async (_, j) => {
        const n = i + j;
        const id = `run-${n.toString().padStart(8, '0')}`;
        const run = {
          id,
          tenant: 'bench',
          session: `s-${n % 500}`,
          turn: 't',
          callId: 'c',
          principal: n % 3 === 0 ? 'bob' : 'ann',
          status: 'Running' as const,
          mode: 'read-only' as const,
          code: 'return 1',
          description: n % 1000 === 7 ? `Find the needle ${n}` : `Summarise report ${n}`,
          request: { connections: [], bindings: [], style: 'run_code' as const },
          createdAt: base + n,
          updatedAt: base + n,
          attempts: 0,
          cancelRequested: false,
          clockMs: base + n,
          seed: id,
        };
        await deps.runs.create(run);
        const status = n % 10 === 0 ? 'Failed' : 'Completed';
        if (n % 50 !== 0)
          await deps.runs.finish(run, {
            status,
            result:
              status === 'Completed'
                ? { _tag: 'Completed', value: n, logs: [] }
                : { _tag: 'Failed', reason: 'Error', kind: 'exception', message: 'x', logs: [] },
            text: 'out',
            kind: status === 'Completed' ? 'none' : 'exception',
          });
      }),
    );
  }
  process.stdout.write(`filled ${N} runs in ${((performance.now() - filled) / 1000).toFixed(1)} s\n`);

  const queries = [
    'limit=50',
    'limit=200',
    'limit=50&status=Failed',
    'limit=50&status=Running',
    'limit=50&principal=bob',
    'limit=50&sessionId=s-7',
    'limit=50&q=needle',
  ];
  for (const query of queries) {
    const times: number[] = [];
    let items = 0;
    await deps.redis.config('RESETSTAT');
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      const res = await app.inject({
        method: 'GET',
        url: `/v1/runs?${query}`,
        headers: { authorization: `Bearer ${key}` },
      });
      times.push(performance.now() - t0);
      if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${res.body}`);
      items = (res.json() as { items: unknown[] }).items.length;
    }
    times.sort((a, b) => a - b);
    // Redis's own time per list script call, which the machine's load inflates far less.
    const stats = await deps.redis.info('commandstats');
    const evalsha = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(stats);
    const redisMs = evalsha ? (Number(evalsha[2]) / 1000 / ROUNDS).toFixed(2) : '?';
    const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]?.toFixed(2);
    process.stdout.write(
      `GET /v1/runs?${query.padEnd(28)} first page: ${String(items).padStart(3)} items  median ${at(0.5)} ms  p95 ${at(0.95)} ms  (Redis ${redisMs} ms per request)\n`,
    );
  }
} finally {
  await app.close();
  await deps.close();
  await redis.stop();
}
