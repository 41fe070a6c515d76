/**
 * `node test/bench/call-profile.ts`: CPU profiles (`--cpu-prof`) of a local cluster's gateway and
 * runner (and its sandbox hosts) while one client runs programs of `CALLS` (default 20) sequential
 * binding calls to an instant App in this process for `SECS` (default 10), then each profile's self
 * time by file and by function per call (`profile-summary.ts`). The profiles stay in `PROF_DIR`.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { summarize } from './profile-summary.ts';

const CALLS = Number(process.env.CALLS ?? 20);
const dir = process.env.PROF_DIR ?? mkdtempSync(join(tmpdir(), 'islet-call-prof-'));
const app = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
});
await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: {
    ISLET_TENANT_POOL_SHARE: '1',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}`,
  },
});
const a = api(cluster.url, cluster.devKey);
let runs = 0;
const pids = { gateway: cluster.gateways[0]?.pid, runner: cluster.runners[0]?.pid };
try {
  const port = (app.address() as { port: number }).port;
  const connection = (
    (
      await a('POST', '/v1/connections', {
        name: 'Bench',
        kind: 'http',
        url: `http://127.0.0.1:${port}/`,
        tools: [{ name: 'ping', policy: 'allow' }],
      })
    ).body as { id: string }
  ).id;
  const program = sequentialCalls(CALLS);
  const end = Date.now() + Number(process.env.SECS ?? 10) * 1000;
  while (Date.now() < end) {
    const res = await a(
      'POST',
      '/v1/runs',
      { code: program, description: 'Profile binding calls', sessionId: 'calls', connections: [connection] },
      { prefer: 'wait=30' },
    );
    if ((res.body as { status?: string }).status !== 'Completed')
      throw new Error(`run ended ${JSON.stringify(res.body)}`);
    runs++;
  }
} finally {
  await cluster.stop();
  app.close();
}
console.log(`${runs} runs of ${CALLS} calls; profiles in ${dir}`);
for (const f of readdirSync(dir)) {
  const who = Object.entries(pids).find(([, pid]) => pid !== undefined && f.includes(`.${pid}.`))?.[0];
  if (!who) continue;
  console.log(`=== ${who} (${f}), per call`);
  console.log(summarize(join(dir, f), runs * CALLS, 25));
}
