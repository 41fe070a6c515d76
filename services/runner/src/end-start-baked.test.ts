/**
 * A run's end fused with its job's completion and the next job's start (end-complete-store.ts,
 * `endCompleteStartScript`), sent with the worker's names baked into its script (@islet/runs
 * baked-call.ts), makes exactly the unbaked call's answer and writes: the same state (DUMP/RESTORE
 * of every key) after a run's start, its end handed over, sent once as the unbaked script with
 * every name as an argument and once through the runner's `completingExec`, then every key read
 * back — equal but for Redis's clock (the lease's times, event ids), which the two calls read at
 * different ms. Which path ran is read from Redis's script cache (flushed before each). Real
 * redis-server, BullMQ, run store and journal.
 */
import { createMetrics, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { QUEUE_PREFIX } from '@islet/protocol';
import {
  createCallJournal,
  createRunLifecycle,
  createRunStore,
  endAndCompleteScript,
  endCompleteStartScript,
  handedRefetch,
  journalKeys,
  type RunLease,
  startArgsList,
} from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { Job, Worker } from 'bullmq';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { version } from 'bullmq/dist/esm/version.js';
import { pack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onQueueServer } from '../test/queue-server.ts';
import {
  clockless,
  type RedisSnapshot,
  snapshot as redisSnapshot,
  redisState,
  restore as restoreRedis,
} from '../test/redis-state.ts';
import {
  completingExec,
  END_AND_COMPLETE_SHA,
  END_COMPLETE_START_SHA,
  endsUnbakedAtScrape,
  isEndAndCompleteSha,
  isEndCompleteStartSha,
  isEndOptionsSha,
  type PendingEnd,
  unbakedEnds,
} from './end-complete-store.ts';
import { FETCH_AND_LOOK, startingClient } from './fetch-start-store.ts';
import { FETCH_KEY_NAMES } from './handoff-store.ts';

const mode = 'read-only';
const at = 1_796_584_541_000;
const { redis, queueConnection, queue } = await onQueueServer('end-start-baked-test');
/** A worker never run (no processor): its Scripts build the completion's keys and arguments, as the runner's do. */
let worker: Worker;
beforeAll(async () => {
  worker = new Worker('end-start-baked-test', null, {
    connection: queueConnection,
    prefix: QUEUE_PREFIX,
    autorun: false,
    lockDuration: 30_000,
    name: 'vm',
  });
});
afterAll(async () => {
  await worker?.close();
});

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const UNBAKED = endCompleteStartScript(
  moveToFinished.content,
  FETCH_AND_LOOK,
  handedRefetch(moveToActive.content),
);
/** The end and completion alone (a completion that brings no next job). */
const UNBAKED_END = endAndCompleteScript(moveToFinished.content);
const terms = { mode, share: 0.5, cap: 0, leaseMs: 30_000 };
const DEFER_MS = 60_000;

/** The run store's default retention (ms), and what a decision's request sets (its wait, a day, more). */
const RETENTION_MS = 7 * 24 * 3600 * 1000;
const decisionsOf = journalKeys().decisions;
/** A decision asked and answered for `id` before its end: the request's expiry, a wait plus a retention. */
async function decided(id: string) {
  await redis.hset(decisionsOf(id), '0', '{"state":"allowed"}');
  await redis.pexpire(decisionsOf(id), RETENTION_MS + 86_400_000);
}

const state = () => redisState(redis);
const snapshot = () => redisSnapshot(redis);
const restore = (snap: RedisSnapshot) => restoreRedis(redis, snap);

/**
 * `first` (tenant `firstTenant`) started by a fused fetch, then ended with its end handed to the
 * completion; from that state its completion fetching the next job (`next`; else fetching none)
 * sent both ways.
 */
async function bothWays(
  first: string,
  firstTenant: string,
  t = terms,
  next = true,
  o: {
    jobId?: string;
    alter?: (end: { keys: string[]; args: (string | number)[] }) => void;
    /** The worker's lock token (default `w1:<first>`). */
    token?: string;
    /** The completion's time (default now). */
    ts?: number;
  } = {},
) {
  const jobId = o.jobId ?? first;
  const life = createRunLifecycle({
    runs: createRunStore(redis, sealer),
    journal: createCallJournal({ redis, sealer }),
  });
  const start = life.fetchedStart(t);
  const token = o.token ?? `w1:${first}`;
  // The first run's start, as the worker's fused fetch makes it.
  const fetchKeys = FETCH_KEY_NAMES.map((k) => queue.keys[k] ?? '');
  const fetching = startingClient(
    redis as never,
    () => start,
    () => undefined,
    () => undefined,
    {
      deferMs: DEFER_MS,
    },
  );
  const fetched = (await fetching.runCommand(`moveToActive:${version}`, [
    ...fetchKeys,
    queue.toKey(''),
    at + 10,
    pack({ token, lockDuration: 30_000, name: 'vm' }),
  ])) as unknown[];
  expect(fetched[1]).toBe(jobId);
  // Its end, handed to the completion (`deferEnd`): the end's keys and arguments.
  let handed: { keys: string[]; args: (string | number)[] } | undefined;
  const lease: RunLease = {
    ...t,
    tenant: firstTenant,
    jobId,
    acquired: () => undefined,
    held: () => true,
    released: () => undefined,
    deferEnd: (k, a) => {
      handed = { keys: k, args: a };
      return new Promise(() => undefined);
    },
  };
  await createRunStore(redis, sealer).finish(
    { id: first, tenant: firstTenant, lease },
    {
      status: 'Completed',
      result: { _tag: 'Completed', value: 1, logs: [] },
      text: '1',
      onEnded: () => undefined,
    },
  );
  if (!handed) throw new Error('the end was not handed over');
  const end = handed;
  o.alter?.(end);
  const job = await Job.fromId(queue, jobId);
  const scripts = (worker as unknown as { scripts: { moveToCompletedArgs(...a: unknown[]): unknown[] } })
    .scripts;
  const bullCall = scripts.moveToCompletedArgs(job, '1', { count: 100 }, token, next);
  if (o.ts !== undefined) bullCall[15] = o.ts;
  const bullKeys = bullCall.slice(0, 14) as string[];
  const bullArgs = bullCall.slice(14) as (string | number)[];
  const snap = await snapshot();
  const answers: unknown[] = [];
  const states: Record<string, unknown>[] = [];
  await restore(snap);
  const unbakedSha = next ? END_COMPLETE_START_SHA : END_AND_COMPLETE_SHA;
  answers.push(
    next
      ? await UNBAKED.run(
          redis,
          bullKeys.concat(end.keys),
          bullArgs.concat(end.args, [14, bullArgs.length], startArgsList(start), DEFER_MS),
        )
      : await UNBAKED_END.run(
          redis,
          bullKeys.concat(end.keys),
          bullArgs.concat(end.args, [14, bullArgs.length]),
        ),
  );
  states.push(await state());
  const unbakedHeld = await redis.script('EXISTS', unbakedSha);
  await restore(snap);
  const started: string[] = [];
  let ended: unknown;
  const pending: PendingEnd = {
    keys: end.keys,
    args: end.args,
    resolve: (answer) => {
      ended = answer;
    },
    reject: () => undefined,
    startNext: {
      start: () => start,
      started: (id) => started.push(id),
      hooks: { deferMs: DEFER_MS, moved: () => undefined },
    },
  };
  const sent: string[] = [];
  /** The EVALSHA's keys and arguments as sent (after its hash and key count). */
  const sentKeys: unknown[][] = [];
  const sentArgs: unknown[][] = [];
  const exec = completingExec(
    version,
    async () => {
      throw new Error('BullMQ’s own call: not expected');
    },
    (id) => (id === jobId ? pending : undefined),
  );
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
    if (command.name === 'evalsha') {
      sent.push(String(command.args[0]));
      const n = Number(command.args[1]);
      sentKeys.push(command.args.slice(2, 2 + n).map(String));
      sentArgs.push(command.args.slice(2 + n));
    }
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  }) as typeof redis.sendCommand;
  try {
    // The runner's call answers BullMQ with the completion's part and gives the end its own.
    const completed = await exec(redis as never, 'moveToFinished', bullCall);
    answers.push([ended, completed]);
  } finally {
    redis.sendCommand = send;
  }
  states.push(await state());
  const bakedHeldUnbaked = await redis.script('EXISTS', unbakedSha);
  return { answers, states, unbakedHeld, bakedHeldUnbaked, sent, sentKeys, sentArgs, started, end };
}

