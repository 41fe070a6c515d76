/**
 * On one server a completion that brings its worker's next job (BullMQ's fetch-next) also starts
 * that job's run: the run's end, BullMQ's completion, the next job's lease and its attempt start are
 * one script call (end-complete-store.ts, `endCompleteStartScript`), and the ended run's slot is
 * kept for that job. A lease refused there defers the job without spending an attempt; a tenant's
 * own order and another tenant's turn are kept; a job leased this way whose runner dies is taken
 * back and its run ends once. Real redis-server, real BullMQ, real fair share, run store and
 * journal; calls read from MONITOR (hashes, keys, order), never from time.
 */
import { keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { backlog, commandStats, deferrals, gate } from '../test/run-backlog.ts';
import { mode, onRunnerHarness, type RunnerUnderTest, until } from '../test/runner-harness.ts';
import { isEndCompleteStartSha } from './end-complete-store.ts';
import { createFairShare } from './fair-share.ts';

let redis: Redis;
const h = onRunnerHarness('completion-start-test', (up) => {
  ({ redis } = up);
});
const { logger, monitor, setUp, warmUp } = h;

/** Script calls taking a lease apart from a fetch or a completion: lease-and-begin-9, lease-acquire-6. */
const apartLeases = (sent: string[][]) =>
  sent.filter((c) => c[0] === 'evalsha' && c[3] === keys.poolSlots(mode) && (c[2] === '9' || c[2] === '6'));
const fusedStarts = (sent: string[][]) =>
  sent.filter((c) => c[0] === 'evalsha' && isEndCompleteStartSha(c[1])).length;
/** The order in which runs' work began (the harness's executor ECHOes it). */
const workOrder = (seen: string[][]) =>
  seen.filter((c) => c[0] === 'echo' && c[1]?.startsWith('work ')).map((c) => c[1]?.split(' ')[1]);

/** The end events of a run's stream. */
async function endEvents(runId: string): Promise<number> {
  const events = await redis.xrange(keys.runEvents(runId), '-', '+');
  return events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end').length;
}

/** What the executor told of each run, the ends' own notes left out. */
const told = (t: RunnerUnderTest) => t.outcomes.filter((o) => !o.startsWith('ended'));

/** Where MONITOR listed `commandStats()`'s INFO calls in `seen`. */
function statsReads(seen: string[][]): number[] {
  return seen.flatMap((c, i) => (c[0] === 'info' && c[1] === 'commandstats' ? [i] : []));
}

/**
 * After `t`'s warm-up (runs named `warm`), `ids` (four) queued behind the closed gate `g`, the first
 * held at its work; then let through under MONITOR, between two INFO commandstats. What MONITOR
 * saw, the two counts and the commands MONITOR listed between the two INFOs.
 */
async function countedBacklog(t: RunnerUnderTest, g: ReturnType<typeof gate>, warm: string, ids: string[]) {
  const first = ids[0] as string;
  await warmUp(t, warm);
  g.close();
  await backlog(h, redis, t, ids);
  await until(`${first} to start`, async () => (await redis.hget(keys.run(first), 'status')) === 'Running');
  const m = await monitor();
  const before = await commandStats(redis);
  let after: Map<string, number>;
  try {
    g.open();
    await until('the four to complete', async () => (await t.queue.getCompletedCount()) === ids.length + 1);
    after = await commandStats(redis);
    // MONITOR lists each INFO where Redis ran it: the counts are compared over exactly the
    // commands between the two (a background command outside them once read 4 against 2).
    await until('MONITOR to list the second INFO', async () => statsReads(m.seen).length === 2);
  } finally {
    await m.stop();
  }
  const [from, to] = statsReads(m.seen);
  return { m, before, after, inStats: m.seen.slice(from, to) };
}

describe("a completion that starts its next job's run (one server)", () => {
  it('with a backlog, each next job starts in the completion: no lease or start script of its own', async () => {
    const g = gate();
    const t = await setUp('backlog', true, undefined, { slots: 1, hold: g.held, noteEnds: true });
    try {
      await warmUp(t, 'bw');
      g.close();
      const m = await monitor();
      try {
        await backlog(h, redis, t, ['c1', 'c2', 'c3', 'c4']);
        await until('c1 to start', async () => (await redis.hget(keys.run('c1'), 'status')) === 'Running');
        g.open();
        await until('the four to complete', async () => (await t.queue.getCompletedCount()) === 5);
      } finally {
        await m.stop();
      }
      // c1 came with the fused fetch; c2, c3, c4 each with the completion before it.
      expect(fusedStarts(m.sent)).toBeGreaterThanOrEqual(3);
      expect(t.worker().completionStarts).toBe(3);
      expect(apartLeases(m.sent)).toEqual([]);
      expect(workOrder(m.seen)).toEqual(['c1', 'c2', 'c3', 'c4']);
      expect(told(t).slice(1)).toEqual(['completed 1', 'completed 1', 'completed 1', 'completed 1']);
      expect(await deferrals(t)).toBe(0);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
      expect(await redis.zcard(keys.poolTenantLeases(mode, 'acme'))).toBe(0);
      // Each job started and completed once, its hash as BullMQ's scripts leave it, with no
      // HINCRBY of its own (bull-quiet.ts: the start's `ats` and the completion's `atm` ride in
      // one HSET each; e9f77c6 sent 2 a job) and no HMSET but its add's.
      for (const id of ['c1', 'c2', 'c3', 'c4']) {
        const jobKey = `${QUEUE_PREFIX}:${runQueueName(mode)}:${id}`;
        const onJob = (name: string) => m.seen.filter((c) => c[0] === name && c[1] === jobKey).length;
        expect([onJob('hincrby'), onJob('hmset')]).toEqual([0, 1]);
        const job = await redis.hgetall(jobKey);
        expect([job.ats, job.atm]).toEqual(['1', '1']);
        expect(Number(job.processedOn)).toBeGreaterThan(0);
        expect(Number(job.finishedOn)).toBeGreaterThanOrEqual(Number(job.processedOn));
        expect(job.returnvalue).toBeDefined();
      }
    } finally {
      await t.close();
    }
  });

  it("the end's release reads the pool's waiting list and the next job's acquire does not read it again (INFO commandstats)", async () => {
    const g = gate();
    const t = await setUp('waiting-once', true, undefined, { slots: 1, hold: g.held, noteEnds: true });
    const waiting = keys.poolWaiting(mode);
    const onWaiting = (seen: string[][], name: string) =>
      seen.filter((c) => c[0] === name && c[1] === waiting).length;
    try {
      const { m, before, after, inStats } = await countedBacklog(t, g, 'ww', ['w1', 'w2', 'w3', 'w4']);
      // w2, w3 and w4 each came with the completion of the run before; four ends gave their leases back.
      expect(t.worker().completionStarts).toBe(3);
      // Each release asked the waiting list with the completion's absent keys and the wait list (named
      // seven times), in one EXISTS (b95bfd1: a ZCARD of the list, then the completion's own EXISTS
      // of five).
      expect(onWaiting(m.seen, 'zcard')).toBe(0);
      const asked = m.seen.filter((c) => c[0] === 'exists' && c[1] === waiting);
      expect(asked.length).toBe(4);
      const wait = `${QUEUE_PREFIX}:${runQueueName(mode)}:wait`;
      for (const c of asked) {
        expect(c.slice(2, 4).map((k) => k.split(':').at(-1))).toEqual(['dependencies', 'unsuccessful']);
        expect(c.slice(7)).toEqual(Array(7).fill(wait));
      }
      // The next fetches popped w2, w3, w4 from the wait list; the last completion found it empty in
      // that EXISTS and sent no RPOPLPUSH (b95bfd1: four).
      expect(m.seen.filter((c) => c[0] === 'rpoplpush' && c[1] === wait).length).toBe(3);
      expect(m.seen.filter((c) => c[0] === 'exists').length).toBe(4);
      expect((after.get('zcard') ?? 0) - (before.get('zcard') ?? 0)).toBe(
        inStats.filter((c) => c[0] === 'zcard').length,
      );
      // The three starts in the completions read no waiting list (2533efc..c8c85cf: one ZRANGE each).
      expect(onWaiting(m.seen, 'zrange')).toBe(0);
      // Redis's own count agrees: each start read only its tenant's leases.
      const zrangeLeases = m.seen.filter(
        (c) => c[0] === 'zrange' && c[1] === keys.poolTenantLeases(mode, 'acme'),
      );
      expect(zrangeLeases.length).toBe(3);
      expect((after.get('zrange') ?? 0) - (before.get('zrange') ?? 0)).toBe(
        inStats.filter((c) => c[0] === 'zrange').length,
      );
      expect(workOrder(m.seen)).toEqual(['w2', 'w3', 'w4']);
      expect(await deferrals(t)).toBe(0);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('a completion that starts the next run reads no TIME, its job once and its lock by one GETDEL (INFO commandstats)', async () => {
    const g = gate();
    const t = await setUp('fused-cmds', true, undefined, { slots: 1, hold: g.held, noteEnds: true });
    try {
      const { m, before, after, inStats } = await countedBacklog(t, g, 'fw', ['f1', 'f2', 'f3', 'f4']);
      const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
      const seenOf = (name: string) => inStats.filter((c) => c[0] === name).length;
      // Each fused call with the commands it ran (MONITOR lists a script's own after its call).
      const sent = new Set(m.sent);
      const calls: string[][][] = [];
      for (const c of m.seen) {
        if (sent.has(c)) calls.push([c]);
        else calls[calls.length - 1]?.push(c);
      }
      const fused = calls.filter((c) => c[0]?.[0] === 'evalsha' && isEndCompleteStartSha(c[0][1]));
      expect(t.worker().completionStarts).toBe(3);
      const starting = fused.filter((c) => c.some(([n, k]) => n === 'zadd' && k === keys.poolBusy(mode)));
      expect(starting.length).toBe(3);
      for (const call of starting) {
        const inner = call.slice(1);
        // The next job's lease takes the time the run's end stamped on its event (ff4c7cc: a TIME).
        expect(inner.filter(([n]) => n === 'time')).toEqual([]);
        const endEvent = inner.find(([n, k]) => n === 'xadd' && k?.startsWith('islet:run:'));
        const endId = (await redis.xrange(endEvent?.[1] ?? '', '-', '+')).at(-1)?.[0] ?? '';
        const lease = inner.find(([n, k]) => n === 'zadd' && k === keys.poolBusy(mode));
        expect(Number(lease?.[2]) - Number(endId.split('-')[0])).toBe(t.config.ISLET_TENANT_SHARE_LEASE_MS);
        // The completed job: read by one HMGET (ff4c7cc: EXISTS, then HMGET), its lock by GETDEL
        // (ff4c7cc: GET, then DEL); the one EXISTS left is the absent keys' probe.
        const jobKey = inner.find(([n]) => n === 'lrem')?.[3] ?? '';
        const onJob = inner.filter(([, k]) => k === `${QUEUE_PREFIX}:${runQueueName(mode)}:${jobKey}`);
        expect(onJob.map(([n]) => n)).toEqual(['hmget', 'hset']);
        const onLock = inner.filter(([, k]) => k?.endsWith(`:${jobKey}:lock`));
        expect(onLock.map(([n]) => n)).toEqual(['getdel']);
        // ... asked with the pool's waiting list (b95bfd1: its ZCARD, then the probe).
        expect(inner.filter(([n]) => n === 'exists').map(([, k]) => k)).toEqual([keys.poolWaiting(mode)]);
        expect(inner.filter(([n]) => n === 'zcard')).toEqual([]);
      }
      // Redis's own counts agree with what MONITOR saw: no TIME, GET or job EXISTS hidden anywhere.
      for (const name of ['time', 'get', 'getdel', 'exists', 'del', 'zcard'])
        expect(delta(name)).toBe(seenOf(name));
      expect(delta('getdel')).toBeGreaterThanOrEqual(4);
      expect(workOrder(m.seen)).toEqual(['f2', 'f3', 'f4']);
      for (const id of ['f1', 'f2', 'f3', 'f4']) {
        const job = await t.queue.getJob(id);
        expect(await job?.getState()).toBe('completed');
        expect(job?.attemptsMade).toBe(1);
        expect(await redis.exists(`${QUEUE_PREFIX}:${runQueueName(mode)}:${id}:lock`)).toBe(0);
      }
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('a completion whose lock another worker holds (the job stalled and was taken again) leaves that lock, its token, and a live expiry', async () => {
    const g = gate();
    const t = await setUp('lock-kept', true, undefined, { slots: 1, hold: g.held, noteEnds: true });
    const lock = `${QUEUE_PREFIX}:${runQueueName(mode)}:k1:lock`;
    try {
      await warmUp(t, 'kw');
      g.close();
      await backlog(h, redis, t, ['k1']);
      await until('k1 to start', async () => (await redis.hget(keys.run('k1'), 'status')) === 'Running');
      // Another worker's lock, as a stalled job's fetch by another runner sets it.
      await redis.set(lock, 'another-worker:1', 'PX', 600_000);
      const m = await monitor();
      g.open();
      await until('k1 to end', async () => (await redis.hget(keys.run('k1'), 'status')) === 'Completed');
      await until(
        'the completion to be refused',
        async () =>
          (await redis.zscore(`${QUEUE_PREFIX}:${runQueueName(mode)}:completed`, 'k1')) === null &&
          (await redis.lpos(`${QUEUE_PREFIX}:${runQueueName(mode)}:active`, 'k1')) !== null &&
          t.outcomes.includes('completed 1'),
      );
      await m.stop();
      expect(await redis.get(lock)).toBe('another-worker:1');
      expect(await redis.pttl(lock)).toBeGreaterThan(0);
      // Taken by the completion's GETDEL and put back at once, with its token (bull-quiet.ts).
      // (the test's own GETs, a MONITOR line late, left out)
      const onLock = m.seen
        .filter((c) => c[1] === lock && c[0] !== 'get')
        .map((c) => c.slice(0, 3).join(' '));
      expect(onLock).toEqual(['getdel ' + lock, `set ${lock} another-worker:1`]);
      expect(await (await t.queue.getJob('k1'))?.getState()).toBe('active');
    } finally {
      await redis.del(lock);
      await t.close();
    }
  });

  it('a lease refused in the completion defers the job, no attempt spent; it runs once the slot frees', async () => {
    const g = gate();
    const t = await setUp('refused', true, undefined, { slots: 1, hold: g.held, noteEnds: true });
    // The slot freed by another tenant's lease goes to the deferred job, promoted here.
    const fair = createFairShare({
      redis,
      logger,
      config: t.config,
      promote: async (_m, jobId) => {
        await (await t.queue.getJob(jobId))?.promote();
        return true;
      },
    });
    try {
      await warmUp(t, 'rw');
      g.close();
      await backlog(h, redis, t, ['r1', 'r2']);
      await until('r1 to start', async () => (await redis.hget(keys.run('r1'), 'status')) === 'Running');
      // Another runner's lease (tenant other, with more work queued: acme is not alone) fills the
      // pool's one slot once r1's is given back.
      const until30s = Number((await redis.time())[0]) * 1000 + 30_000;
      await redis.zadd(keys.poolTenantLeases(mode, 'other'), until30s, 'ghost');
      await redis.zadd(keys.poolBusy(mode), until30s, 'ghost');
      await redis.hset(keys.poolQueued(mode), 'other', '1');
      const record = await redis.hgetall(keys.run('r2'));
      const m = await monitor();
      try {
        g.open();
        await until('r2 to be deferred', async () => (await t.queue.getDelayedCount()) === 1);
      } finally {
        await m.stop();
      }
      expect(fusedStarts(m.sent)).toBe(1);
      expect(apartLeases(m.sent)).toEqual([]);
      expect((await t.queue.getJob('r2'))?.attemptsMade).toBe(0);
      expect(await redis.hgetall(keys.run('r2'))).toEqual(record);
      expect(await redis.exists('islet:journal:{r2}')).toBe(0);
      expect(await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'r2')).not.toBeNull();
      expect(await redis.zscore(keys.poolTenantLeases(mode, 'acme'), 'r2')).toBeNull();
      expect(await deferrals(t)).toBe(1);
      // The other tenant's lease given back: r2 gets the slot and runs, at its first attempt.
      await fair.release(mode, 'other', 'ghost');
      await until('r2 to complete', async () => (await t.queue.getJobState('r2')) === 'completed');
      // r2 never reached the processor: the completion's own script moved it to delayed (round 26,
      // `fair-fetch`; before, the processor was handed it and deferred it: 'deferred' here).
      expect(told(t).slice(1)).toEqual(['completed 1', 'completed 1']);
      expect(await redis.hget(keys.run('r2'), 'attempts')).toBe('1');
      await until('no lease left', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
    } finally {
      await fair.close();
      await t.close();
    }
  });

  it("another tenant's job takes its turn while a flood's next jobs come with completions; the flood keeps its order", async () => {
    const g = gate();
    const t = await setUp('turns', true, undefined, { slots: 2, hold: g.held, noteEnds: true });
    try {
      await warmUp(t, 'tw');
      g.close();
      const m = await monitor();
      try {
        await backlog(h, redis, t, ['a1', 'a2', 'a3', 'a4', 'a5']);
        await until('a1 and a2 to start', async () => (await redis.zcard(keys.poolBusy(mode))) === 2);
        // A quiet tenant's job, queued behind the flood.
        await backlog(h, redis, t, ['b1'], 'beta');
        g.open();
        await until('all six to complete', async () => (await t.queue.getCompletedCount()) === 7);
      } finally {
        await m.stop();
      }
      const order = workOrder(m.seen);
      // The flood in its own order; the quiet tenant's job before the flood's last three.
      expect(order.filter((id) => id?.startsWith('a'))).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
      expect(order.indexOf('b1')).toBeLessThan(order.indexOf('a3'));
      expect(fusedStarts(m.sent)).toBeGreaterThanOrEqual(1);
      expect(apartLeases(m.sent)).toEqual([]);
      // Deferrals (the share's work) spent no attempt.
      expect(t.outcomes.filter((o) => o.startsWith('completed'))).toEqual(Array(7).fill('completed 1'));
      await until('no lease left', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
    } finally {
      await t.close();
    }
  });
  it('a runner killed holding a job its completion leased and started: taken back as stalled, its run ends once', async () => {
    const g = gate();
    const first = await setUp('killed', true, undefined, {
      slots: 1,
      hold: g.held,
      noteEnds: true,
      // Its stalled checks as often as the taker's: BullMQ runs one check per interval per queue.
      env: { ISLET_RUNNER_LOCK_DURATION_MS: '1000', ISLET_RUNNER_STALLED_INTERVAL_MS: '500' },
    });
    let second: RunnerUnderTest | undefined;
    try {
      await warmUp(first, 'kw');
      g.close();
      await backlog(h, redis, first, ['k1', 'k2']);
      await until('k1 at its hold', async () => g.waiting() === 1);
      // k1 goes on; k2, brought and started by k1's completion, is held at its work.
      g.open();
      g.close();
      await until('k2 started by the completion', async () => first.worker().completionStarts === 1);
      await until('k2 to start', async () => (await redis.hget(keys.run('k2'), 'attempts')) === '1');
      expect(await redis.zscore(keys.poolTenantLeases(mode, 'acme'), 'k2')).not.toBeNull();
      // The runner dies: its worker's connection gone, no lock renewed, k2 never finished there.
      await first.worker().close(true);
      second = await setUp('killed2', true, undefined, {
        noteEnds: true,
        env: { ISLET_RUNNER_STALLED_INTERVAL_MS: '500' },
      });
      const taker = second;
      await until('k2 to complete', async () => (await taker.queue.getJobState('k2')) === 'completed');
      expect(told(taker)).toEqual(['completed 2']);
      expect(await redis.hget(keys.run('k2'), 'status')).toBe('Completed');
      expect(await redis.hget(keys.run('k2'), 'attempts')).toBe('2');
      await until('no lease left', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
      // The dead runner's attempt, let go now, writes no second end.
      g.open();
      await until('the dead attempt to return', async () => told(first).length === 3);
      expect(await endEvents('k2')).toBe(1);
      expect(await redis.hget(keys.run('k2'), 'status')).toBe('Completed');
    } finally {
      g.open();
      await second?.close();
      await first.close();
    }
  });
});
