/**
 * `node test/bench/fair-probe.ts`: where two tenants' slots go at 16 clients (one runner, 4 slots,
 * default settings but the rate limit; `BENCH_ENV`: JSON of settings), phase by phase: a lone
 * tenant, two tenants (8 clients each, as `npm run bench:cluster`'s fair-share phase), the lone
 * tenant again (`ROUNDS` times, default 1; `RUNS` runs a phase, default 600). Per phase: runs/s,
 * CPU a run by process (`/proc`), fair-share deferrals a run, sandbox host starts (host pids under
 * the runner seen for the first time, `/proc` polled), Redis commands a run; and, sampled every
 * `SAMPLE_MS` (default 10): the runner's busy slots (its gauge), the pool's busy leases
 * (reservations included) by where each one's job is (taken by a worker; a reservation still in
 * the delayed set; promoted and in the wait list), the queue's waiting and delayed jobs, and the
 * runner's slots idle while some job waits. No MONITOR (it would slow Redis): counts and samples.
 */
import { readFileSync } from 'node:fs';
import { createRedis, keys } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { cpuMsOfDescendants } from './baselines.ts';
import { processTree } from './capacity-cpu.ts';
import { burst, metricsOf, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 600);
const SAMPLE_MS = Number(process.env.SAMPLE_MS ?? 10);
const mode = 'read-only';
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: [mode], concurrency: 4 }],
  env: {
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(process.env.BENCH_ENV ? JSON.parse(process.env.BENCH_ENV) : {}),
  },
});
const redis = createRedis(cluster.redisUrl);
const sampler = createRedis(cluster.redisUrl);
const a = api(cluster.url, cluster.devKey);
const runnerPid = cluster.runners[0]!.pid!;

/** Host processes (node --no-node-snapshot) under the runner. */
function hostPids(): number[] {
  return processTree(runnerPid)
    .slice(1)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--no-node-snapshot');
      } catch {
        return false; // gone
      }
    });
}
const seenHosts = new Set<number>(hostPids());

const metric = (text: string, re: RegExp) => [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
const deferrals = async () =>
  metric(await metricsOf(cluster.runners[0]!.url), /^islet_tenant_share_deferrals_total\{[^}]*\} (\d+)/gm);
const commands = async () => {
  const out = new Map<string, number>();
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    out.set(m[1]!, Number(m[2]));
  return out;
};

// ARGV: pool busy key, queue prefix. Counts the busy members by their job's place in the queue.
const CLASSIFY = `
local out = {0, 0, 0, 0}
local active = {}
for _, id in ipairs(redis.call('LRANGE', ARGV[2] .. 'active', 0, -1)) do active[id] = true end
local waiting = {}
for _, id in ipairs(redis.call('LRANGE', ARGV[2] .. 'wait', 0, -1)) do waiting[id] = true end
for _, id in ipairs(redis.call('ZRANGE', ARGV[1], 0, -1)) do
  if active[id] then out[1] = out[1] + 1
  elseif redis.call('ZSCORE', ARGV[2] .. 'delayed', id) then out[2] = out[2] + 1
  elseif waiting[id] then out[3] = out[3] + 1
  else out[4] = out[4] + 1 end
end
return out`;
const kindOf = (cmd: string) =>
  cmd.includes('redis-server') ? 'redis' : cmd.includes('gateway/src/main.ts') ? 'gateway' : 'runner + hosts';
