/**
 * `node test/bench/lua-cost.ts`: Redis's own time (`INFO commandstats` usec_per_call of EVALSHA)
 * of the queue's fused scripts' BullMQ parts, each run `N` times (default 2000) in phases against a
 * private redis-server (no AOF, nothing else connected), so a phase's figure is that script's
 * alone: no network, no fsync, no other client's commands. Scripts as `@islet/runs` builds them
 * (bull-quiet.ts around BullMQ's own texts), arguments as BullMQ builds them. Beside usec_per_call
 * (wall time inside the command: a server taken off its CPU by a busy machine counts there), the
 * server's main thread's time on a CPU a call (`/proc/<pid>/schedstat`: the script, and reading
 * the call and writing its answer, the same for both sides of an A/B), steadier on a loaded machine.
 * - `wrapper, common key` / `raw`: a script of bull-quiet's prelude and role setting running
 *   `CALLS` HGETs of a key with no role (the limiter's, absent) through the local `redis.call` (`bullCall`), against the
 *   same loop through `bullRaw`: their difference over `CALLS` is the wrapper's cost a call. Same
 *   for a key with a role (`ZCARD` of the marker: its name is read, nothing answered locally).
 * - `hand-off add`: the gateway's add (`handOffAddScript`) of a job with its own id, no worker
 *   registered idle (BullMQ's Queue.add through `handingAdds`).
 * - `fused fetch`: the runner's fetch (`fetchLeaseBeginScript(fetchAndLook(moveToActive))`) taking
 *   one of those jobs; `fused fetch, empty`: the same finding none (nothing changes in Redis).
 *   The jobs are skill-shaped (`skill` set), so the fetch's tail stops after decoding the job:
 *   the run's lease and attempt start (Islet's own includes) are not in these figures.
 * - `completion`: bull-quiet's completion (`quietComplete(moveToFinished)`, without the run's end)
 *   of a fetched job; `completion + next`: the same bringing the next job (BullMQ's fetch-next).
 * Run it against a base with `test/bench/ab.sh` (it measures whatever `services/` holds).
 */

import { readFileSync } from 'node:fs';
import { LuaScript } from '@islet/core/lua-script';
import { QUEUE_PREFIX } from '@islet/protocol';
import {
  BULL_QUIET_PRELUDE,
  fetchAndLook,
  fetchLeaseBeginScript,
  quietComplete,
  quietFetch,
} from '@islet/runs';
import { startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { Redis } from 'ioredis';
import { pack } from 'msgpackr';
import { handingAdds } from '../../services/gateway/src/handoff-add-store.ts';
import { childPidWith } from './baselines.ts';

const N = Number(process.env.N ?? 2000);
const CALLS = Number(process.env.CALLS ?? 200);
/** Arguments the fused fetch takes after BullMQ's (unread: the jobs are skill-shaped). */
const FETCHED_ARGS = 24;
const TOKEN = 'bench-token';

const server = await startRedis({ appendOnly: false });
/** The server's process (this process's child on its port). */
const redisPid = childPidWith(`:${server.port}`);
/** The server's main thread's time on a CPU, ns (a script runs there; time it waited for one is not counted). */
const onCpu = () =>
  redisPid ? Number(readFileSync(`/proc/${redisPid}/schedstat`, 'utf8').split(' ')[0]) : Number.NaN;
const redis = new Redis(server.url);
// `lockDuration` (a worker's option) is what a completion that fetches the next job locks it for.
const queueOpts = {
  connection: { host: '127.0.0.1', port: server.port },
  prefix: QUEUE_PREFIX,
  lockDuration: 30_000,
};
const queue = new Queue('lua-cost', queueOpts as ConstructorParameters<typeof Queue>[1]);
handingAdds(queue);

/** EVALSHA's usec and calls so far. */
async function evalsha(): Promise<{ calls: number; usec: number }> {
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await redis.info('commandstats'));
  return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
}

const rows: [string, number, number, number][] = [];
/** Runs `one(i)` for i in [0, n), and notes the EVALSHAs' usec a call. */
async function phase(name: string, n: number, one: (i: number) => Promise<unknown>) {
  const before = await evalsha();
  const cpu0 = onCpu();
  for (let i = 0; i < n; i++) await one(i);
  const cpu1 = onCpu();
  const after = await evalsha();
  const calls = after.calls - before.calls;
  rows.push([name, calls, (after.usec - before.usec) / calls, (cpu1 - cpu0) / 1000 / n]);
}

