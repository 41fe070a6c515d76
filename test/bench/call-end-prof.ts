/**
 * `node test/bench/call-end-prof.ts` (round 39, `call-end`): the gateway's CPU profile (`--cpu-prof`)
 * while runs of `CALLS` sequential calls (default 20) go one after another for `BENCH_SECONDS`
 * (default 8), `WHO=runner` the runner's; prints the inclusive ms of the functions named in `FNS` (default: the waited end's
 * path in runs-service.ts and call-journal.ts) and the top self-time functions. A profile, not a
 * claim of time: read its shares.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { pingConnection, startPingApp } from './ping-app.ts';

const CALLS = Number(process.env.CALLS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const FNS = (
  process.env.FNS ?? 'endOf,toRecord,callsOf,storedOf,toView,openOutcome,fromFields,waitForEnd,record'
).split(',');
/** Whose profile: `gateway` (default) or `runner` (its hosts inherit NODE_OPTIONS: the largest file is read). */
const WHO = process.env.WHO ?? 'gateway';
const dir = mkdtempSync('/tmp/call-end-prof-');
const { app, port } = await startPingApp();
const cluster = await startCluster({
  gateways: 1,
  runners: [
    {
      modes: ['read-only'],
      concurrency: 4,
      ...(WHO === 'runner' ? { env: { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` } } : {}),
    },
  ],
  env: { ISLET_TENANT_POOL_SHARE: '1', ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
  ...(WHO === 'gateway' ? { gatewayEnv: [{ NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` }] } : {}),
});
const a = api(cluster.url, cluster.devKey);
let runs = 0;
try {
  const connection = await pingConnection(a, port);
  const code = sequentialCalls(CALLS);
  const until = Date.now() + SECONDS * 1000;
  while (Date.now() < until) {
    const res = await a(
      'POST',
      '/v1/runs',
      { code, description: 'Benchmark binding calls', sessionId: 'calls', connections: [connection] },
      { prefer: 'wait=30' },
    );
    if ((res.body as { status?: string }).status !== 'Completed') throw new Error('run failed');
    runs++;
  }
} finally {
  await cluster.stop();
  app.close();
}
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = readdirSync(dir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .sort((x, y) => statSync(`${dir}/${y}`).size - statSync(`${dir}/${x}`).size)[0];
if (!file) throw new Error(`no profile in ${dir}`);
const prof = JSON.parse(readFileSync(`${dir}/${file}`, 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map<number, number>();
for (let i = 0; i < prof.samples.length; i++)
  self.set(prof.samples[i]!, (self.get(prof.samples[i]!) ?? 0) + (prof.timeDeltas[i] ?? 0) / 1000);
const name = (n: Node) =>
  `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-1)[0]}:${n.callFrame.lineNumber + 1}`;
const incl = new Map<string, number>();
const selfBy = new Map<string, number>();
let total = 0;
for (const [id, ms] of self) {
  total += ms;
  const n = byId.get(id)!;
  selfBy.set(name(n), (selfBy.get(name(n)) ?? 0) + ms);
  const seen = new Set<string>();
  for (let p: number | undefined = id; p !== undefined; p = parent.get(p)) {
    const f = byId.get(p)!.callFrame.functionName;
    if (FNS.includes(f) && !seen.has(f)) {
      seen.add(f);
      incl.set(f, (incl.get(f) ?? 0) + ms);
    }
  }
}
console.log(
  `${runs} runs of ${CALLS} calls; gateway profile ${total.toFixed(0)} ms (${(total / runs).toFixed(3)} ms a run)`,
);
for (const f of FNS)
  console.log(`  ${f.padEnd(14)} ${((incl.get(f) ?? 0) / runs).toFixed(3)} ms a run (inclusive)`);
console.log('top self:');
for (const [n, ms] of [...selfBy].sort((x, y) => y[1] - x[1]).slice(0, 25))
  console.log(`  ${(ms / runs).toFixed(3)} ms a run  ${n}`);
