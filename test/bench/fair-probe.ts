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
 * `BENCH_QUEUE_CONCURRENCY=<n>` sets the queue's global concurrency (BullMQ's meta `concurrency`;
 * with n = the runner's 4 slots nothing is held back): the fused fetch then leaves a refusal to the
 * processor and the end leaves a reservation's promotion to the runner, so the fair share runs by
 * the paths a Cluster, a skill or a capped queue takes (round 27, `fair-order`).
 * `BENCH_COMMANDS=1` adds each phase's calls a run of every command.
 */
import { readFileSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { Queue } from 'bullmq';
import { api } from '../e2e/helpers.ts';
import { cpuMsOfDescendants } from './baselines.ts';
import { processTree } from './capacity-cpu.ts';
import { burst, commandStats, trivialRun } from './cluster-figures.ts';
import { deferralsOf, poolLine, poolMeans, samplePool } from './pool-sampler.ts';

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
if (process.env.BENCH_QUEUE_CONCURRENCY) {
  const queue = new Queue(runQueueName(mode), { connection: redis, prefix: QUEUE_PREFIX });
  await queue.setGlobalConcurrency(Number(process.env.BENCH_QUEUE_CONCURRENCY));
  console.log(`settings: the queue's global concurrency ${process.env.BENCH_QUEUE_CONCURRENCY}`);
}
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

const deferrals = () => deferralsOf(cluster.runners[0]!.url);
const commands = async () => commandStats(await redis.info('commandstats'));
const kindOf = (cmd: string) =>
  cmd.includes('redis-server') ? 'redis' : cmd.includes('gateway/src/main.ts') ? 'gateway' : 'runner + hosts';
let last = 0;
async function phase(name: string, fn: () => Promise<void>, n: number) {
  let polls = 0;
  const sampler = samplePool({
    redisUrl: cluster.redisUrl,
    runnerUrl: cluster.runners[0]!.url,
    mode,
    slots: 4,
    everyMs: SAMPLE_MS,
    onPoll: () => {
      if (++polls % 5 === 0) for (const p of hostPids()) seenHosts.add(p);
    },
  });
  sampler.tag(name);
  const hostsBefore = seenHosts.size;
  const cpuBefore = cpuMsOfDescendants(kindOf);
  const cmdBefore = await commands();
  const t = performance.now();
  await fn();
  const secs = (performance.now() - t) / 1000;
  const cpuAfter = cpuMsOfDescendants(kindOf);
  const samples = poolMeans((await sampler.stop()).get(name));
  for (const p of hostPids()) seenHosts.add(p);
  const cmdAfter = await commands();
  const d = await deferrals();
  const per = (k: string) => (((cmdAfter.get(k) ?? 0) - (cmdBefore.get(k) ?? 0)) / n).toFixed(2);
  const cpu = Object.entries(cpuAfter)
    .map(([k, ms]) => `${k} ${((ms - (cpuBefore[k] ?? 0)) / n).toFixed(2)}`)
    .join(' / ');
  console.log(
    `${name.padEnd(12)} CPU ms a run (with the sampler's share): ${cpu}\n${' '.repeat(12)} ${(n / secs).toFixed(1).padStart(6)} runs/s  deferrals/run ${((d - last) / n).toFixed(3)}  host starts ${seenHosts.size - hostsBefore}  ` +
      `${poolLine(samples, 4)}  per run: evalsha ${per('evalsha')} ` +
      `hgetall ${per('hgetall')} bzpopmin ${per('bzpopmin')} zadd ${per('zadd')} time ${per('time')} total ${(
        [...cmdAfter].reduce((s, [k, v]) => s + v - (cmdBefore.get(k) ?? 0), 0) / n
      ).toFixed(1)}`,
  );
  // `BENCH_COMMANDS=1`: every command's calls a run (≥ 0.01), to tell which ones a change moved.
  if (process.env.BENCH_COMMANDS)
    console.log(
      `${' '.repeat(12)} commands a run: ${[...cmdAfter]
        .map(([k, v]) => [k, (v - (cmdBefore.get(k) ?? 0)) / n] as const)
        .filter(([, v]) => v >= 0.01)
        .sort((x, y) => y[1] - x[1])
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ')}`,
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
  await cluster.stop();
}
process.exit(0);
