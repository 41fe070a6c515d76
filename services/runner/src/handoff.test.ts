/**
 * Direct hand-off (one server): a worker blocked idle registers itself, and the submit's add runs
 * its fetch, lease and attempt start in the add's own script and hands the answer to the worker's
 * blocking pop. The pick-up then has no fetch: the calls are read from MONITOR (names, order,
 * hashes) and from the worker's counters, never from time. Real redis-server, real BullMQ, real
 * fair share, run store and journal; the add is the gateway's (handoff-add-store.ts).
 */
import { createRedis, keys } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { createRunStore, handOffAddScript, handOffKeys } from '@islet/runs';
import { runFixture, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { addStandardJob } from 'bullmq/dist/esm/scripts/addStandardJob-9.js';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import type { Redis } from 'ioredis';
import { pack, unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { handOffAddShaOf } from '../../gateway/src/handoff-add-store.ts';
import { createRunQueueStore } from '../../gateway/src/run-queue-store.ts';
import { addOn, handingQueue, prefix, registerDead } from '../test/handing-queue.ts';
import {
  handOff,
  mode,
  onRunnerHarness,
  type RunnerUnderTest,
  scriptsBeforeWork,
  until,
  untilIdle,
} from '../test/runner-harness.ts';
import { storedTerms } from '../test/stored-terms.ts';
import { createFairShare } from './fair-share.ts';
import { isFetchStartSha } from './fetch-start-store.ts';
import { registerAndPop } from './handoff-store.ts';

let redis: Redis;
const h = onRunnerHarness('handoff-test', (up) => {
  ({ redis } = up);
});
const { logger, newRun, monitor, setUp, warmUp, sealer } = h;
const idleKey = handOff.idle;
const idleArgsKey = handOff.idleArgs;

const idle = (t: RunnerUnderTest) => untilIdle(redis, t);

/**
 * Another runner (`tag`), whose stalled check runs every 500 ms, takes `jobId` back once its lock
 * lapsed and runs it to completion, its lease given back. `keep` gets the runner as soon as it
 * started, so the caller closes it even when the wait fails.
 */
async function runStalled(
  tag: string,
  q: Queue,
  jobId: string,
  keep: (r: RunnerUnderTest) => void,
): Promise<RunnerUnderTest> {
  const r = await setUp(tag, true, undefined, {
    handOff: true,
    env: { ISLET_RUNNER_STALLED_INTERVAL_MS: '500' },
  });
  keep(r);
  await until(`${jobId} to complete`, async () => (await q.getJobState(jobId)) === 'completed');
  await until('no lease left', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
  return r;
}

/** What a killed worker leaves (`registerDead`), with a 1 s lock. */
const deadRegistration = (runner: RunnerUnderTest, tag: string, id: string) =>
  registerDead(h, redis, runner, tag, id, { lockMs: 1000 });

describe('direct hand-off to an idle worker (one server)', () => {
  it('a submit hands its job to the idle worker: one script call, no fetch, the run started in it', async () => {
    const t = await setUp('handed', true, undefined, { handOff: true });
    try {
      await warmUp(t, 'hw');
      await idle(t);
      const before = { handOffs: t.worker().handOffs, fetches: t.worker().redisFetches };
      await newRun('h1');
      const m = await monitor();
      try {
        await t.add('h1');
        await until('h1 to complete', async () => t.outcomes.length === 2);
      } finally {
        await m.stop();
      }
      // The add's script did it all: no fetch script (fused or idle) before the run's work.
      const scripts = scriptsBeforeWork(m.sent, 'h1');
      // The add holding its mode's names (the gateway's): the runner's registration is compact.
      expect(scripts).toEqual([handOffAddShaOf(mode, t.queue.keys)]);
      expect(m.sent.some((c) => c[0] === 'evalsha' && isFetchStartSha(c[1]))).toBe(false);
      expect(t.worker().handOffs).toBe(before.handOffs + 1);
      expect(t.worker().redisFetches).toBe(before.fetches);
      expect(t.outcomes).toEqual(['completed 1', 'completed 1']);
      expect(await redis.hget(keys.run('h1'), 'attempts')).toBe('1');
      expect(await redis.hget(keys.run('h1'), 'status')).toBe('Completed');
      // A first start writes no journal (the record's count fences it; the trivial run made no call).
      expect(await redis.exists('islet:journal:{h1}')).toBe(0);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
      expect(await redis.zcard(keys.poolTenantLeases(mode, 'acme'))).toBe(0);
      // The job's lock was the registration's token, and it completed under it.
      expect((await t.queue.getJob('h1'))?.finishedOn).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });

  it('a pick-up by hand-off costs one written script call where a woken fetch costs two', async () => {
    const writes = async (handOff: boolean, tag: string) => {
      const t = await setUp(tag, true, undefined, { handOff });
      try {
        await warmUp(t, `${tag}w`);
        if (handOff) await idle(t);
        else await until('the worker blocked', async () => t.worker().drainedByFetch > 0);
        await newRun(`${tag}1`);
        const m = await monitor();
        try {
          await t.add(`${tag}1`);
          await until(`${tag}1 to complete`, async () => t.outcomes.length === 2);
        } finally {
          await m.stop();
        }
        return { scripts: scriptsBeforeWork(m.sent, `${tag}1`), own: handOffAddShaOf(mode, t.queue.keys) };
      } finally {
        await t.close();
      }
    };
    const handed = await writes(true, 'wh');
    const woken = await writes(false, 'wf');
    expect(handed.scripts).toEqual([handed.own]);
    expect(woken.scripts).toHaveLength(2);
    expect(isFetchStartSha(woken.scripts[1])).toBe(true);
  });

  it("a worker's registration and its removal behind the pop are no writes to the append-only file (no fsync'd write)", async () => {
    const server = await startRedis({ appendFsync: 'always' });
    const r = createRedis(server.url);
    const blocking = r.duplicate();
    try {
      const aofSize = async () => Number(/aof_current_size:(\d+)/.exec(await r.info('persistence'))?.[1]);
      const own = handOffKeys(prefix, 'w1');
      await r.set('warm', '1');
      const before = await aofSize();
      let registered = false;
      const popped = await registerAndPop(
        blocking as unknown as Parameters<typeof registerAndPop>[0],
        [own.idle, own.idleArgs, own.handOff, own.closed],
        'w1',
        {
          keys: [],
          prefix,
          token: 'w1:h:0',
          lockDuration: 1000,
          name: '',
          startArgs: [],
          handOff: own.handOff,
        },
        60_000,
        `${prefix}marker`,
        0.05,
        (yes) => {
          registered = yes;
        },
      );
      // Registered for the pop, removed right behind it, and nothing appended for either.
      expect(registered).toBe(true);
      expect(popped).toEqual({});
      expect(await r.zscore(own.idle, 'w1')).toBeNull();
      expect(await r.hget(own.idleArgs, 'w1')).toBeNull();
      expect(await aofSize()).toBe(before);
      // A write beside it is appended as ever.
      await r.set('other', '1');
      expect(await aofSize()).toBeGreaterThan(before);
    } finally {
      blocking.disconnect();
      r.disconnect();
      await server.stop();
    }
  });

  it('a pop that brought a hand-off sends no take-back; one woken by the marker does, and takes a job handed before it', async () => {
    const server = await startRedis();
    const r = createRedis(server.url);
    const blocking = r.duplicate();
    try {
      const own = handOffKeys(prefix, 'w2');
      const ownKeys: [string, string, string, string] = [own.idle, own.idleArgs, own.handOff, own.closed];
      const marker = `${prefix}marker`;
      const terms = {
        keys: [],
        prefix,
        token: 'w2:h:0',
        lockDuration: 1000,
        name: '',
        startArgs: [],
        handOff: own.handOff,
      };
      const member = (token: string) => pack([token, [['id', 'j'], 'j', 0, 0]]);
      // What the add's script does with a live registration: the registration goes, the answer is pushed.
      const handOff = (token: string) =>
        r.multi().zrem(own.idle, 'w2').hdel(own.idleArgs, 'w2').zadd(own.handOff, 0, member(token));
      const pop = (tookBack: () => void) =>
        registerAndPop(
          blocking as unknown as Parameters<typeof registerAndPop>[0],
          ownKeys,
          'w2',
          terms,
          60_000,
          marker,
          5,
          () => undefined,
          tookBack,
        );
      const evals = async () =>
        Number(/cmdstat_eval:calls=(\d+)/.exec(await r.info('commandstats'))?.[1] ?? 0);
      const registered = () => until('w2 registered', async () => (await r.zscore(own.idle, 'w2')) !== null);

      // Handed: the pop brings it, and the registration call is the only script.
      await r.config('RESETSTAT');
      let takeBacks = 0;
      const handed = pop(() => takeBacks++);
      await registered();
      await handOff('w2:h:0').exec();
      expect(await handed).toEqual({ handed: { token: 'w2:h:0', answer: [['id', 'j'], 'j', 0, 0] } });
      expect(takeBacks).toBe(0);
      expect(await evals()).toBe(1);
      expect(await r.exists(own.idle, own.idleArgs, own.handOff)).toBe(0);

      // The marker first, a hand-off in the same step: the pop is served the marker (set first), and
      // the take-back sent after it brings the hand-off; nothing of the registration is left.
      const woken = pop(() => takeBacks++);
      await registered();
      await r
        .multi()
        .zadd(marker, 0, '0')
        .zrem(own.idle, 'w2')
        .hdel(own.idleArgs, 'w2')
        .zadd(own.handOff, 0, member('w2:h:1'))
        .exec();
      const got = await woken;
      expect(got.marker?.[0]).toBe(marker);
      expect(got.handed?.token).toBe('w2:h:1');
      expect(takeBacks).toBe(1);
      expect(await r.exists(own.idle, own.idleArgs, own.handOff)).toBe(0);

      // The marker alone: the take-back removes the standing registration and brings nothing.
      await r.del(marker);
      const plain = pop(() => takeBacks++);
      await registered();
      await r.zadd(marker, 0, '0');
      const woke = await plain;
      expect(woke.marker?.[0]).toBe(marker);
      expect(woke.handed).toBeUndefined();
      expect(takeBacks).toBe(2);
      expect(await r.exists(own.idle, own.idleArgs)).toBe(0);
    } finally {
      blocking.disconnect();
      r.disconnect();
      await server.stop();
    }
  });

  it('sequential hand-offs: each pop brings its job, and no take-back follows any of them', async () => {
    const t = await setUp('seqhand', true, undefined, { handOff: true });
    const q = handingQueue(redis);
    try {
      await warmUp(t, 'sw');
      await idle(t);
      const before = { handOffs: t.worker().handOffs, takeBacks: t.worker().idleTakeBacks };
      const m = await monitor();
      try {
        for (const id of ['s1', 's2', 's3']) {
          await newRun(id);
          await idle(t);
          const done = t.outcomes.length;
          await addOn(q, id);
          await until(`${id} to complete`, async () => t.outcomes.length === done + 1);
        }
      } finally {
        await m.stop();
      }
      expect(t.worker().handOffs).toBe(before.handOffs + 3);
      expect(t.worker().idleTakeBacks).toBe(before.takeBacks);
      // TAKE_BACK is the one script that reads the worker's hand-off key with ZRANGEBYSCORE.
      expect(m.sent.filter((c) => c[0] === 'eval' && c[1]?.includes("'ZRANGEBYSCORE'"))).toEqual([]);
      for (const id of ['s1', 's2', 's3']) expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await q.close();
      await t.close();
    }
  });

  it("the hand-off's fetch takes the worker's options as a table: the lock is its token for its lockDuration, nothing packed for it", async () => {
    // The script's text: the registration's options are made once and read by BullMQ's fetch as
    // they are, not packed into the fetch's ARGV[3] and unpacked there again (round 34, `seq-path`).
    const source = handOffAddScript(addStandardJob.content, moveToActive.content).source;
    expect(source).not.toContain('cmsgpack.pack(opts)');
    // The add's own options are still BullMQ's packed argument: unpacked by its text and by the
    // direct add that stands for it (handed-add.ts, round 35), once each — the direct add only
    // without the gateway's JSON of them (ARGV[4], round 50); nothing else unpacks ARGV[3].
    expect(source.split('cmsgpack.unpack(ARGV[3])').length).toBe(3);
    expect(source.split('ARGV[4] == nil and cmsgpack.unpack(ARGV[3]) or nil').length).toBe(2);
    expect(source).toContain("local opts = opts -- the worker's options");
    const t = await setUp('optshand', true, undefined, { handOff: true });
    const q = handingQueue(redis);
    try {
      await warmUp(t, 'ow');
      await idle(t);
      const terms = storedTerms((await redis.hget(idleArgsKey, t.worker().id)) ?? '{}');
      const before = t.worker().handOffs;
      await newRun('o1');
      const m = await monitor();
      try {
        const done = t.outcomes.length;
        await addOn(q, 'o1');
        await until('o1 to complete', async () => t.outcomes.length === done + 1);
      } finally {
        await m.stop();
      }
      expect(t.worker().handOffs).toBe(before + 1);
      // BullMQ's fetch, inside the add's script, locked the job with the registration's terms.
      expect(m.seen.filter((c) => c[0] === 'set' && c[1] === `${prefix}o1:lock`)).toEqual([
        ['set', `${prefix}o1:lock`, terms.token, 'PX', String(terms.lockDuration)],
      ]);
      expect(await redis.hget(keys.run('o1'), 'status')).toBe('Completed');
    } finally {
      await q.close();
      await t.close();
    }
  });

  it('a marker wake-up racing a hand-off loses nothing: the fetch takes the pending hand-off first', async () => {
    const t = await setUp('race', true, undefined, { handOff: true });
    const q = handingQueue(redis);
    try {
      await warmUp(t, 'rw');
      await idle(t);
      await newRun('r1');
      await newRun('r2');
      // One write: a plain add (its marker wakes the worker), then a handing add while the worker's
      // registration still stands (its fetch has not run yet): BullMQ's fetch in it takes r1.
      const plain = new Queue(runQueueName(mode), { connection: redis, prefix: QUEUE_PREFIX });
      const m = await monitor();
      try {
        await Promise.all([addOn(plain, 'r1'), addOn(q, 'r2')]);
        await until('r1 and r2 to complete', async () => t.outcomes.length === 3);
      } finally {
        await m.stop();
        await plain.close();
      }
      expect(t.outcomes).toEqual(['completed 1', 'completed 1', 'completed 1']);
      for (const id of ['r1', 'r2']) expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
      // Whether the handing add found the registration (the worker then took the job right behind
      // its pop) or not, nothing is left on the worker's key.
      expect(await redis.exists(handOffKeys(prefix, t.worker().id).handOff)).toBe(0);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
      expect(await t.queue.getCompletedCount()).toBe(3);
    } finally {
      await q.close();
      await t.close();
    }
  });

  it("an expired registration (a dead worker's) is skipped and dropped: the job waits for a live one", async () => {
    const q = handingQueue(redis);
    try {
      const dead = handOffKeys(prefix, 'dead-1');
      const now = Number((await redis.time())[0]) * 1000;
      await redis.zadd(idleKey, now - 1000, 'dead-1');
      await redis.hset(idleArgsKey, 'dead-1', JSON.stringify({ handOff: dead.handOff }));
      await newRun('e1');
      await addOn(q, 'e1');
      expect(await q.getJobState('e1')).toBe('waiting');
      expect(await redis.exists(dead.handOff)).toBe(0);
      expect(await redis.zcard(idleKey)).toBe(0);
      expect(await redis.hlen(idleArgsKey)).toBe(0);
    } finally {
      await q.obliterate({ force: true });
      await q.close();
    }
  });

  it('a worker killed after being handed a job, its gateway gone too (no watch): the job is taken back as stalled and its run ends once', async () => {
    const first = await setUp('killed', true, undefined, { handOff: true });
    const q = handingQueue(redis, { reclaimMs: 0 });
    let second: RunnerUnderTest | undefined;
    try {
      const dead = await deadRegistration(first, 'kw', 'killed-1');
      await newRun('k1');
      await addOn(q, 'k1', 2);
      expect(await q.getJobState('k1')).toBe('active');
      expect(await redis.zcard(dead.handOff)).toBe(1);
      expect(await redis.hget(keys.run('k1'), 'attempts')).toBe('1');
      // Another runner's stalled check takes it back once its lock lapsed; it runs it.
      second = await runStalled('killed2', q, 'k1', (r) => {
        second = r;
      });
      expect(second.outcomes).toEqual(['completed 2']);
      expect(await redis.hget(keys.run('k1'), 'status')).toBe('Completed');
      await redis.del(dead.handOff);
    } finally {
      await q.close();
      await second?.close();
      await first.close();
    }
  });

  it("the add's hand-off with a live registration reads only what decides: no expired scan, one removal each", async () => {
    const first = await setUp('counted', true, undefined, { handOff: true });
    const q = handingQueue(redis);
    let second: RunnerUnderTest | undefined;
    try {
      // A live registration no worker pops, so the add's script is the only caller while the
      // counts are read.
      const dead = await deadRegistration(first, 'nw', 'counted-1');
      await newRun('n1');
      await redis.config('RESETSTAT');
      await addOn(q, 'n1', 2);
      const stats = await redis.info('commandstats');
      const calls = (name: string) =>
        Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
      const all = [...stats.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)]
        .filter(([, name]) => name !== 'config|resetstat')
        .reduce((sum, [, , n]) => sum + Number(n), 0);
      expect(await redis.zcard(dead.handOff)).toBe(1);
      expect(await redis.zscore(idleKey, 'counted-1')).toBeNull();
      expect(await redis.hget(idleArgsKey, 'counted-1')).toBeNull();
      // The add's one call and what it ran: BullMQ's add and fetch, the lease and the attempt's
      // start (25: a lone tenant's lease reads neither the pool's registrations nor its busy count,
      // nor the time, which the hand-off read; a job with no queued count writes none; BullMQ's
      // part through bull-quiet.ts: no events stream, no job counter, meta read and marker set
      // once, the look one EXISTS), and the hand-off's own five: the latest registration popped
      // (live, so no scan for expired ones), the time, its terms, their removal from the hash, the
      // push (c8c85cf: 42, the registration read and removed apart, the time read twice, BullMQ's
      // add and fetch whole). The fetch starts the job with one HSET (BullMQ: HMSET of processedOn,
      // HINCRBY of ats, HGETALL; e9f77c6: 30, one HGETALL and one HSET), so the one HMSET is the
      // add's, and the job it handed is read from that HMSET (66c64b5: 24, an HGETALL of the job
      // the add had just written). A first start writes no journal (23b3897: 29, its `#attempt`
      // HINCRBY and EXPIRE).
      expect(calls('evalsha')).toBe(1);
      expect(calls('hmset')).toBe(1);
      expect(calls('hincrby')).toBe(0);
      expect(calls('expire')).toBe(0);
      expect(calls('hgetall')).toBe(1); // the run record's (created apart, by newRun)
      expect(calls('zpopmax')).toBe(1);
      expect(calls('zrevrange')).toBe(0);
      expect(calls('time')).toBe(1);
      expect(calls('zremrangebyscore')).toBe(0);
      expect(calls('xadd')).toBe(1); // the run's own stream, not the queue's
      expect(calls('incr')).toBe(0);
      expect(calls('hmget')).toBe(1);
      // The base marker: its ZADD held while the hand-off may follow, and the queue drained by the
      // handed job, so the look behind it sends only its ZREM (b95bfd1: ZADD then ZREM); the
      // delayed and prioritized sets' absence read in the add's EXISTS, so the fetch's promotion
      // reads nothing (b95bfd1: a ZRANGEBYSCORE), and with the job the wait list's only one (its
      // LPUSH answered 1) the look behind it knows the queue drained (b95bfd1: a second EXISTS).
      // The three ZADDs: the lease's two, the hand-off's push.
      expect(calls('zadd')).toBe(3);
      expect(calls('zrem')).toBe(1);
      expect(calls('zrangebyscore')).toBe(0);
      expect(calls('exists')).toBe(1);
      // The job pushed once, onto active: the add's check found the wait list absent, so its LPUSH
      // to wait was held and the fetch's RPOPLPUSH answered with it (724a10f: LPUSH and RPOPLPUSH).
      expect(calls('lpush')).toBe(1);
      expect(calls('rpoplpush')).toBe(0);
      expect(all).toBe(22);
      expect(await redis.exists(`${prefix}wait`)).toBe(0);
      expect(await redis.lrange(`${prefix}active`, 0, -1)).toEqual(['n1']);
      expect(await redis.zscore(`${prefix}marker`, '0')).toBeNull();
      // The job hash as BullMQ's fetch leaves it: started once, by the worker named in the fetch.
      const job = await redis.hmget(`${prefix}n1`, 'ats', 'processedOn', 'pb');
      expect(job[0]).toBe('1');
      expect(Number(job[1])).toBeGreaterThan(0);
      // What the hand-off carries is the job as an HGETALL would read it: every field the hash
      // holds, with the values it holds (the hand-off's start patched in).
      const [, answer] = unpack(Buffer.from((await redis.zrangeBuffer(dead.handOff, 0, 0))[0] ?? [])) as [
        string,
        [string[]],
      ];
      expect(fieldsOf(answer[0])).toEqual(await redis.hgetall(`${prefix}n1`));
      second = await runStalled('counted2', q, 'n1', (r) => {
        second = r;
      });
      await redis.del(dead.handOff);
    } finally {
      await q.close();
      await second?.close();
      await first.close();
    }
  });

  it("a submit's admission carried in the add handed to an idle worker reads back neither the record nor the job it wrote", async () => {
    const t = await setUp('ride', true, undefined, { handOff: true });
    const queues = createRunQueueStore(redis, () => undefined, true);
    try {
      await warmUp(t, 'rw');
      await idle(t);
      const handOffs = t.worker().handOffs;
      const run = runFixture('ride1', { tenant: 'acme', mode, session: 's', principal: 'p' });
      const m = await monitor();
      let answer: unknown;
      try {
        // The gateway's submit (runs-service.ts): admission, record, queued count and the add in one call.
        answer = await createRunStore(redis, sealer).create(
          run,
          { maxInFlight: 100, sessionTtlSeconds: 6400, countQueued: true, carriesAdd: true },
          (_counted, ride) => queues.enqueueRun({ runId: run.id, tenant: 'acme', mode, attempts: 1 }, ride),
        );
        await until('ride1 to complete', async () => t.outcomes.length === 2);
      } finally {
        await m.stop();
      }
      expect(answer).toBe('created');
      // The submit's call and the commands it ran (up to the next call a client sent): the last
      // one sent (a first EVALSHA is answered NOSCRIPT and sent again as EVAL).
      const sent = new Set(m.sent);
      const at = m.seen.findLastIndex((c) => c[0]?.startsWith('eval') && c[3] === keys.inFlight('acme'));
      expect(at).toBeGreaterThanOrEqual(0);
      const next = m.seen.findIndex((c, i) => i > at && sent.has(c));
      const inner = m.seen.slice(at + 1, next < 0 ? undefined : next).map((c) => `${c[0]} ${c[1]}`);
      // It wrote the record and the job, handed the job over with the run started, and read
      // neither back: the start took the record the admission had just created, the fetch the job
      // the add had just written (66c64b5: an HGETALL of each).
      expect(inner).toContain(`hset ${keys.run(run.id)}`);
      expect(inner).toContain(`hmset ${prefix}${run.id}`);
      expect(inner.filter((c) => c.startsWith('zadd ') && c.includes(':handoff:'))).toHaveLength(1);
      expect(inner.filter((c) => c.startsWith('hgetall '))).toEqual([]);
      expect(t.worker().handOffs).toBe(handOffs + 1);
      expect(t.outcomes).toEqual(['completed 1', 'completed 1']);
      expect(await redis.hmget(keys.run(run.id), 'attempts', 'status')).toEqual(['1', 'Completed']);
      expect(await redis.hget(`${prefix}${run.id}`, 'ats')).toBe('1');
    } finally {
      await Promise.all(Object.values(queues.queues).map((q) => q.close()));
      await t.close();
    }
  });

  it("an add handing over an older job leaves its own waiting with the base marker set (held, then set at the script's end)", async () => {
    const first = await setUp('behind', true, undefined, { handOff: true });
    const q = handingQueue(redis);
    const plain = new Queue(runQueueName(mode), { connection: redis.duplicate(), prefix: QUEUE_PREFIX });
    let second: RunnerUnderTest | undefined;
    try {
      const dead = await deadRegistration(first, 'bw', 'behind-1');
      await newRun('b1');
      await newRun('b2');
      // An older job waiting (a stock add), its marker gone (consumed by a worker's wake-up).
      await addOn(plain, 'b1', 2);
      await redis.zrem(`${prefix}marker`, '0');
      await redis.config('RESETSTAT');
      await addOn(q, 'b2', 2);
      const stats = await redis.info('commandstats');
      // The fetch took the older job; the new one waits behind it, so the marker is set.
      expect(await redis.zcard(dead.handOff)).toBe(1);
      expect(await q.getJobState('b1')).toBe('active');
      expect(await q.getJobState('b2')).toBe('waiting');
      expect(await redis.zscore(`${prefix}marker`, '0')).toBe('0');
      expect(/cmdstat_zrem:/.test(stats)).toBe(false);
      // Its LPUSH answered 2: the look behind the handed job asks (the add's EXISTS, then its own).
      expect(/cmdstat_exists:calls=2,/.test(stats)).toBe(true);
      second = await runStalled('behind2', q, 'b1', (r) => {
        second = r;
      });
      await until('b2 to complete', async () => (await q.getJobState('b2')) === 'completed');
      await redis.del(dead.handOff);
    } finally {
      await plain.close();
      await q.close();
      await second?.close();
      await first.close();
    }
  });

  it('an add whose hand-off fetch finds no job (the queue paused) leaves the registration as it was', async () => {
    const first = await setUp('paused', true, undefined, { handOff: true });
    const q = handingQueue(redis);
    try {
      const dead = await deadRegistration(first, 'pw', 'paused-1');
      const score = await redis.zscore(idleKey, 'paused-1');
      const terms = await redis.hget(idleArgsKey, 'paused-1');
      await q.pause();
      await newRun('p1');
      const record = await redis.hgetall(keys.run('p1'));
      await addOn(q, 'p1');
      expect(await q.getJobState('p1')).toBe('waiting');
      expect(await redis.exists(dead.handOff)).toBe(0);
      expect(await redis.zscore(idleKey, 'paused-1')).toBe(score);
      expect(await redis.hget(idleArgsKey, 'paused-1')).toBe(terms);
      // No fetch, so no lease taken and no attempt begun.
      expect(await redis.hgetall(keys.run('p1'))).toEqual(record);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await redis.zrem(idleKey, 'paused-1');
      await redis.hdel(idleArgsKey, 'paused-1');
      await q.resume();
      await q.obliterate({ force: true });
      await q.close();
      await first.close();
    }
  });

  it('a worker closed while idle leaves no registration; a job added then waits for the next worker', async () => {
    const t = await setUp('closing', true, undefined, { handOff: true });
    const q = handingQueue(redis);
    let next: RunnerUnderTest | undefined;
    try {
      await warmUp(t, 'cw');
      await idle(t);
      const id = t.worker().id;
      await newRun('c1');
      // The add and the close race: the job was handed before the close (the worker popped and ran
      // it, or the close gave it back to the queue) or it waits for a worker; within this test's
      // wait, so never left under the closed worker's 30 s lock, and it runs once.
      await Promise.all([addOn(q, 'c1', 2), t.stop()]);
      expect(await redis.zscore(idleKey, id)).toBeNull();
      next = await setUp('closing2', true, undefined, {
        handOff: true,
        env: { ISLET_RUNNER_STALLED_INTERVAL_MS: '500', ISLET_RUNNER_LOCK_DURATION_MS: '1000' },
      });
      await until('c1 to complete', async () => (await redis.hget(keys.run('c1'), 'status')) === 'Completed');
      expect([...t.outcomes, ...next.outcomes].filter((o) => o.startsWith('completed')).length).toBe(2);
    } finally {
      await q.close();
      await next?.close();
      await t.close();
    }
  });

  it('a lease refused in the hand-off defers the job as the fused fetch would; it runs once the slot is back', async () => {
    const t = await setUp('refused', true, undefined, { handOff: true, slots: 1 });
    try {
      await warmUp(t, 'fw');
      await idle(t);
      // The pool's one slot held by another tenant's job, more of its work queued (acme is not
      // alone): acme's lease is refused.
      const fair = createFairShare({
        redis,
        logger,
        config: t.config,
        promote: async (_mode, jobId) => {
          await (await t.queue.getJob(jobId))?.promote();
          return true;
        },
      });
      expect((await fair.acquire(mode, 'other', 'x1')).ok).toBe(true);
      await redis.hset(keys.poolQueued(mode), 'other', '1');
      await newRun('d1');
      const before = t.worker().handOffs;
      await t.add('d1', 'acme', 2);
      await until('d1 to be deferred', async () => t.outcomes.includes('deferred'));
      expect(t.worker().handOffs).toBe(before + 1);
      expect((await t.queue.getJob('d1'))?.attemptsMade).toBe(0);
      expect(await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'd1')).not.toBeNull();
      expect(await redis.exists('islet:journal:{d1}')).toBe(0);
      // The slot back: the deferred job is promoted and runs, its first attempt.
      await fair.release(mode, 'other', 'x1');
      await until('d1 to complete', async () => (await redis.hget(keys.run('d1'), 'status')) === 'Completed');
      expect(t.outcomes.filter((o) => o.startsWith('completed'))).toEqual(['completed 1', 'completed 1']);
    } finally {
      await t.close();
    }
  });

  it('with the flag off the worker registers nothing and the pick-up is the fused fetch', async () => {
    const t = await setUp('off', true, undefined, { handOff: false });
    try {
      await warmUp(t, 'ow');
      await until('the worker blocked', async () => t.worker().drainedByFetch > 0);
      expect(await redis.exists(idleKey)).toBe(0);
      expect(t.worker().idleRegistrations).toBe(0);
      await newRun('o1');
      await t.add('o1');
      await until('o1 to complete', async () => t.outcomes.length === 2);
      expect(t.worker().handOffs).toBe(0);
    } finally {
      await t.close();
    }
  });
});
