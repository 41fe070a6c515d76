/**
 * `node test/bench/call-ticks.ts`: `process.nextTick` calls and readable-stream pushes a lone
 * sequential binding call costs the runner and the gateway (round 40, `call-floor`): `call-trace.ts`'s
 * cluster with `tick-total.mjs` preloaded in both, `WARM` (default 5) runs, then `RUNS` (default 20)
 * programs of `CALLS` (default 40) sequential calls; per call the difference of each process's
 * totals (the runs' own start and end spread over their calls, alike for any side of an ABBA).
 * Counts, not times: they read the same at any load.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { pingConnection, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';

const WARM = Number(process.env.WARM ?? 5);
const RUNS = Number(process.env.RUNS ?? 20);
const CALLS = Number(process.env.CALLS ?? 40);
const dir = mkdtempSync(join(tmpdir(), 'islet-call-ticks-'));
const { app, port } = await startPingApp();
const cluster = await startCallCluster({
  NODE_OPTIONS: `--import ${join(import.meta.dirname, 'tick-total.mjs')}`,
  TICK_DIR: dir,
});
const settle = () => new Promise((r) => setTimeout(r, 500));
const read = (pid: number) =>
  JSON.parse(readFileSync(join(dir, `tick-total.${pid}.json`), 'utf8')) as { ticks: number; pushes: number };
try {
  const a = api(cluster.url, cluster.devKey);
  const connection = await pingConnection(a, port);
  const program = sequentialCalls(CALLS);
  for (let i = 0; i < WARM; i++) await runWithApp(a, program, connection);
  await settle();
  const who = { runner: cluster.runners[0]!.pid!, gateway: cluster.gateways[0]!.pid! };
  const before = { runner: read(who.runner), gateway: read(who.gateway) };
  for (let i = 0; i < RUNS; i++) await runWithApp(a, program, connection);
  await settle();
  const calls = RUNS * CALLS;
  for (const name of ['runner', 'gateway'] as const) {
    const after = read(who[name]);
    console.log(
      `${name}: nextTick ${((after.ticks - before[name].ticks) / calls).toFixed(2)} a call, stream pushes ${((after.pushes - before[name].pushes) / calls).toFixed(2)} a call (${RUNS} runs of ${CALLS} calls)`,
    );
  }
} finally {
  await cluster.stop();
  app.close();
}
