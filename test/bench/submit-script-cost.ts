/**
 * `node test/bench/submit-script-cost.ts`: Redis's own time a submit's scripts take, the admission
 * and the job's add, against a private redis-server (no AOF, nothing else connected), in phases of
 * `N` submits (default 1000) each, through the gateway's stores as runs-service.ts calls them
 * (`runs.create` with the run queue's `enqueueRun` as its `then`, fair share's queued count on, no
 * worker registered idle: the 16-client submit). `ride`: the admission carried in the add's script
 * (`carriesAdd`, one EVALSHA); `apart`: the admission's EVAL and the add's EVALSHA behind it (the
 * shape before; on a base without `carriesAdd` both phases are it). Per submit: top-level calls,
 * `INFO commandstats` usec of EVAL + EVALSHA (inside the commands, the scripts' own included), and
 * the server's main thread's time on a CPU (`/proc/<pid>/schedstat`: reading the call, the script,
 * writing its answer; steadier on a loaded machine), and this process's CPU (the stores' JavaScript,
 * ioredis' encoding: the gateway's side of the same calls). Phases alternate `ROUNDS` times (default 3).
 */
import { readFileSync } from 'node:fs';
import { generateSealKey, sealerFromConfig } from '@islet/core';
import { createRunStore } from '@islet/runs';
import { runFixture, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { createRunQueueStore } from '../../services/gateway/src/run-queue-store.ts';
import { childPidWith } from './baselines.ts';

const N = Number(process.env.N ?? 1000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

const server = await startRedis({ appendOnly: false });
const redisPid = childPidWith(`:${server.port}`);
const onCpu = () =>
  redisPid ? Number(readFileSync(`/proc/${redisPid}/schedstat`, 'utf8').split(' ')[0]) : Number.NaN;
const redis = new Redis(server.url);
const stats = new Redis(server.url);
const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const runs = createRunStore(redis, sealer);
const queue = createRunQueueStore(redis, () => undefined, true);

async function scripts(): Promise<{ calls: number; usec: number }> {
  const text = await stats.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of text.matchAll(/^cmdstat_(eval|evalsha):calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  return { calls, usec };
}

let seq = 0;
async function submit(ride: boolean) {
  const id = `b${process.pid}-${seq++}`;
  const tenant = `t${seq % 8}`;
  const run = runFixture(id, { tenant, session: 's', principal: 'p' });
  const answer = await runs.create(
    run,
    {
      maxInFlight: 1_000_000,
      sessionTtlSeconds: 6400,
      countQueued: true,
      ...(ride ? { carriesAdd: true } : {}),
    },
    (_counted, carrier) => queue.enqueueRun({ runId: id, tenant, mode: run.mode, attempts: 1 }, carrier),
  );
  if (answer !== 'created') throw new Error(`submit ${id}: ${answer}`);
}

try {
  // Warm: both shapes' scripts loaded, V8's code hot.
  for (let i = 0; i < 200; i++) await submit(i % 2 === 0);
  const rows: string[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const ride of r % 2 === 0 ? [true, false] : [false, true]) {
      const before = await scripts();
      const cpu0 = onCpu();
      const own0 = process.cpuUsage();
      for (let i = 0; i < N; i++) await submit(ride);
      const own = process.cpuUsage(own0);
      const cpu1 = onCpu();
      const after = await scripts();
      rows.push(
        `${ride ? 'ride ' : 'apart'}  calls ${((after.calls - before.calls) / N).toFixed(2)}  usec ${((after.usec - before.usec) / N).toFixed(1)}  cpu µs ${((cpu1 - cpu0) / N / 1000).toFixed(1)}  this process µs ${((own.user + own.system) / N).toFixed(1)}`,
      );
    }
  }
  console.log(`a submit's scripts, ${N} submits a phase (private redis-server, no AOF):`);
  for (const row of rows) console.log(`  ${row}`);
  if (process.env.INNER) {
    // One more phase of each shape: every command's usec a submit (a script's own commands apart).
    for (const ride of [true, false]) {
      await stats.config('RESETSTAT');
      for (let i = 0; i < N; i++) await submit(ride);
      const text = await stats.info('commandstats');
      const parts = [...text.matchAll(/^cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)/gm)]
        .filter((m) => m[1] !== 'info' && m[1] !== 'config|resetstat')
        .map((m) => `${m[1]} ${(Number(m[3]) / N).toFixed(1)} (${(Number(m[2]) / N).toFixed(1)})`);
      console.log(`  ${ride ? 'ride ' : 'apart'} usec (calls) a submit: ${parts.join(', ')}`);
    }
  }
} finally {
  await Promise.all(Object.values(queue.queues).map((q) => q.close()));
  redis.disconnect();
  stats.disconnect();
  await server.stop();
}
process.exit(0);
