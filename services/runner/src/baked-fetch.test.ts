/**
 * The runner's fused fetch with the mode's names baked into its script (@islet/runs baked-call.ts,
 * taken by fetch-start-store.ts `startingClient`) makes exactly the unbaked fetch's answer and
 * writes: the same state (DUMP/RESTORE of every key) fetched once by the unbaked script and once
 * through the runner's client, then every key read back — equal but for Redis's clock (the
 * lease's times, the event's id), which the two calls read at different ms. Which path ran is
 * read from Redis's script cache (flushed before each). Real redis-server, BullMQ, run store.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import {
  createCallJournal,
  createRunLifecycle,
  createRunStore,
  fetchLeaseBeginScript,
  startArgsList,
} from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { version } from 'bullmq/dist/esm/version.js';
import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { onQueueServer } from '../test/queue-server.ts';
import {
  clockless,
  type RedisSnapshot,
  snapshot as redisSnapshot,
  redisState,
  restore as restoreRedis,
} from '../test/redis-state.ts';
import { FETCH_AND_LOOK, FETCH_START_SHA, isBakedFetchSha, startingClient } from './fetch-start-store.ts';
import { FETCH_KEY_NAMES } from './handoff-store.ts';

const mode = 'read-only';
const at = 1_796_584_541_000;
const { redis, queue } = await onQueueServer('baked-fetch-test');

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const UNBAKED = fetchLeaseBeginScript(FETCH_AND_LOOK, 'nil', true);
const terms = { mode, share: 0.5, cap: 0, leaseMs: 30_000 };

const state = () => redisState(redis);
const snapshot = () => redisSnapshot(redis);
const restore = (snap: RedisSnapshot) => restoreRedis(redis, snap);

/** Both ways from the same state: their answers, states after, and which scripts Redis holds. */
async function bothWays(token: string, t = terms) {
  const snap = await snapshot();
  const life = createRunLifecycle({
    runs: createRunStore(redis, sealer),
    journal: createCallJournal({ redis, sealer }),
  });
  const fetchKeys = FETCH_KEY_NAMES.map((k) => queue.keys[k] ?? '');
  const bull = [queue.toKey(''), at + 30, pack({ token, lockDuration: 30_000, name: 'vm' })];
  // The same start arguments both ways (its sealed event made once for the lifecycle's maker).
  const start = life.fetchedStart(t);
  const answers: unknown[] = [];
  const states: Record<string, unknown>[] = [];
  await restore(snap);
  answers.push(
    await UNBAKED.run(redis, fetchKeys, (bull as (string | number)[]).concat(startArgsList(start), 60_000)),
  );
  states.push(await state());
  const unbakedHeld = await redis.script('EXISTS', FETCH_START_SHA);
  await restore(snap);
  const client = startingClient(
    redis as never,
    () => start,
    () => undefined,
    () => undefined,
    { deferMs: 60_000 },
  );
  answers.push(await client.runCommand(`moveToActive:${version}`, [...fetchKeys, ...bull]));
  states.push(await state());
  const bakedHeldUnbaked = await redis.script('EXISTS', FETCH_START_SHA);
  return { answers, states, unbakedHeld, bakedHeldUnbaked };
}

describe("the runner's fused fetch, baked", () => {
  it("answers and writes as the unbaked fetch: a run's job started, one behind it", async () => {
    await redis.flushall();
    await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
    for (const id of ['b1', 'b2']) {
      await createRunStore(redis, sealer).create(runFixture(id, { mode, createdAt: at }));
      await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: at }, { jobId: id });
    }
    const r = await bothWays('w1:1');
    // The unbaked ran the first time only; the runner's call never loaded it: the baked path ran.
    expect(r.unbakedHeld).toEqual([1]);
    expect(r.bakedHeldUnbaked).toEqual([0]);
    const [unbaked, baked] = r.answers as unknown[][];
    expect(clockless(baked)).toBe(clockless(unbaked));
    expect(unbaked?.[1]).toBe('b1');
    // The start's answer is there (a fifth element): the lease taken, the attempt begun.
    expect(Array.isArray(unbaked?.[4])).toBe(true);
    expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    expect(await redis.hget(keys.run('b1'), 'attempts')).toBe('1');
    expect(await redis.hget(keys.run('b1'), 'status')).toBe('Running');
  });

  it('answers and writes as the unbaked fetch: a refused lease, its job moved to delayed', async () => {
    await redis.flushall();
    // A cap of one run a tenant, acme's held by another of its runs: its job is refused and moved.
    await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
    await redis.zadd(keys.poolBusy(mode), Date.now() + 3_600_000, 'acme-job');
    await redis.zadd(keys.poolTenantLeases(mode, 'acme'), Date.now() + 3_600_000, 'acme-job');
    await createRunStore(redis, sealer).create(runFixture('d1', { mode, createdAt: at }));
    await queue.add('run', { runId: 'd1', tenant: 'acme', enqueuedAtMs: at }, { jobId: 'd1' });
    const r = await bothWays('w1:2', { ...terms, cap: 1 });
    expect(r.bakedHeldUnbaked).toEqual([0]);
    const [unbaked, baked] = r.answers as unknown[][];
    expect(clockless(baked)).toBe(clockless(unbaked));
    expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    expect(await redis.zscore(queue.keys.delayed ?? '', 'd1')).not.toBeNull();
  });
});

it('a baked fetch script is told from the unbaked', () => {
  expect(isBakedFetchSha(FETCH_START_SHA)).toBe(false);
});
