/**
 * A closing runner takes no job, its own handed-back one included. The close's grace ends while a
 * run is held: the run is handed back (its job delayed 50 ms) while the worker's hand-off close is
 * still under way (the test holds it there, the timing undici's gateway client gave the e2e
 * handback test). BullMQ sets its `closing` only after that close; until then its loop (and a
 * failure's fetch-next) fetched again, took the job back once due and ran it to completion here.
 * Read from the executor's outcomes and the worker's counters, never from time. Real redis-server,
 * BullMQ, runner, fair share and run store.
 */
import { keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { handOffKeys } from '@islet/runs';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { mode, onRunnerHarness, type RunnerUnderTest, until } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('handback-close-test', (up) => {
  ({ redis } = up);
});
const idleKey = handOffKeys(`${QUEUE_PREFIX}:${runQueueName(mode)}:`, '').idle;

it('a run handed back while the worker closes goes back to the queue; the closing runner never takes it again', async () => {
  let release: () => void = () => undefined;
  const hold = new Promise<void>((r) => {
    release = r;
  });
  const starts: string[] = [];
  let next: RunnerUnderTest | undefined;
  const t = await h.setUp('hb', true, undefined, {
    handOff: true,
    hold,
    onWork: (id) => starts.push(id),
  });
  try {
    await h.newRun('hb1');
    await t.add('hb1');
    await until('hb1 to start', async () => starts.length === 1);
    const worker = t.worker();
    // A slot is free: the worker waits idle, registered for hand-offs.
    await until('the worker registered idle', async () => (await redis.zscore(idleKey, worker.id)) !== null);
    const counters = worker as unknown as { fetchesRefusedClosing?: number };
    const idle = (worker as unknown as { handOffWait: { close(): Promise<void> } }).handOffWait;
    const closeIdle = idle.close.bind(idle);
    // The hand-off's close is held until the hand-back is done and the worker either ran the job
    // again (the bug) or refused a fetch because it is closing (the fix).
    idle.close = async () => {
      await until('the hand-back', async () => t.outcomes.includes('handed back'));
      await until(
        'a second start or a refused fetch',
        async () => starts.length > 1 || (counters.fetchesRefusedClosing ?? 0) > 0,
      );
      release();
      return closeIdle();
    };
    await t.stop();
    expect(starts).toEqual(['hb1']);
    expect(t.outcomes).toEqual(['handed back']);
    expect(await redis.hget(keys.run('hb1'), 'status')).not.toBe('Completed');
    expect(['delayed', 'waiting']).toContain(await t.queue.getJobState('hb1'));
    // Another runner takes it and runs it to its end.
    next = await h.setUp('hb2', true);
    await until('hb1 to complete', async () => (await redis.hget(keys.run('hb1'), 'status')) === 'Completed');
    expect(next.outcomes.filter((o) => o.startsWith('completed'))).toHaveLength(1);
  } finally {
    release();
    await next?.close();
    await t.close();
  }
});

it('a run that ends while its worker closes brings no next job: its completion fetches nothing, the waiting job stays queued', async () => {
  let release: () => void = () => undefined;
  const hold = new Promise<void>((r) => {
    release = r;
  });
  const starts: string[] = [];
  const t = await h.setUp('hc', true, undefined, {
    handOff: true,
    slots: 1,
    hold,
    onWork: (id) => starts.push(id),
  });
  try {
    await h.newRun('hc1');
    await h.newRun('hc2');
    await t.add('hc1');
    await until('hc1 to start', async () => starts.length === 1);
    await t.add('hc2');
    const worker = t.worker();
    const idle = (worker as unknown as { handOffWait: { close(): Promise<void> } }).handOffWait;
    const closeIdle = idle.close.bind(idle);
    // The run ends inside the close's first step: its completion (the fused end, completion and
    // next start) goes while BullMQ's `closing` is not set yet.
    idle.close = async () => {
      release();
      await until('hc1 to complete', async () => (await t.queue.getJobState('hc1')) === 'completed');
      return closeIdle();
    };
    await t.stop();
    expect(starts).toEqual(['hc1']);
    expect(await t.queue.getJobState('hc2')).toBe('waiting');
    expect(worker.completionStarts).toBe(0);
    expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
  } finally {
    release();
    await t.close();
  }
});
