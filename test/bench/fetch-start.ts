/**
 * `node test/bench/fetch-start.ts`: a run's pick-up in Redis alone, the two ways a runner on one
 * server can make it: BullMQ's fetch (`moveToActive`) then the lease and attempt start
 * (`lease-and-begin-9`), two script calls one after the other; or both in the fetch's one call
 * (`fetch-lease-begin-11`, the runner's fetch-start-store.ts). A redis-server with
 * `appendfsync always` (each call answers after its fsync, as the cluster's), one client, no other
 * process: `RUNS` (default 300) pick-ups of each, interleaved, each on a fresh run and job. Prints
 * the p50 and p90 of each way, ms.
 */
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { QUEUE_PREFIX } from '@islet/protocol';
import { createCallJournal, createRunLifecycle, createRunStore, type RunLease } from '@islet/runs';
import { runFixture, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { version } from 'bullmq/dist/esm/version.js';
import { pack } from 'msgpackr';
import { LuaScript } from '../../services/core/src/lua-script.ts';
import { startingClient } from '../../services/runner/src/fetch-start-store.ts';
import { FETCH_KEY_NAMES } from '../../services/runner/src/handoff-store.ts';

const RUNS = Number(process.env.RUNS ?? 300);
const mode = 'read-only';
const server = await startRedis({ appendFsync: 'always' });
const redis = createRedis(server.url);
const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const runs = createRunStore(redis, sealer);
const life = createRunLifecycle({ runs, journal: createCallJournal({ redis, sealer }) });
const queueConnection = redis.duplicate();
const queue = new Queue('fetch-start-bench', { connection: queueConnection, prefix: QUEUE_PREFIX });
const FETCH = new LuaScript(moveToActive.content);
const terms = { mode, share: 0.5, cap: 0, leaseMs: 30_000 };
const fetchKeys = FETCH_KEY_NAMES.map((k) => queue.keys[k] ?? '');
const fetchArgs = (token: string) => [
  queue.toKey(''),
  Date.now(),
  pack({ token, lockDuration: 30_000, name: 'bench' }),
];

async function newJob(id: string) {
  const now = Date.now();
  await runs.create(runFixture(id, { mode, createdAt: now }));
  await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: now }, { jobId: id });
}

const lease = (jobId: string): RunLease => ({
  ...terms,
  tenant: 'acme',
  jobId,
  acquired: () => undefined,
  held: () => true,
  released: () => undefined,
});

async function apart(id: string): Promise<number> {
  const t0 = performance.now();
  await FETCH.run(redis, fetchKeys, fetchArgs(id) as (string | number)[]);
  const begun = await life.beginAttempt(id, lease(id));
  const ms = performance.now() - t0;
  if (begun.attempt !== 1) throw new Error('apart: no attempt');
  return ms;
}

async function fused(id: string): Promise<number> {
  let answer: unknown;
  const client = startingClient(
    redis as never,
    () => life.fetchedStart(terms),
    (_jobId, begun) => {
      answer = begun;
    },
  );
  const t0 = performance.now();
  await client.runCommand(`moveToActive:${version}`, [...fetchKeys, ...fetchArgs(id)]);
  const l = lease(id);
  l.begun = answer;
  const begun = await life.beginAttempt(id, l);
  const ms = performance.now() - t0;
  if (begun.attempt !== 1) throw new Error('fused: no attempt');
  return ms;
}

const p = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))] ?? 0;
try {
  // Every slot free for the bench's one tenant: no lease is ever refused.
  await redis.hset(keys.poolSlots(mode), 'bench', `100000:${Date.now() + 3_600_000}`);
  const times = { apart: [] as number[], fused: [] as number[] };
  for (let i = -10; i < RUNS; i++) {
    for (const way of i % 2 === 0 ? (['apart', 'fused'] as const) : (['fused', 'apart'] as const)) {
      const id = `${way}-${i}`;
      await newJob(id);
      await new Promise((r) => setTimeout(r, 1));
      const ms = await (way === 'apart' ? apart(id) : fused(id));
      if (i >= 0) times[way].push(ms);
      await redis.del(keys.poolBusy(mode), keys.poolTenantLeases(mode, 'acme'), keys.poolQueued(mode));
      await redis.lrem(queue.keys.active ?? '', 0, id);
    }
  }
  for (const way of ['apart', 'fused'] as const)
    console.log(
      `${way}: ${RUNS} pick-ups, p50 ${p(times[way], 0.5).toFixed(3)} / p90 ${p(times[way], 0.9).toFixed(3)} ms`,
    );
  console.log(`fused / apart p50: ${(p(times.fused, 0.5) / p(times.apart, 0.5)).toFixed(2)}`);
} finally {
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  queueConnection.disconnect();
  redis.disconnect();
  await server.stop();
}
