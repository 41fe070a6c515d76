/**
 * A job fetched without a slot kept for it waits in the slot gate, and the only thing that could
 * pass it over is a completion that starts its worker's next job (the ended run's slot kept for
 * that job). While anyone waits for a slot, a completion must fetch nothing, so the slot its run
 * frees goes to the one waiting longest (test/bench/README.md, round 33 `slot-bound`). Here the
 * route is a parked run coming back: a completion while it waits brought the next job without its
 * run's start (the freed slot is the parked run's), and that job then waited while every later job
 * passed from one completion to the next, until the queue drained.
 */
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { mode, onRunnerHarness, until } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('slot-bound-test', (up) => {
  ({ redis } = up);
});
const { newRun, setUp, warmUp } = h;

describe('a completion while a parked run waits to come back', () => {
  it('fetches nothing: the queued jobs start in their order, none waits in the gate or is passed over', async () => {
    let holdNext: Promise<void> | undefined;
    let parkP: Promise<void> | undefined;
    const at: string[] = [];
    const t = await setUp('bound', true, undefined, {
      slots: 1,
      noteEnds: true,
      // Taken by the first run that reads it: only `a` is held.
      get hold() {
        const held = holdNext;
        holdNext = undefined;
        return held;
      },
      parkFor: (runId) => (runId === 'p' ? parkP : undefined),
      onWork: (runId) => at.push(runId),
    });
    try {
      await warmUp(t, 'sw');
      const gate = t.worker().gate;
      if (!gate) throw new Error('no slot gate');
      let answerP: () => void = () => undefined;
      parkP = new Promise<void>((r) => {
        answerP = r;
      });
      await newRun('p');
      await t.add('p');
      // `p` parks (a binding call waiting): its slot goes back.
      await until('p parked', async () => gate.state().parkedWithIsolate === 1 && gate.state().busy === 0);
      let releaseA: () => void = () => undefined;
      holdNext = new Promise<void>((r) => {
        releaseA = r;
      });
      await newRun('a');
      await t.add('a');
      await until('a at work', async () => at.includes('a') && holdNext === undefined);
      // `p` is answered: it waits for the slot `a` holds.
      answerP();
      await until('p waiting to come back', async () => !gate.noResumeWaiting());
      for (const id of ['b', 'c', 'd']) await newRun(id);
      for (const id of ['b', 'c', 'd']) await t.add(id);

      releaseA();
      await until('every run to complete', async () => (await t.queue.getCompletedCount()) === 6);
      // The base: `a`'s completion brought `b` without a start, `b` waited behind `p`, then `p`'s
      // completion started `c` and kept its slot for it, `c`'s `d`: `b` ran last, once the queue drained.
      expect(at.slice(at.indexOf('a') + 1)).toEqual(['b', 'c', 'd']);
      expect(gate.waits()).toMatchObject({ waiting: 0, waited: 0, passedOver: 0 });
      for (const id of ['p', 'a', 'b', 'c', 'd']) {
        expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
        expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
      }
      expect(t.outcomes.filter((o) => o === 'completed 1')).toHaveLength(6);
      expect(t.outcomes.filter((o) => o.startsWith('ended'))).toEqual(Array(6).fill('ended true'));
      await until('no lease left', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
    } finally {
      await t.close();
    }
  });
});