describe("a run's end, its completion and the next start, baked", () => {
  it("answers and writes as the unbaked call: the next run's job started", async () => {
    await redis.flushall();
    await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
    for (const id of ['e1', 'e2', 'e3']) {
      await createRunStore(redis, sealer).create(runFixture(id, { mode, createdAt: at }));
      await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: at }, { jobId: id });
    }
    await decided('e1');
    const r = await bothWays('e1', 'acme');
    // The unbaked ran the first time only; the runner's call never loaded it: a baked variant ran.
    expect(r.unbakedHeld).toEqual([1]);
    expect(r.bakedHeldUnbaked).toEqual([0]);
    expect(r.sent).toHaveLength(1);
    expect(isEndCompleteStartSha(r.sent[0])).toBe(true);
    expect(r.sent[0]).not.toBe(END_COMPLETE_START_SHA);
    expect(isEndOptionsSha(r.sent[0])).toBe(true);
    const [unbaked = [], baked] = r.answers as unknown[][];
    expect(clockless(baked)).toBe(clockless(unbaked));
    // {the end's answer, the completion's}: the end written; the next job with its start's answer
    // (a fifth element): its lease taken, its attempt begun.
    const completion = unbaked[1] as unknown[];
    expect((unbaked[0] as unknown[])[0]).toBe(1);
    expect(completion[1]).toBe('e2');
    expect(Array.isArray(completion[4])).toBe(true);
    expect(r.started).toEqual(['e2']);
    expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    // Sent: only the end's keys with a time part (usage day, health hour, stored bytes); its run's,
    // tenant's and BullMQ's job key made in the text; the run id twice (the end's, BullMQ's job id).
    expect(r.sentKeys[0]).toEqual([r.end.keys[9], r.end.keys[11], r.end.keys[12]]);
    expect(r.sentArgs[0]?.filter((a) => a === 'e1')).toHaveLength(2);
    expect(r.sentArgs[0]?.some((a) => String(a).includes('islet:'))).toBe(false);
    expect(await redis.hmget(keys.run('e1'), 'status', 'attempts')).toEqual(['Completed', '1']);
    expect(await redis.hmget(keys.run('e2'), 'status', 'attempts')).toEqual(['Running', '1']);
    // The run's decisions key made in the text too (round 48): the baked end gave them one retention.
    expect(await redis.pttl(decisionsOf('e1'))).toBeGreaterThan(0);
    expect(await redis.pttl(decisionsOf('e1'))).toBeLessThanOrEqual(RETENTION_MS);
  });

  it("answers and writes as the unbaked call: the next job's lease refused, the job moved to delayed and the one after fetched", async () => {
    await redis.flushall();
    // A cap of one run a tenant, acme's held by another of its runs: d2 is refused and moved; beta's d3 is fetched.
    await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
    await redis.zadd(keys.poolBusy(mode), Date.now() + 3_600_000, 'acme-job');
    await redis.zadd(keys.poolTenantLeases(mode, 'acme'), Date.now() + 3_600_000, 'acme-job');
    for (const [id, tenant] of [
      ['d1', 'beta'],
      ['d2', 'acme'],
      ['d3', 'beta'],
    ] as const) {
      await createRunStore(redis, sealer).create(runFixture(id, { mode, tenant, createdAt: at }));
      await queue.add('run', { runId: id, tenant, enqueuedAtMs: at }, { jobId: id });
    }
    const r = await bothWays('d1', 'beta', { ...terms, cap: 1 });
    expect(r.bakedHeldUnbaked).toEqual([0]);
    const [unbaked = [], baked] = r.answers as unknown[][];
    expect(clockless(baked)).toBe(clockless(unbaked));
    expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    expect(await redis.zscore(queue.keys.delayed ?? '', 'd2')).not.toBeNull();
    expect((unbaked[1] as unknown[])[1]).toBe('d3');
    expect(r.started).toEqual(['d3']);
  });

  it('answers and writes as the unbaked call: the end and a completion that brings no next job', async () => {
    await redis.flushall();
    await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
    for (const id of ['f1', 'f2']) {
      await createRunStore(redis, sealer).create(runFixture(id, { mode, createdAt: at }));
      await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: at }, { jobId: id });
    }
    await decided('f1');
    const r = await bothWays('f1', 'acme', terms, false);
    // A baked text of the end and completion ran; the unbaked one was never loaded by the runner.
    expect(r.unbakedHeld).toEqual([1]);
    expect(r.bakedHeldUnbaked).toEqual([0]);
    expect(r.sent).toHaveLength(1);
    expect(isEndAndCompleteSha(r.sent[0])).toBe(true);
    expect(r.sent[0]).not.toBe(END_AND_COMPLETE_SHA);
    const [unbaked = [], baked] = r.answers as unknown[][];
    expect(clockless(baked)).toBe(clockless(unbaked));
    expect((unbaked[0] as unknown[])[0]).toBe(1);
    expect(r.started).toEqual([]);
    expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    expect(r.sentKeys[0]).toEqual([r.end.keys[9], r.end.keys[11], r.end.keys[12]]);
    expect(await redis.hget(keys.run('f1'), 'status')).toBe('Completed');
    expect(await redis.zscore(queue.keys.completed ?? '', 'f1')).not.toBeNull();
    expect(await redis.pttl(decisionsOf('f1'))).toBeGreaterThan(0);
    expect(await redis.pttl(decisionsOf('f1'))).toBeLessThanOrEqual(RETENTION_MS);
  });

  it("answers and writes as the unbaked call: a decision round's job, its id not the run's", async () => {
    await redis.flushall();
    await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
    for (const id of ['g1', 'g2']) {
      await createRunStore(redis, sealer).create(runFixture(id, { mode, createdAt: at }));
      await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: at }, { jobId: `${id}-r1` });
    }
    const r = await bothWays('g1', 'acme', terms, true, { jobId: 'g1-r1' });
    expect(r.bakedHeldUnbaked).toEqual([0]);
    expect(isEndCompleteStartSha(r.sent[0])).toBe(true);
    expect(r.sent[0]).not.toBe(END_COMPLETE_START_SHA);
    // The lease's job id a copy of BullMQ's, the tenant half's run id of the end's.
    expect(r.sentKeys[0]).toHaveLength(3);
    expect(r.sentArgs[0]?.filter((a) => a === 'g1-r1')).toHaveLength(1);
    expect(r.sentArgs[0]?.filter((a) => a === 'g1')).toHaveLength(1);
    const [unbaked = [], baked] = r.answers as unknown[][];
    expect(clockless(baked)).toBe(clockless(unbaked));
    expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    expect(await redis.hget(keys.run('g1'), 'status')).toBe('Completed');
    expect(await redis.zscore(keys.poolTenantLeases(mode, 'acme'), 'g1-r1')).toBeNull();
  });

  it('sends an end whose key is not made from its run id or tenant unbaked, every key as it is', async () => {
    await redis.flushall();
    await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
    for (const id of ['h1', 'h2']) {
      await createRunStore(redis, sealer).create(runFixture(id, { mode, createdAt: at }));
      await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: at }, { jobId: id });
    }
    const before = unbakedEnds();
    // The in-flight key under another prefix: not `before .. tenant .. '}:inflight'` with the
    // text's before, nor any: its tenant's name is not there.
    const r = await bothWays('h1', 'acme', terms, true, {
      alter: (end) => {
        end.keys[3] = 'islet:tenant:{t:other}:inflight';
      },
    });
    expect(r.sent).toEqual([END_COMPLETE_START_SHA]);
    expect(r.sentKeys[0]).toHaveLength(33);
    // Counted (round 48), and shown on the runner's metrics when scraped.
    const after = unbakedEnds();
    expect(after).toEqual({ ...before, derived: before.derived + 1 });
    const metrics = createMetrics({ component: 'end-start-baked-test', defaults: false });
    endsUnbakedAtScrape(metrics);
    const scraped = await metrics.registry.metrics();
    expect(scraped).toContain(
      `islet_runner_end_unbaked_total{reason="derived",component="end-start-baked-test"} ${after.derived}`,
    );
    expect(scraped).toContain(
      `islet_runner_end_unbaked_total{reason="texts",component="end-start-baked-test"} ${after.texts}`,
    );
    expect(r.sentKeys[0]).toContain('islet:tenant:{t:other}:inflight');
    const [unbaked = [], baked] = r.answers as unknown[][];
    expect(clockless(baked)).toBe(clockless(unbaked));
    expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
    // The run's own in-flight entry stays: the key as sent was used, not one made from the tenant.
    expect(await redis.zscore(keys.inFlight('acme'), 'h1')).not.toBeNull();
  });

  it("carries the worker's lock token, not its packed options: the options' bytes and verdict in the text, as the unbaked call's answer and writes, with and without the next job", async () => {
    for (const next of [true, false]) {
      await redis.flushall();
      await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
      for (const id of ['k1', 'k2']) {
        await createRunStore(redis, sealer).create(runFixture(id, { mode, createdAt: at }));
        await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: at }, { jobId: id });
      }
      // A token past fixstr's 31 bytes (str8), as a worker's `<uuid>:<n>` is.
      const token = `6f1c2d3e-4b5a-4c6d-8e7f-90a1b2c3d4e5:${next ? 17 : 1234}`;
      const r = await bothWays('k1', 'acme', terms, next, { token });
      expect(r.sent).toHaveLength(1);
      expect(isEndOptionsSha(r.sent[0])).toBe(true);
      // No msgpack map among the arguments (BullMQ's packed options: map16 0xde, or a fixmap); the token as it is.
      expect(r.sentArgs[0]?.some((a) => Buffer.isBuffer(a) || /^[\x80-\x8f\xde]/.test(String(a)))).toBe(
        false,
      );
      expect(r.sentArgs[0]?.filter((a) => String(a) === token)).toHaveLength(1);
      const [unbaked = [], baked] = r.answers as unknown[][];
      expect(clockless(baked)).toBe(clockless(unbaked));
      expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
      expect(await redis.zscore(queue.keys.completed ?? '', 'k1')).not.toBeNull();
      if (next) expect(await redis.get(`${queue.toKey('k2')}:lock`)).toBe(token);
    }
  });

  it("a completion the direct path leaves to BullMQ's text (its time a multiple of 64: the completed set's trim) gets the packed options made again byte for byte: as the unbaked call", async () => {
    for (const token of ['w1:m1', `${'t'.repeat(40)}:1`, `${'u'.repeat(300)}:1`]) {
      await redis.flushall();
      await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
      for (const id of ['m1', 'm2']) {
        await createRunStore(redis, sealer).create(runFixture(id, { mode, createdAt: at }));
        await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: at }, { jobId: id });
      }
      const r = await bothWays('m1', 'acme', terms, true, { token, ts: 64 * Math.floor(Date.now() / 64) });
      expect(isEndOptionsSha(r.sent[0])).toBe(true);
      const [unbaked = [], baked] = r.answers as unknown[][];
      expect(clockless(baked)).toBe(clockless(unbaked));
      expect(clockless(r.states[1])).toBe(clockless(r.states[0]));
      expect(r.started).toEqual(['m2']);
      expect(await redis.get(`${queue.toKey('m2')}:lock`)).toBe(token);
    }
  });
});
