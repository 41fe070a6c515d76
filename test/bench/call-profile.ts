/**
 * `node test/bench/call-profile.ts`: CPU profiles (`--cpu-prof`) of a local cluster's gateway and
 * runner (and its sandbox hosts) while one client runs programs of `CALLS` (default 20) sequential
 * binding calls (with `PARALLEL=1`, one `Promise.all` of them) to an instant App in this process for
 * `SECS` (default 10), then each profile's self time by file and by function per call
 * (`profile-summary.ts`). The profiles stay in `PROF_DIR`.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { parallelCalls, sequentialCalls } from './baselines.ts';
import { pingConnection, startPingApp } from './ping-app.ts';
import { summarize } from './profile-summary.ts';

const CALLS = Number(process.env.CALLS ?? 20);
const dir = process.env.PROF_DIR ?? mkdtempSync(join(tmpdir(), 'islet-call-prof-'));
const { app, port } = await startPingApp();
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
// The first runs load modules and warm up: the summaries count only the samples after them.
const WARMUP = 5;
let runs = 0;
let from = 0;
let to = 0;
const pids = { gateway: cluster.gateways[0]?.pid, runner: cluster.runners[0]?.pid };
try {
  const connection = await pingConnection(a, port);
  const program = process.env.PARALLEL === '1' ? parallelCalls(CALLS) : sequentialCalls(CALLS);
  const end = Date.now() + Number(process.env.SECS ?? 10) * 1000;
  while (Date.now() < end) {
    if (runs === WARMUP) from = Number(process.hrtime.bigint() / 1000n);
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
  to = Number(process.hrtime.bigint() / 1000n);
  await cluster.stop();
  app.close();
}
console.log(`${runs} runs of ${CALLS} calls; profiles in ${dir}; window ${from}–${to} µs`);
for (const f of readdirSync(dir)) {
  const who = Object.entries(pids).find(([, pid]) => pid !== undefined && f.includes(`.${pid}.`))?.[0];
  if (!who) continue;
  console.log(`=== ${who} (${f}), per call`);
  console.log(summarize(join(dir, f), (runs - WARMUP) * CALLS, 25, [from, to]));
}
