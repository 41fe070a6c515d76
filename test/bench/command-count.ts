/**
 * `node test/bench/command-count.ts`: where a trivial run's Redis commands go. A local cluster
 * (default settings, the rate limit aside as in the cluster bench), 16 clients (`CLIENTS`); MONITOR records
 * every command while RUNS runs (default 200) go through, then for as long again with no runs
 * (what the processes poll on their own, per second, is printed apart). Commands are grouped by
 * name, scripts (EVAL/EVALSHA/FCALL) by their first key's shape; MONITOR shows the commands a
 * script runs inside it too, so both levels are counted as `INFO commandstats` counts them.
 * `TRACE=1` prints each call's last sequence of commands, `TRACE=common` its most common one.
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { burst, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 200);
/** Concurrent clients (default 16; `CLIENTS=1`: a sequential client's runs, itemized). */
const CLIENTS = Number(process.env.CLIENTS ?? 16);

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: {
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(process.env.BENCH_ENV ? JSON.parse(process.env.BENCH_ENV) : {}),
  },
});
const one = trivialRun(cluster, 'Benchmark a trivial program', { tenantApps: true });
const load = (n: number) => burst(one, n, CLIENTS);

const shape = (key: string | undefined) =>
  (key ?? '')
    .replace(/\{[^}]*\}/g, '{…}')
    .replace(/[0-9a-f-]{20,}/g, '<id>')
    .replace(/:\d+$/, ':<n>');

/** A command's group: its name; a script by the shapes of its first two keys, with what it ran. */
function group(args: string[]): string {
  const name = (args[0] ?? '?').toLowerCase();
  if (name === 'evalsha' || name === 'eval' || name === 'fcall')
    return `${name} ${shape(args[3])} ${Number(args[2]) > 1 ? shape(args[4]) : ''}`;
  return name;
}

/** Each call's last command sequence (`TRACE=1` prints them): the call, then its commands in order. */
const lastCall = new Map<string, string[]>();
/** `TRACE=common`: each call's sequences with their counts (the most common is printed, not the last). */
const sequences = new Map<string, Map<string, number>>();
const noteSequence = (g: string, seq: string[]) => {
  const m = sequences.get(g) ?? new Map<string, number>();
  const k = seq.slice(1).join(' | ');
  m.set(k, (m.get(k) ?? 0) + 1);
  sequences.set(g, m);
};

async function record(
  ms: number | (() => Promise<void>),
): Promise<{ counts: Map<string, number>; seconds: number }> {
  const monitor = createRedis(cluster.redisUrl);
  const counts = new Map<string, number>();
  let script = '';
  let seq: string[] = [];
  const m = await monitor.monitor();
  m.on('monitor', (_time: string, args: string[], source: string) => {
    // A script's own commands follow its call: counted under it.
    const g = source === 'lua' ? `${script}  > ${group(args)}` : group(args);
    if (source !== 'lua') {
      if (script && seq.length > 1) noteSequence(script, seq);
      script = g;
      seq = [];
      lastCall.set(g, seq);
    }
    seq.push(
      `${(args[0] ?? '').toLowerCase()} ${shape(args[1])}${args[2] !== undefined && !Number.isNaN(Number(args[2])) ? ` ${args[2]}` : ''}`,
    );
    counts.set(g, (counts.get(g) ?? 0) + 1);
  });
  // Lines still in flight at the disconnect reach ioredis as replies to no command, reported as
  // an `error` event (which, unheard, ended the bench): harmless once stopped, a failure before.
  let stopped = false;
  m.on('error', (err: Error) => {
    if (!stopped) throw err;
  });
  const t0 = performance.now();
  if (typeof ms === 'number') await new Promise((r) => setTimeout(r, ms));
  else await ms();
  const seconds = (performance.now() - t0) / 1000;
  stopped = true;
  m.disconnect();
  monitor.disconnect();
  return { counts, seconds };
}

/** The runner's fair-share deferrals so far (its metrics endpoint; 0 when it has none yet). */
async function deferrals(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${cluster.runners[0]!.port}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^islet_tenant_share_deferrals_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

try {
  await load(64);
  const deferredBefore = await deferrals();
  const busy = await record(() => load(RUNS));
  const deferred = (await deferrals()) - deferredBefore;
  const idle = await record(Math.round(busy.seconds * 1000));
  const perSecIdle = (k: string) => (idle.counts.get(k) ?? 0) / idle.seconds;
  const rows = [...busy.counts].map(([k, v]) => {
    const background = perSecIdle(k) * busy.seconds;
    return { k, perRun: v / RUNS, netPerRun: Math.max(0, v - background) / RUNS };
  });
  const total = rows.reduce((s, r) => s + r.perRun, 0);
  const net = rows.reduce((s, r) => s + r.netPerRun, 0);
  const idleTotal = [...idle.counts.values()].reduce((a, b) => a + b, 0);
  console.log(
    `${RUNS} runs in ${busy.seconds.toFixed(1)} s: ${total.toFixed(1)} commands a run, ${net.toFixed(1)} net of what the idle cluster sends in as long (${(idleTotal / idle.seconds).toFixed(1)}/s)`,
  );
  console.log(`fair-share deferrals: ${(deferred / RUNS).toFixed(3)} a run (${deferred} in ${RUNS} runs)`);
  // Each call with the commands it ran: calls per run, then in total (call + inside), per run.
  const tops = new Map<string, { calls: number; all: number; inner: Map<string, number> }>();
  for (const r of rows) {
    const [top, inner] = r.k.split('  > ');
    const t = tops.get(top!) ?? { calls: 0, all: 0, inner: new Map() };
    t.all += r.perRun;
    if (inner) t.inner.set(inner, r.perRun);
    else t.calls += r.perRun;
    tops.set(top!, t);
  }
  for (const [k, t] of [...tops].sort((a, b) => b[1].all - a[1].all)) {
    if (t.all < 0.05) continue;
    console.log(`${t.all.toFixed(2).padStart(7)} ${t.calls.toFixed(2).padStart(6)}  ${k}`);
    const inner = [...t.inner].sort((a, b) => b[1] - a[1]);
    if (inner.length)
      console.log(`${''.padStart(16)}${inner.map(([n, v]) => `${n} ${v.toFixed(1)}`).join(', ')}`);
    const common = [...(sequences.get(k) ?? [])].sort((a, b) => b[1] - a[1])[0];
    if (process.env.TRACE === 'common' && common)
      console.log(`${''.padStart(16)}most common (${common[1]} calls): ${common[0]}`);
    else if (process.env.TRACE)
      console.log(`${''.padStart(16)}last call: ${(lastCall.get(k) ?? []).slice(1).join(' | ')}`);
  }
} finally {
  await cluster.stop();
}
process.exit(0);