let last = 0;
async function phase(name: string, fn: () => Promise<void>, n: number) {
  const samples = { busy: 0, leases: 0, wait: 0, delayed: 0, n: 0, idleWithWaiting: 0 };
  // The pool's busy members by where their job is: active (taken by a worker), delayed (a
  // reservation not promoted yet), waiting (promoted, not fetched yet), gone.
  const where = { active: 0, delayed: 0, waiting: 0, other: 0 };
  let on = true;
  const sampling = (async () => {
    let polls = 0;
    while (on) {
      const [text, leases, wait, delayed, classes] = await Promise.all([
        metricsOf(cluster.runners[0]!.url),
        sampler.zcard(keys.poolBusy(mode)),
        sampler.llen(`islet:{runs-${mode}}:wait`),
        sampler.zcard(`islet:{runs-${mode}}:delayed`),
        sampler.eval(CLASSIFY, 0, keys.poolBusy(mode), `islet:{runs-${mode}}:`) as Promise<number[]>,
      ]);
      where.active += classes[0] ?? 0;
      where.delayed += classes[1] ?? 0;
      where.waiting += classes[2] ?? 0;
      where.other += classes[3] ?? 0;
      const busy = metric(text, /^islet_runner_slots\{[^}]*state="busy"[^}]*\} (\d+)/gm);
      samples.busy += busy;
      samples.leases += leases;
      samples.wait += wait;
      samples.delayed += delayed;
      // A slot idle while a run waits (in the queue or deferred): what a work-conserving share never has.
      samples.idleWithWaiting += busy < 4 && wait + delayed > 0 ? 4 - busy : 0;
      samples.n++;
      if (++polls % 5 === 0) for (const p of hostPids()) seenHosts.add(p);
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
    }
  })();
  const hostsBefore = seenHosts.size;
  const cpuBefore = cpuMsOfDescendants(kindOf);
  const cmdBefore = await commands();
  const t = performance.now();
  await fn();
  const secs = (performance.now() - t) / 1000;
  const cpuAfter = cpuMsOfDescendants(kindOf);
  on = false;
  await sampling;
  for (const p of hostPids()) seenHosts.add(p);
  const cmdAfter = await commands();
  const d = await deferrals();
  const per = (k: string) => (((cmdAfter.get(k) ?? 0) - (cmdBefore.get(k) ?? 0)) / n).toFixed(2);
  const avg = (v: number) => (v / Math.max(1, samples.n)).toFixed(2);
  const cpu = Object.entries(cpuAfter)
    .map(([k, ms]) => `${k} ${((ms - (cpuBefore[k] ?? 0)) / n).toFixed(2)}`)
    .join(' / ');
  console.log(
    `${name.padEnd(12)} CPU ms a run (with the sampler's share): ${cpu}\n${' '.repeat(12)} ${(n / secs).toFixed(1).padStart(6)} runs/s  deferrals/run ${((d - last) / n).toFixed(3)}  host starts ${seenHosts.size - hostsBefore}  ` +
      `mean busy slots ${avg(samples.busy)} pool leases ${avg(samples.leases)} waiting ${avg(samples.wait)} delayed ${avg(samples.delayed)} ` +
      `busy leases' jobs: active ${avg(where.active)} delayed ${avg(where.delayed)} waiting ${avg(where.waiting)} other ${avg(where.other)} ` +
      `idle slots while runs wait ${avg(samples.idleWithWaiting)} (${samples.n} samples)  per run: evalsha ${per('evalsha')} ` +
      `hgetall ${per('hgetall')} bzpopmin ${per('bzpopmin')} zadd ${per('zadd')} time ${per('time')} total ${(
        [...cmdAfter].reduce((s, [k, v]) => s + v - (cmdBefore.get(k) ?? 0), 0) / n
      ).toFixed(1)}`,
  );
  last = d;
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
  last = await deferrals();
  for (const p of hostPids()) seenHosts.add(p);
  console.log(`hosts before the phases: ${seenHosts.size}`);
  for (let r = 0; r < Number(process.env.ROUNDS ?? 1); r++) {
    await phase('lone', () => burst(one1, RUNS, 16), RUNS);
    let turn = 0;
    await phase('two', () => burst(() => (turn++ % 2 ? one2 : one1)(), RUNS, 16), RUNS);
    await phase('lone again', () => burst(one1, RUNS, 16), RUNS);
  }
} finally {
  redis.disconnect();
  sampler.disconnect();
  await cluster.stop();
}
process.exit(0);
