/**
 * A fetch answered "later" (no slot free, one kept for a completion's next job) pauses before it
 * answers "no job", and BullMQ's loop starts the jobs it holds only after that answer. The pause
 * now ends as the completion's next job reaches the loop (handed-next.ts), not a whole turn of the
 * event loop later: under load that turn held each such slot idle ~1 ms a run, its next run already
 * started in Redis (test/bench/README.md, round 34 `slot-idle`). Asserted by order against a turn
 * of the event loop begun at the moment the slot is kept, never by a duration.
 */
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { backlog, deferrals, gate } from '../test/run-backlog.ts';
import { mode, onRunnerHarness, type RunnerUnderTest, until } from '../test/runner-harness.ts';
import { HandedNext } from './handed-next.ts';

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('HandedNext', () => {
  it('a pause ends as a next job is handed, before the turn of the event loop it began in', async () => {
    const h = new HandedNext();
    const order: string[] = [];
    setImmediate(() => order.push('turn'));
    const paused = h.pause().then(() => order.push('pause ended'));
    await Promise.resolve();
    h.hand('t1');
    await paused;
    expect(order).toEqual(['pause ended']);
    expect(h.endedByHand).toBe(1);
  });

  it('with nothing handed, a pause ends at the turn, as before', async () => {
    const h = new HandedNext();
    const order: string[] = [];
    setImmediate(() => order.push('turn before'));
    await h.pause().then(() => order.push('pause ended'));
    expect(order).toEqual(['turn before', 'pause ended']);
    expect(h.endedByHand).toBe(0);
    // A hand after the pause ended wakes nothing and leaves no waiter behind.
    h.hand('late');
    expect(h.endedByHand).toBe(0);
  });

  it('a job handed and not begun ends pauses at once, at most 8 in a row, then a turn again', async () => {
    const h = new HandedNext();
    h.hand('t1');
    let turns = 0;
    const counting = setInterval(() => undefined, 1_000); // keeps the loop alive; not asserted on
    const marks: number[] = [];
    for (let i = 0; i < 10; i++) {
      let turned = false;
      setImmediate(() => {
        turned = true;
        turns++;
      });
      await h.pause();
      marks.push(turned ? 1 : 0);
      await turn();
    }
    clearInterval(counting);
    // The 9th waits for its turn (no loop of promises only), then the count starts again.
    expect(marks).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1, 0]);
    expect(turns).toBe(10);
    // Begun: nothing is handed any more; a pause waits for its turn.
    h.begun('t1');
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    await h.pause();
    expect(turned).toBe(true);
  });
});

let redis: Redis;
const harness = onRunnerHarness('handed-next-test', (up) => {
  ({ redis } = up);
});

/**
 * Watches the worker's slot gate: at each slot kept for a completion's next job (`keep <n>`), a turn
 * of the event loop begins (`turn <n>` when it comes); each take of a slot by token is noted
 * (`take <token>`; a chain's jobs share their token). `takenBeforeTurn()`: for each keep, whether
 * the first take of its token after it came before its turn.
 */
function watchKeeps(t: RunnerUnderTest) {
  const gate = t.worker().gate;
  if (!gate) throw new Error('no slot gate');
  const order: string[] = [];
  const kept: string[] = [];
  const keepFor = gate.keepFor.bind(gate);
  gate.keepFor = (token) => {
    keepFor(token);
    const n = kept.push(token) - 1;
    order.push(`keep ${n}`);
    setImmediate(() => order.push(`turn ${n}`));
  };
  const take = gate.take.bind(gate);
  gate.take = (token) => {
    if (token !== undefined) order.push(`take ${token}`);
    return take(token);
  };
  // A reserved slot is taken in the processor's turn without `take` (run-processing.ts).
  const takeReserved = gate.takeReserved.bind(gate);
  gate.takeReserved = (token) => {
    const taken = takeReserved(token);
    if (taken) order.push(`take ${token}`);
    return taken;
  };
  const takenBeforeTurn = () =>
    kept.map((token, n) => {
      const from = order.indexOf(`keep ${n}`);
      const taken = order.indexOf(`take ${token}`, from);
      const turned = order.indexOf(`turn ${n}`, from);
      return taken >= 0 && (turned < 0 || taken < turned);
    });
  return { order, kept, takenBeforeTurn };
}