const k = queue.keys;
const fetchKeys = [
  k.wait,
  k.active,
  k.prioritized,
  k.events,
  k.stalled,
  k.limiter,
  k.delayed,
  k.paused,
  k.meta,
  k.pc,
  k.marker,
].map(String);
const fetchArgs = () => [
  k[''] ?? '',
  Date.now(),
  pack({ token: TOKEN, lockDuration: 30_000 }),
  ...Array(FETCHED_ARGS).fill(''),
];
const FETCH = fetchLeaseBeginScript(fetchAndLook(moveToActive.content));
const COMPLETE = new LuaScript(
  process.env.STOCK === '1' ? moveToFinished.content : quietComplete(moveToFinished.content),
);
const scripts = (
  queue as unknown as { scripts: { moveToCompletedArgs(...a: unknown[]): (string | number | Buffer)[] } }
).scripts;
const jobOpts = { attempts: 1, removeOnComplete: { age: 3600, count: 10_000 } };

/** A completion of job `id` (fetched with `TOKEN`); `next`: it brings the worker's next job. */
function complete(id: string, next: boolean) {
  const all = scripts.moveToCompletedArgs({ id, opts: jobOpts }, '1', jobOpts.removeOnComplete, TOKEN, next);
  const keys = all.slice(0, moveToFinished.keys).map(String);
  return COMPLETE.run(redis, keys, all.slice(moveToFinished.keys) as (string | number)[]);
}

// The wrapper's own cost: the prelude and the fetch's role setting, then `CALLS` commands.
const loop = (call: string, key: string) =>
  new LuaScript(
    `${BULL_QUIET_PRELUDE}\n${quietFetch(`for i = 1, ${CALLS} do ${call}('${key === 'marker' ? 'ZCARD' : 'HGET'}', KEYS[${key === 'marker' ? 11 : 6}]${key === 'marker' ? '' : ", 'f'"}) end\nreturn 1`)}`,
  );
const loops: [string, LuaScript][] = [
  ['wrapper, common key', loop('redis.call', 'common')],
  ['raw, common key', loop('bullRaw', 'common')],
  ['wrapper, role key', loop('redis.call', 'marker')],
  ['raw, role key', loop('bullRaw', 'marker')],
];
try {
  for (let round = 0; round < 2; round++) {
    rows.length = 0;
    for (const [name, s] of loops) await phase(name, Math.ceil(N / 10), () => s.run(redis, fetchKeys, []));
    await phase('fused fetch, empty', N, () => FETCH.run(redis, fetchKeys, fetchArgs()));
    const ids = Array.from({ length: N }, (_, i) => `r${round}-${i}`);
    await phase('hand-off add', N, (i) =>
      queue.add(
        'skill',
        { skill: 'bench', runId: ids[i], tenant: 'acme', enqueuedAtMs: 1 },
        { ...jobOpts, jobId: ids[i] },
      ),
    );
    const half = N / 2;
    await phase('fused fetch', half, () => FETCH.run(redis, fetchKeys, fetchArgs()));
    await phase('completion', half, (i) => complete(ids[i] as string, false));
    await FETCH.run(redis, fetchKeys, fetchArgs());
    await phase('completion + next', half - 1, (i) => complete(ids[half + i] as string, true));
    await complete(ids[N - 1] as string, false);
  }
  // The second round's figures (the first warms the server's scripts and allocations).
  console.log(
    `lua-cost: ${N} calls a phase (wrapper loops: ${Math.ceil(N / 10)} calls of ${CALLS} commands)`,
  );
  for (const [name, calls, us, cpu] of rows)
    console.log(
      `  ${name.padEnd(22)} calls ${String(calls).padStart(5)}  usec_per_call ${us.toFixed(2).padStart(7)}  server CPU µs a call ${cpu.toFixed(2).padStart(7)}`,
    );
  const per = (a: string, b: string) => {
    const x = rows.find((r) => r[0] === a)?.[2] ?? 0;
    const y = rows.find((r) => r[0] === b)?.[2] ?? 0;
    return (((x - y) * 1000) / CALLS).toFixed(0);
  };
  const perCpu = (a: string, b: string) => {
    const x = rows.find((r) => r[0] === a)?.[3] ?? 0;
    const y = rows.find((r) => r[0] === b)?.[3] ?? 0;
    return (((x - y) * 1000) / CALLS).toFixed(0);
  };
  console.log(
    `  bullCall's cost a call, ns: common key ${per('wrapper, common key', 'raw, common key')}, role key ${per('wrapper, role key', 'raw, role key')}; by server CPU: ${perCpu('wrapper, common key', 'raw, common key')}, ${perCpu('wrapper, role key', 'raw, role key')}`,
  );
  console.log(
    `  completed ${await redis.zcard(String(k.completed))}, wait ${await redis.llen(String(k.wait))}, active ${await redis.llen(String(k.active))}`,
  );
} finally {
  await queue.close();
  redis.disconnect();
  await server.stop();
}
