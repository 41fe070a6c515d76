/**
 * A parked run coming back goes on without waiting for its lease's take-back (`RECLAIM`, which is
 * never refused: run-slot.ts), and whatever gives the lease back afterwards waits for it: the run's
 * end script (the executor), and a release after the executor (a hand-back at shutdown; tenant-slot.ts).
 * A reclaim landing after the lease was given back would leave it held (the heartbeat renews what
 * it reclaimed), counted against the tenant and the pool. Real redis-server, BullMQ, run store and
 * fair share; the take-back held by the test, the order read from the calls (no clock).
 */
import { createLogger, createMetrics, keys } from '@islet/core';
import type { Engine, RunOutcome } from '@islet/engine';
import { createCallJournal, createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { completed } from '../test/executor-fakes.ts';
import { mode, onRunnerHarness, until } from '../test/runner-harness.ts';
import { createFairShare } from './fair-share.ts';
import type { GatewayClient } from './gateway-client.ts';
import { createRunExecutor } from './run-executor.ts';

let redis: Redis;
const h = onRunnerHarness('resume-lease-test', (up) => {
  ({ redis } = up);
});

const tick = () => new Promise((r) => setImmediate(r));

/**
 * The real fair share, noting `jobId`'s releases and reclaims; each reclaim waits for `open()`, and
 * with `holdRelease` the park's release too (sent at once, its answer held back: in flight).
 * `released()` counts `jobId`'s releases answered (not in `log`, whose order the tests assert).
 */
function heldReclaims(log: string[], jobId: string, holdRelease = false) {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  let releases = 0;
  let answered = 0;
  const createShare = (d: Parameters<typeof createFairShare>[0]) => {
    const real = createFairShare(d);
    return {
      ...real,
      release: async (...args: Parameters<typeof real.release>) => {
        if (args[2] !== jobId) return real.release(...args);
        log.push('release asked');
        const sent = real.release(...args);
        if (holdRelease && ++releases === 1) await gate;
        await sent;
        answered++;
        if (holdRelease) log.push('release answered');
      },
      reclaim: async (...args: Parameters<typeof real.reclaim>) => {
        log.push('reclaim asked');
        await gate;
        await real.reclaim(...args);
        log.push('reclaim landed');
      },
    };
  };
  return { createShare, open: () => open(), released: () => answered };
}

/** Whether `jobId` still holds a lease of `tenant` or a busy slot of the pool. */
async function leaseHeld(jobId: string, tenant = 'acme'): Promise<boolean> {
  const [lease, busy] = await Promise.all([
    redis.zscore(keys.poolTenantLeases(mode, tenant), jobId),
    redis.zscore(keys.poolBusy(mode), jobId),
  ]);
  return lease !== null || busy !== null;
}

describe('a parked run resumed, its take-back not answered yet', () => {
  it('goes on at once; its end is written after the take-back landed, and no lease is left', async () => {
    const log: string[] = [];
    const held = heldReclaims(log, 'r');
    let answerR: () => void = () => undefined;
    const parkR = new Promise<void>((r) => {
      answerR = r;
    });
    let watching = false;
    const t = await h.setUp('resumed', true, undefined, {
      slots: 1,
      createShare: held.createShare,
      parkFor: (runId) => (runId === 'r' ? parkR : undefined),
      // Read by the harness's executor right after the resume: the program going on.
      get hold() {
        if (watching) log.push('went on');
        return undefined;
      },
    });
    try {
      await h.warmUp(t, 'warm-r');
      const gate = t.worker().gate;
      if (!gate) throw new Error('no slot gate');
      watching = true;
      await h.newRun('r');
      await t.add('r');
      await until('r parked', async () => gate.state().parkedWithIsolate === 1);
      // The park's release answered before r comes back: the reclaim is then sent at the resume. Not
      // waited for (a loaded box: Redis answering after r had gone on and ended), the reclaim was
      // still queued behind the release at r's end and never sent, as the next test has it.
      await until('the park release of r answered', () => held.released() === 1);
      answerR();
      await until('the take-back asked', async () => log.includes('reclaim asked'));
      await tick();
      // 9ec25e04: the resume awaited the take-back, so nothing went on here.
      expect(log).toEqual(['release asked', 'reclaim asked', 'went on']);
      expect(await redis.hget(keys.run('r'), 'status')).toBe('Running');
      held.open();
      await until('r to complete', async () => (await redis.hget(keys.run('r'), 'status')) === 'Completed');
      expect(log).toEqual(['release asked', 'reclaim asked', 'went on', 'reclaim landed']);
      expect(await leaseHeld('r')).toBe(false);
    } finally {
      held.open();
      await t.close();
    }
  });

  it('ending before the park release answered: the reclaim is never sent, the end goes at once and carries the release', async () => {
    const log: string[] = [];
    const held = heldReclaims(log, 'd', true);
    let answerD: () => void = () => undefined;
    const parkD = new Promise<void>((r) => {
      answerD = r;
    });
    const t = await h.setUp('dropped', true, undefined, {
      slots: 1,
      noteEnds: true,
      createShare: held.createShare,
      parkFor: (runId) => (runId === 'd' ? parkD : undefined),
    });
    try {
      await h.warmUp(t, 'warm-d');
      const worker = t.worker();
      const gate = worker.gate;
      if (!gate) throw new Error('no slot gate');
      const fused = worker.fusedCompletions;
      await h.newRun('d');
      await t.add('d');
      await until('d parked', async () => gate.state().parkedWithIsolate === 1);
      answerD();
      // 9ec25e04: the resume waited for the release's answer, then the reclaim's: d never ended here.
      await until('d to complete', async () => (await redis.hget(keys.run('d'), 'status')) === 'Completed');
      expect(log).toEqual(['release asked']);
      // Its end was the fused end + completion carrying the lease's release (counted held again).
      expect(worker.fusedCompletions).toBe(fused + 1);
      held.open();
      await until('the park release answered', async () => log.includes('release answered'));
      await until('d finished', async () => (await t.queue.getJobState('d')) === 'completed');
      await tick();
      expect(log).toEqual(['release asked', 'release answered']);
      expect(await leaseHeld('d')).toBe(false);
    } finally {
      held.open();
      await t.close();
    }
  });

  it('handed back at shutdown: the lease is released after the take-back landed, and none is left', async () => {
    const log: string[] = [];
    const held = heldReclaims(log, 'hb');
    let answerHb: () => void = () => undefined;
    const parkHb = new Promise<void>((r) => {
      answerHb = r;
    });
    let watching = false;
    const t = await h.setUp('handed', true, undefined, {
      slots: 1,
      createShare: held.createShare,
      parkFor: (runId) => (runId === 'hb' ? parkHb : undefined),
      // The run holds until the runner's close hands it back.
      get hold() {
        if (!watching) return undefined;
        log.push('went on');
        return new Promise<void>(() => undefined);
      },
    });
    try {
      await h.warmUp(t, 'warm-hb');
      const gate = t.worker().gate;
      if (!gate) throw new Error('no slot gate');
      watching = true;
      await h.newRun('hb');
      await t.add('hb');
      await until('hb parked', async () => gate.state().parkedWithIsolate === 1);
      // As in the first test: the reclaim is sent at the resume only behind an answered release.
      await until('the park release of hb answered', () => held.released() === 1);
      answerHb();
      await until('hb went on', async () => log.includes('went on'));
      const stopping = t.stop();
      await until('hb handed back', async () => t.outcomes.includes('handed back'));
      await tick();
      // The hand-back's release waits for the take-back still open.
      expect(log).toEqual(['release asked', 'reclaim asked', 'went on']);
      held.open();
      await stopping;
      expect(log).toEqual(['release asked', 'reclaim asked', 'went on', 'reclaim landed', 'release asked']);
      expect(await leaseHeld('hb')).toBe(false);
    } finally {
      held.open();
      await t.close();
    }
  });
});

describe('the executor before a run end', () => {
  it('waits for its slot’s pending lease changes before it writes the end', async () => {
    const runs = createRunStore(redis, h.sealer);
    const journal = createCallJournal({ redis, sealer: h.sealer });
    const order: string[] = [];
    const finish = runs.finish.bind(runs);
    runs.finish = (...args) => {
      order.push('end');
      return finish(...args);
    };
    const engine = {
      execute: async () => {
        order.push('program');
        return completed();
      },
    } as unknown as Engine & { execute: () => Promise<RunOutcome> };
    const executor = createRunExecutor({
      runs,
      settings: { get: async () => ({}) } as never,
      journal,
      engineFor: () => engine,
      gateway: {} as GatewayClient,
      metrics: createMetrics({ component: 'resume-lease', defaults: false }),
      logger: createLogger({ name: 'resume-lease-test', level: 'silent' }),
    });
    const limits = { timeoutMs: 5000, memoryMb: 64, outputBytes: 65_536, outputCap: 'shared' as const };
    await runs.create(runFixture('se-1', { request: { connections: [], bindings: [], limits } }));
    let settle: () => void = () => undefined;
    const pending = new Promise<void>((r) => {
      settle = r;
    });
    const signal = new AbortController().signal;
    const executing = executor.execute({
      runId: 'se-1',
      mode,
      enqueuedAtMs: Date.now(),
      cancel: signal,
      handBack: signal,
      slot: { park: () => false, resume: async () => undefined, leaseEnding: () => pending },
    });
    await until('the program ran', () => order.includes('program'));
    await tick();
    // 9ec25e04: the end went out here, its lease release possibly before the take-back.
    expect(order).toEqual(['program']);
    settle();
    expect(await executing).toBe('completed');
    expect(order).toEqual(['program', 'end']);
  });
});
