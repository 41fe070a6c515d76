/**
 * A running job's `stop` signal and the engine's handle beside it (`stopEngine`, what the executor
 * hands the engine) abort with a cancel request for its run, and with a hand-back at shutdown,
 * carrying that signal's reason, the engine's handle told first; other runs' stay as they are. The shutdown grace counts from the stop request, also while a recovery pass the
 * close waits for is in flight (held open here past the grace: the run is handed back as the pass
 * ends, not a grace later; timers read in their firing order, never a duration). Real runner, real
 * redis-server, an executor that waits for its signals.
 */
import { channels, createLogger, createMetrics, createRedis } from '@islet/core';
import { describe, expect, it } from 'vitest';
import { until } from '../test/runner-harness.ts';
import { addRun, runnerServer } from '../test/runner-server.ts';
import { type ExecuteJob, HandBackError } from './run-executor.ts';
import { createRunner } from './runner.ts';

const server = runnerServer();

describe('runner: a job stop signal', () => {
  it('aborts with a cancel of its run and with a hand-back, with their reasons', async () => {
    const config = server.config({
      ISLET_RUNNER_CONCURRENCY: '2',
    });
    const jobs = new Map<string, ExecuteJob>();
    const told: string[] = [];
    const runner = createRunner({
      config,
      executor: {
        execute: (job) => {
          jobs.set(job.runId, job);
          // The engine's handle is told before the stop signal's listeners, as the engine's
          // listener on `stop` was before it had the handle.
          job.stopEngine?.listen(() => told.push(`engine ${job.runId} stop=${job.stop?.aborted}`));
          // Ends when its stop aborts, as an execution does: cancelled, or handed back.
          return new Promise((resolve) =>
            job.stop?.addEventListener('abort', () =>
              resolve(job.cancel.aborted ? 'cancelled' : 'completed'),
            ),
          );
        },
        giveUp: async () => undefined,
        head: async () => null,
      },
      metrics: createMetrics({ component: 'runner-stop-signal-test', defaults: false }),
      logger: createLogger({ name: 'runner-stop-signal-test', level: 'silent' }),
    });
    const queue = server.queue();
    const publisher = createRedis(server.url());
    let closed = false;
    try {
      await runner.start();
      for (const id of ['s1', 's2']) await addRun(queue, id);
      await until('both jobs to run', () => jobs.size === 2);
      const [s1, s2] = [jobs.get('s1')!, jobs.get('s2')!];
      expect(s1.stop?.aborted).toBe(false);

      await publisher.publish(channels.cancel, 's1');
      await until('s1 to stop', () => s1.stop?.aborted === true);
      expect(s1.cancel.aborted).toBe(true);
      expect(s1.handBack.aborted).toBe(false);
      expect(s1.stop?.reason).toBe(s1.cancel.reason);
      expect(s2.stop?.aborted).toBe(false);
      // The engine's handle (what the executor gives the engine instead of `stop`) with it.
      expect(s1.stopEngine?.aborted).toBe(true);
      expect(s1.stopEngine?.reason).toBe(s1.cancel.reason);
      expect(s2.stopEngine?.aborted).toBe(false);
      expect(told).toEqual(['engine s1 stop=false']);

      // Shutdown with no grace left: s2 is handed back.
      await runner.close(0);
      closed = true;
      expect(s2.handBack.aborted).toBe(true);
      expect(s2.cancel.aborted).toBe(false);
      expect(s2.stop?.aborted).toBe(true);
      expect(s2.stop?.reason).toBe(s2.handBack.reason);
      expect(s2.stopEngine?.aborted).toBe(true);
      expect(s2.stopEngine?.reason).toBe(s2.handBack.reason);
      expect(told).toEqual(['engine s1 stop=false', 'engine s2 stop=false']);
    } finally {
      if (!closed) await runner.close(0).catch(() => undefined);
      publisher.disconnect();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
  });

  it('the shutdown grace counts from the stop request, a recovery pass still in flight included', async () => {
    const config = server.config({
      ISLET_RUNNER_CONCURRENCY: '2',
      ISLET_RUNNER_STALLED_INTERVAL_MS: '500',
    });
    const jobs = new Map<string, ExecuteJob>();
    // The recovery pass reads the head of a failed job's run: held open here until `open`.
    let heads = 0;
    let open: () => void = () => undefined;
    const pass = new Promise<void>((r) => {
      open = r;
    });
    const runner = createRunner({
      config,
      executor: {
        execute: async (job) => {
          if (job.runId === 'f1') throw new Error('fails for good: its run is for the recovery pass');
          jobs.set(job.runId, job);
          // Handed back as the real executor hands a run back (the job returns to the queue).
          return new Promise((resolve, reject) =>
            job.stop?.addEventListener('abort', () =>
              job.handBack.aborted ? reject(new HandBackError('handed back')) : resolve('cancelled'),
            ),
          );
        },
        giveUp: async () => undefined,
        head: async (runId) => {
          if (runId === 'f1') {
            heads++;
            await pass;
          }
          return null;
        },
      },
      metrics: createMetrics({ component: 'runner-stop-signal-test', defaults: false }),
      logger: createLogger({ name: 'runner-stop-signal-test', level: 'silent' }),
    });
    const queue = server.queue();
    let closed = false;
    try {
      await runner.start();
      await addRun(queue, 'r1');
      await until('r1 to run', () => jobs.has('r1'));
      await addRun(queue, 'f1');
      // Two reads of f1's head held: the worker's own `failed` reconcile makes at most one, so a
      // pass of the loop (what the close waits for) is in flight.
      await until('a recovery pass to be held', () => heads >= 2);
      const graceMs = 300;
      const closing = runner.close(graceMs).then(() => {
        closed = true;
      });
      // The pass ends only after the grace is over: this timer, set after the close's own with the
      // same delay, fires after it. Then the run must be handed back at once: by the time a second
      // grace set now is over (the timer the close set when it counted from after the pass) it was.
      const handedBackBeforeASecondGrace = new Promise<boolean>((resolve) =>
        setTimeout(() => {
          open();
          setTimeout(() => resolve(jobs.get('r1')?.handBack.aborted === true), graceMs);
        }, graceMs),
      );
      expect(await handedBackBeforeASecondGrace).toBe(true);
      await closing;
      expect(jobs.get('r1')?.cancel.aborted).toBe(false);
      expect(['delayed', 'waiting']).toContain(await queue.getJobState('r1'));
    } finally {
      open();
      if (!closed) await runner.close(0).catch(() => undefined);
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
  });
});
