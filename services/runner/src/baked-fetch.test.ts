/**
 * The runner's fused fetch with the mode's names baked into its script (@islet/runs baked-call.ts,
 * taken by fetch-start-store.ts `startingClient`) makes exactly the unbaked fetch's answer and
 * writes: the same state (DUMP/RESTORE of every key) fetched once by the unbaked script and once
 * through the runner's client, then every key read back — equal but for Redis's clock (the
 * lease's times, the event's id), which the two calls read at different ms. Which path ran is
 * read from Redis's script cache (flushed before each). Real redis-server, BullMQ, run store.
 */
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { QUEUE_PREFIX } from '@islet/protocol';
import {
  createCallJournal,
  createRunLifecycle,
  createRunStore,
  fetchLeaseBeginScript,
  startArgsList,
} from '@islet/runs';
import { type RedisServer, runFixture, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { version } from 'bullmq/dist/esm/version.js';
import type { Redis } from 'ioredis';
import { Packr, pack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clockless,
  type RedisSnapshot,
  snapshot as redisSnapshot,
  redisState,
  restore as restoreRedis,
} from '../test/redis-state.ts';
import {
  FETCH_AND_LOOK,
  FETCH_START_SHA,
  isBakedFetchSha,
  isFetchOptionsSha,
  startingClient,
} from './fetch-start-store.ts';
import { FETCH_KEY_NAMES } from './handoff-store.ts';

const mode = 'read-only';
const at = 1_796_584_541_000;
let server: RedisServer;
let redis: Redis;
let queueConnection: Redis;
let queue: Queue;
beforeAll(async () => {
  server = await startRedis();
  redis = createRedis(server.url);
  queueConnection = redis.duplicate();
  queue = new Queue('baked-fetch-test', { connection: queueConnection, prefix: QUEUE_PREFIX });
});
afterAll(async () => {
  await queue?.close();
  queueConnection?.disconnect();
  redis?.disconnect();
  await server?.stop();
});

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const UNBAKED = fetchLeaseBeginScript(FETCH_AND_LOOK, 'nil', true);
const terms = { mode, share: 0.5, cap: 0, leaseMs: 30_000 };

const state = () => redisState(redis);
const snapshot = () => redisSnapshot(redis);
const restore = (snap: RedisSnapshot) => restoreRedis(redis, snap);

/** BullMQ's encoder of its script arguments (its `scripts.js`), as its `moveToActive` packs the worker's options. */
const bullPacker = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

/**
 * Both ways from the same state: their answers, states after, which scripts Redis holds and the
 * runner's script call as sent (`sent`: its sha, keys count, keys and arguments). `opts`: the
 * packed worker options (default: msgpackr's of a token, lock duration and name).
 */
async function bothWays(token: string, t = terms, opts?: Buffer) {
  const snap = await snapshot();
  const life = createRunLifecycle({
    runs: createRunStore(redis, sealer),
    journal: createCallJournal({ redis, sealer }),
  });
  const fetchKeys = FETCH_KEY_NAMES.map((k) => queue.keys[k] ?? '');
  const bull = [queue.toKey(''), at + 30, opts ?? pack({ token, lockDuration: 30_000, name: 'vm' })];
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
  let sent: unknown[] = [];
  const send = redis.sendCommand.bind(redis);
  (redis as unknown as { sendCommand: typeof redis.sendCommand }).sendCommand = (cmd) => {
    const c = cmd as unknown as { name: string; args: unknown[] };
    if (c.name === 'evalsha') sent = c.args;
    return send(cmd);
  };
  try {
    answers.push(await client.runCommand(`moveToActive:${version}`, [...fetchKeys, ...bull]));
  } finally {
    redis.sendCommand = send;
  }
  states.push(await state());
  const bakedHeldUnbaked = await redis.script('EXISTS', FETCH_START_SHA);
  return { answers, states, unbakedHeld, bakedHeldUnbaked, sent };
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

describe("the runner's fused fetch, its worker's options taken apart (round 52 `fetch-token`)", () => {
  /** A run's job waiting with a free slot, one behind it. */
  async function twoJobs(ids: [string, string]): Promise<void> {
    await redis.flushall();
    await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
    for (const id of ids) {
      await createRunStore(redis, sealer).create(runFixture(id, { mode, createdAt: at }));
      await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: at }, { jobId: id });
    }
  }
  /** Whether an argument is a msgpack map (BullMQ's packed options: fixmap, or map16 as msgpackr writes it). */
  const packedMap = (a: unknown) =>
    Buffer.isBuffer(a) && (((a[0] as number) >= 0x80 && (a[0] as number) <= 0x8f) || a[0] === 0xde);

  it("carries the lock token, not BullMQ's packed options, and answers and writes as the unbaked fetch", async () => {
    // Tokens of 39 and 41 bytes (fixstr, str8), as BullMQ packs them (its limiter an explicit nil).
    for (const [n, token] of [`${'t'.repeat(36)}:11`, `${'u'.repeat(38)}:12`].entries()) {
      const ids: [string, string] = [`o${n}a`, `o${n}b`];
      await twoJobs(ids);
      const opts = bullPacker.pack({ token, lockDuration: 30_000, limiter: undefined, name: 'vm' });
      const r = await bothWays(token, terms, opts);
      expect(isFetchOptionsSha(r.sent[0])).toBe(true);
      expect(r.sent.some(packedMap)).toBe(false);
      expect(r.sent.filter((a) => a === token)).toHaveLength(1);
      const [unbaked, baked] = r.answers as unknown[][];
      expect(clockless(baked)).toBe(clockless(unbaked));
      expect(unbaked?.[1]).toBe(ids[0]);
      expect(Array.isArray(unbaked?.[4])).toBe(true);
      expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
      // The lock as the text sets it: the token, with the lock duration's expiry.
      expect(await redis.get(`${queue.toKey(ids[0])}:lock`)).toBe(token);
      expect(await redis.pttl(`${queue.toKey(ids[0])}:lock`)).toBeGreaterThan(0);
    }
  });

  it('carries them packed where the worker has a limiter, or no name: the same answer and writes', async () => {
    for (const [n, o] of [{ limiter: { max: 5, duration: 1000 } }, { name: undefined }].entries()) {
      await twoJobs([`p${n}a`, `p${n}b`]);
      const token = `w1:${n}`;
      const opts = bullPacker.pack({ token, lockDuration: 30_000, limiter: undefined, name: 'vm', ...o });
      const r = await bothWays(token, terms, opts);
      expect(isFetchOptionsSha(r.sent[0])).toBe(false);
      expect(r.sent.some(packedMap)).toBe(true);
      const [unbaked, baked] = r.answers as unknown[][];
      expect(clockless(baked)).toBe(clockless(unbaked));
      expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    }
  });

  it('a refused lease, its job moved to delayed and the next fetched: as the unbaked fetch', async () => {
    await twoJobs(['q1', 'q2']);
    await redis.zadd(keys.poolBusy(mode), Date.now() + 3_600_000, 'acme-job');
    await redis.zadd(keys.poolTenantLeases(mode, 'acme'), Date.now() + 3_600_000, 'acme-job');
    const token = `${'v'.repeat(36)}:13`;
    const opts = bullPacker.pack({ token, lockDuration: 30_000, limiter: undefined, name: 'vm' });
    const r = await bothWays(token, { ...terms, cap: 1 }, opts);
    expect(isFetchOptionsSha(r.sent[0])).toBe(true);
    const [unbaked, baked] = r.answers as unknown[][];
    expect(clockless(baked)).toBe(clockless(unbaked));
    expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    expect(await redis.zscore(queue.keys.delayed ?? '', 'q1')).not.toBeNull();
  });
});

it('a baked fetch script is told from the unbaked', () => {
  expect(isBakedFetchSha(FETCH_START_SHA)).toBe(false);
});
