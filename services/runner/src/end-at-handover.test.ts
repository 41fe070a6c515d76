/**
 * A run's end fused with its job's completion goes to Redis as the end is handed over (the run
 * store's `finish`, through `RunLease.deferEnd` with the end's status), not once the processor has
 * returned and BullMQ's `processJob` tail, `handleCompleted` and `Job.moveToCompleted` have run:
 * BullMQ's own completion call comes after and gets that call's answer, sending nothing. Real
 * redis-server, BullMQ, fair share, run store, direct hand-off (a sequential client).
 */
import { keys } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { Scripts } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { onRunnerHarness, until, untilIdle } from '../test/runner-harness.ts';
import { isEndAndCompleteSha, isEndCompleteStartSha } from './end-complete-store.ts';

let redis: Redis;
const h = onRunnerHarness('end-at-handover-test', (up) => {
  ({ redis } = up);
});
const { monitor, newRun, setUp, warmUp } = h;

describe("a run's end and its job's completion, sent as the end is handed over", () => {
  it('goes before the processor returns and before BullMQ builds its completion; BullMQ sends nothing more; each run ended and completed once', async () => {
    // Spied before the worker binds it (its first end): what BullMQ's completion arguments cost.
    const built = vi.spyOn(Scripts.prototype, 'moveToCompletedArgs');
    const t = await setUp('handover', true, undefined, { handOff: true, noteEnds: true });
    const original = LuaScript.prototype.run;
    const run = vi.spyOn(LuaScript.prototype, 'run');
    try {
      await warmUp(t, 'hw');
      const worker = t.worker();
      // The order of what each run does, in one list with the executor's own notes (`completed 1`
      // once `finish` returned, `ended true` once the end's answer came).
      const log = t.outcomes;
      run.mockImplementation(function (this: LuaScript, ...a) {
        if (isEndAndCompleteSha(this.sha) || isEndCompleteStartSha(this.sha)) log.push('fused sent');
        return original.apply(this, a);
      });
      const handleCompleted = (
        worker as unknown as { handleCompleted: (...a: unknown[]) => Promise<unknown> }
      ).handleCompleted;
      Object.assign(worker, {
        handleCompleted(this: unknown, ...a: unknown[]) {
          log.push('handleCompleted');
          return handleCompleted.apply(this, a);
        },
      });
      const writer = (
        worker as unknown as { scripts: { completionArgs?: { writes: number; builds: number } } }
      ).scripts.completionArgs;
      const writesBefore = writer?.writes ?? 0;
      const fusedBefore = worker.fusedCompletions;
      const atEndBefore = worker.completionsAtEnd;
      const m = await monitor();
      const ids = ['e1', 'e2', 'e3'];
      try {
        for (const id of ids) {
          await untilIdle(redis, t);
          await newRun(id);
          log.length = 0;
          await t.add(id);
          await until(`${id} to end`, async () => log.includes('ended true'));
          await until(`${id} completed`, async () => (await t.queue.getJob(id))?.finishedOn !== undefined);
          // 4fc5afe: completed 1, handleCompleted, fused sent, ended true.
          expect(log).toEqual(['fused sent', 'completed 1', 'handleCompleted', 'ended true']);
        }
      } finally {
        await m.stop();
      }
      expect(worker.fusedCompletions - fusedBefore).toBe(3);
      expect(worker.completionsAtEnd - atEndBefore).toBe(3);
      for (const id of ids) {
        // One call wrote the end and the completion; no completion of BullMQ's own went for the job.
        const calls = m.sent.filter((c) => c[0] === 'evalsha' && c.includes(id));
        expect(calls.filter((c) => isEndAndCompleteSha(c[1]))).toHaveLength(1);
        expect(calls.filter((c) => c.includes('completed') && !isEndAndCompleteSha(c[1]))).toEqual([]);
        expect(await redis.hmget(keys.run(id), 'status', 'attempts')).toEqual(['Completed', '1']);
        const events = await redis.xrange(keys.runEvents(id), '-', '+');
        expect(events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end')).toHaveLength(1);
        // The job's return value is what its processor returned, as BullMQ's own completion stores it.
        const job = await t.queue.getJob(id);
        expect(job?.returnvalue).toBe('completed');
        expect(await job?.getState()).toBe('completed');
      }
      expect(await t.queue.getCompletedCount()).toBe(4);
      // Built once a run: BullMQ's own completion reuses the arguments sent (no second `pack`); by
      // the worker's writer, its fixed parts made once (completion-args.ts), not by BullMQ's
      // `moveToCompletedArgs` (eb0b0c0: once a run by it).
      expect((writer?.writes ?? 0) - writesBefore).toBe(3);
      expect(writer?.builds).toBe(1);
      for (const id of ids)
        expect(built.mock.calls.filter((c) => (c[0] as { id?: string }).id === id)).toHaveLength(0);
    } finally {
      built.mockRestore();
      run.mockRestore();
      await t.close();
    }
  });
});