const workOrder = (t: RunnerUnderTest) =>
  t.outcomes.filter((o) => o.startsWith('work ')).map((o) => o.slice(5));

describe('a completion that started its next job (real Redis, BullMQ, the runner)', () => {
  it("the next job takes the kept slot before the event loop's next turn; in order, each once, leases back", async () => {
    const h = gate();
    const t = await harness.setUp('kept', true, undefined, {
      slots: 1,
      hold: h.held,
      noteEnds: true,
      onWork: (id) => t.outcomes.push(`work ${id}`),
    });
    try {
      await harness.warmUp(t, 'kw');
      const { kept, takenBeforeTurn } = watchKeeps(t);
      h.close();
      const ids = ['k1', 'k2', 'k3', 'k4'];
      await backlog(harness, redis, t, ids, 'acme');
      await until('k1 to start', async () => (await redis.hget(keys.run('k1'), 'status')) === 'Running');
      h.open();
      await until('the four to complete', async () => (await t.queue.getCompletedCount()) === 5);
      // k2, k3, k4 each started by the completion before it, its slot kept for it.
      expect(t.worker().completionStarts).toBe(3);
      expect(kept).toHaveLength(3);
      // Each next job took its slot before the turn of the event loop that began as its slot was
      // kept (the base: after it, the "later" fetch waiting for that turn first).
      expect(takenBeforeTurn()).toEqual([true, true, true]);
      expect(t.worker().handedNext.endedByHand).toBeGreaterThanOrEqual(3);
      expect(workOrder(t).filter((id) => id !== 'kw')).toEqual(ids);
      for (const id of ids) {
        expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
        expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
      }
      expect(t.outcomes.filter((o) => o.startsWith('ended'))).toEqual(Array(5).fill('ended true'));
      await until('no lease left', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
    } finally {
      await t.close();
    }
  });

  it("two tenants' backlogs under the fair share: each tenant's order, no attempt spent on a deferral, nothing lost", async () => {
    const h = gate();
    const t = await harness.setUp('two', true, undefined, {
      slots: 2,
      hold: h.held,
      noteEnds: true,
      onWork: (id) => t.outcomes.push(`work ${id}`),
      // Deferred jobs come back soon (the harness's default holds them a minute).
      env: { ISLET_TENANT_SHARE_RECHECK_MS: '50' },
    });
    try {
      await harness.warmUp(t, 'tw');
      h.close();
      const a = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'];
      const b = ['b1', 'b2', 'b3', 'b4', 'b5', 'b6'];
      await backlog(harness, redis, t, a, 'acme');
      await backlog(harness, redis, t, b, 'globex');
      await until('two runs held', async () => workOrder(t).filter((id) => id !== 'tw').length === 2);
      h.open();
      await until('every run to complete', async () => (await t.queue.getCompletedCount()) === 13);
      const worked = workOrder(t);
      expect(worked.filter((id) => /^a\d$/.test(id))).toEqual(a);
      expect(worked.filter((id) => /^b\d$/.test(id))).toEqual(b);
      for (const id of [...a, ...b]) {
        expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
        expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
      }
      expect(t.outcomes.filter((o) => o === 'completed 1')).toHaveLength(13);
      // Deferrals happened (the other tenant's queued jobs seen as demand), none spent an attempt.
      expect(await deferrals(t)).toBeGreaterThan(0);
      expect(t.outcomes).not.toContain('deferred');
      expect(t.worker().handedNext.endedByHand).toBeGreaterThan(0);
      await until('no lease left', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
    } finally {
      await t.close();
    }
  });
});
