/**
 * The recovery loop on a real Redis, driven as a gateway drives it (run-recovery.ts) and, for failed
 * jobs, with the runners' feed: each stuck run reaches a final status, a healthy one is left alone,
 * and two gateways ticking at once apply each recovery once.
 */
import { keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName, type SandboxMode } from '@islet/protocol';
import {
  type AppliedAction,
  createRunRecoveryLoop,
  expiryMessage,
  type FailedJobSource,
  failedJobsFeed,
  jobRunId,
  type RunJobData,
  runJobOptions,
} from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayDepsUnderTest,
  startGatewayDeps,
  type TestGatewayDeps,
  testLogger,
} from '../test/gateway-harness.ts';
import { createGatewayDeps } from './create-deps.ts';
import { createDecisionsService } from './decisions-service.ts';
import type { GatewayDeps } from './deps.ts';
import { createGatewayRecovery } from './run-recovery.ts';
import { createRunsService } from './runs-service.ts';

const EXPIRE_MS = 1000;
let gateway: GatewayDepsUnderTest;
type Deps = TestGatewayDeps;
let a: Deps;
let b: Deps;

beforeAll(async () => {
  gateway = await startGatewayDeps({ ISLET_DECISION_EXPIRE_MS: String(EXPIRE_MS) });
  // Two gateways on one Redis.
  a = gateway.deps;
  b = await createGatewayDeps(gateway.config, testLogger());
  await a.tenants.createTenant({ id: 'acme', name: 'Acme' });
});

afterAll(async () => {
  for (const c of workerConnections) c.disconnect();
  await b?.close();
  await gateway?.close();
});

const workerConnections: Redis[] = [];
/** A connection for a test worker, closed after the suite (a worker leaves the one it is given open). */
function workerConnection(): Redis {
  const c = a.redis.duplicate();
  workerConnections.push(c);
  return c;
}

const recoveryOf = (deps: GatewayDeps) => {
  const runsService = createRunsService(deps);
  return createGatewayRecovery(deps, runsService, createDecisionsService(deps, runsService), {
    inFlightIntervalMs: 60_000,
    resumeRepairAfterMs: 0,
  });
};

/** A stored, admitted run (in its tenant's in-flight index), as a gateway's submit writes it. */
async function admit(id: string, extra: { createdAt?: number; attempts?: number } = {}) {
  const createdAt = extra.createdAt ?? Date.now() - 120_000;
  await a.runs.create(runFixture(id, { session: `s-${id}`, createdAt, attempts: extra.attempts ?? 0 }));
  return (await a.runs.get(id))!;
}

/** A started run stopped for a decision (stop-and-decide): Waiting, paused, its decision pending. */
async function pausedForDecision(id: string) {
  const run = await admit(id, { attempts: 1 });
  await a.decisions.request({
    tenant: 'acme',
    mode: 'read-only',
    runId: id,
    index: 0,
    toolCallId: 'c',
    code: 'x',
    approval: 'stop',
    call: { connectionId: 'conn', tool: 'write', arguments: {} },
  });
  await a.lifecycle.suspend(run);
  await a.decisions.markPaused(id, 'read-only');
  return run;
}

const cancelledCount = async (deps: GatewayDeps) =>
  (await deps.metrics.runsTotal.get()).values
    .filter((v) => v.labels.status === 'Cancelled' && v.labels.kind === 'abort')
    .reduce((sum, v) => sum + v.value, 0);

/** islet_run_recovery_actions_total as `action feed` → count. */
const recoveryCounts = async (deps: GatewayDeps) =>
  Object.fromEntries(
    (await deps.metrics.recoveryActions.get()).values.map((v) => [
      `${v.labels.action} ${v.labels.feed}`,
      v.value,
    ]),
  );
/** What a step added to islet_run_recovery_actions_total (series that did not move left out). */
async function recoveryCountsAdded(deps: GatewayDeps, step: () => Promise<unknown>) {
  const before = await recoveryCounts(deps);
  await step();
  const after = await recoveryCounts(deps);
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, d]) => d !== 0),
  );
}

const pastExpiry = () => new Promise((r) => setTimeout(r, EXPIRE_MS + 100));

describe('the recovery loop', () => {
  it('an orphaned run (admitted, its job never queued) is queued again and reaches its final status', async () => {
    await admit('orphan-1');
    const worker = new Worker<RunJobData>(
      runQueueName('read-only'),
      async (job) => {
        const run = (await a.runs.get(jobRunId(job)))!;
        await a.lifecycle.finish(run, {
          status: 'Completed',
          result: { _tag: 'Completed', value: 1, logs: [] },
          text: '1',
        });
      },
      { connection: workerConnection(), prefix: QUEUE_PREFIX },
    );
    try {
      let applied: AppliedAction[] = [];
      const added = await recoveryCountsAdded(a, async () => {
        applied = await recoveryOf(a).tick();
      });
      expect(applied).toContainEqual({ runId: 'orphan-1', action: { type: 'enqueue' } });
      // Counted once, under the feed that found it (the in-flight walk).
      expect(added).toEqual({ 'enqueue in-flight': 1 });
      await expect.poll(async () => (await a.runs.get('orphan-1'))?.status).toBe('Completed');
    } finally {
      await worker.close();
    }
    // The end's tenant half: the in-flight entry is gone, so the next walk finds nothing to do.
    expect(await a.runs.inFlightCount('acme')).toBe(0);
  });

  it('a record in format 2 (ISLET_WRITE_FORMAT=2: `pick`, then `ended`) is recovered as one in format 1', async () => {
    const two = await createGatewayDeps({ ...gateway.config, ISLET_WRITE_FORMAT: '2' }, testLogger());
    try {
      const run = runFixture('orphan-f2', {
        session: 's-orphan-f2',
        createdAt: Date.now() - 120_000,
        code: 'return 2',
        request: {
          connections: ['c1'],
          bindings: [],
          limits: { timeoutMs: 5000, memoryMb: 64, outputBytes: 1024, outputCap: 'shared' as const },
        },
      });
      await two.runs.create(run);
      expect(await two.redis.hget(keys.run('orphan-f2'), 'code')).toBeNull();
      expect(await two.redis.hget(keys.run('orphan-f2'), 'pick')).toMatch(/^v1\./);
      const seen: { code: string; request: unknown }[] = [];
      const worker = new Worker<RunJobData>(
        runQueueName('read-only'),
        async (job) => {
          // What a runner reads of it (this build's reader, whatever its own setting).
          const read = (await a.runs.get(jobRunId(job)))!;
          seen.push({ code: read.code, request: read.request });
          await two.lifecycle.finish(read, {
            status: 'Completed',
            result: { _tag: 'Completed', value: 2, logs: [] },
            text: '2',
          });
        },
        { connection: workerConnection(), prefix: QUEUE_PREFIX },
      );
      try {
        // The gateway of format 1 recovers it: its read of the whole record reads `pick`. (The
        // first test's walk holds the in-flight walk's lock for its interval.)
        await a.redis.del(keys.orphanSweepLock());
        const applied = await recoveryOf(a).tick();
        expect(applied).toContainEqual({ runId: 'orphan-f2', action: { type: 'enqueue' } });
        await expect.poll(async () => (await a.runs.get('orphan-f2'))?.status).toBe('Completed');
      } finally {
        await worker.close();
      }
      expect(seen).toEqual([{ code: 'return 2', request: run.request }]);
      expect(await two.redis.hget(keys.run('orphan-f2'), 'ended')).toMatch(/^v1\./);
      expect(await two.redis.hget(keys.run('orphan-f2'), 'result')).toBeNull();
      for (const deps of [a, two]) {
        const done = (await deps.runs.get('orphan-f2'))!;
        expect(done.result).toEqual({ _tag: 'Completed', value: 2, logs: [] });
        expect(done.text).toBe('2');
      }
    } finally {
      await two.close();
    }
  });

  it("an unanswered decision expires: its run ends Cancelled with the contract's text", async () => {
    await pausedForDecision('expiring-1');
    const before = await cancelledCount(a);
    await pastExpiry();
    let applied: AppliedAction[] = [];
    const added = await recoveryCountsAdded(a, async () => {
      applied = await recoveryOf(a).tick();
    });
    expect(applied).toContainEqual({ runId: 'expiring-1', action: { type: 'expire' } });
    // The expiry feed ended it (and took it out of the paused set): the paused-runs feed had nothing left.
    expect(added).toEqual({ 'expire decision-expiry': 1 });
    // Level-triggered: a second tick applies, and counts, nothing more for it.
    expect(await recoveryCountsAdded(a, () => recoveryOf(a).tick())).toEqual({});
    const run = (await a.runs.get('expiring-1'))!;
    expect(run.status).toBe('Cancelled');
    expect(run.result).toMatchObject({
      _tag: 'Failed',
      reason: 'Cancelled',
      message: expiryMessage(EXPIRE_MS),
    });
    expect(expiryMessage(EXPIRE_MS)).toBe('decision expired: no answer within 1000ms; the run was stopped');
    expect((await a.decisions.listRun('expiring-1'))[0]?.state).toBe('expired');
    expect(await a.decisions.pausedBefore('read-only', Date.now(), 10)).not.toContain('expiring-1');
    expect((await cancelledCount(a)) - before).toBe(1);
  });

  it("a job BullMQ failed for good ends its run Failed (worker-exit), through the runners' feed", async () => {
    const run = await admit('failing-1', { attempts: 1 });
    const queue = a.runQueue.queues['read-only'];
    await queue.add(
      'run',
      { runId: run.id, tenant: 'acme', enqueuedAtMs: Date.now() },
      runJobOptions(run.id, 1),
    );
    const worker = new Worker<RunJobData>(
      runQueueName('read-only'),
      async () => {
        throw new Error('job stalled more than allowable limit');
      },
      { connection: workerConnection(), prefix: QUEUE_PREFIX },
    );
    await expect.poll(async () => (await queue.getJob(run.id))?.failedReason).toBeTruthy();
    await worker.close();
    const given: string[] = [];
    const runnerLoop = createRunRecoveryLoop({
      intervalMs: 1000,
      policy: { graceMs: 0, resumeRepairAfterMs: 0 },
      feeds: [failedJobsFeed((): Array<[SandboxMode, FailedJobSource]> => [['read-only', queue]])],
      reads: { head: (id) => a.inFlight.head(id) },
      capabilities: {
        'give-up': async (action, item) => {
          given.push(item.runId);
          const whole = await a.runs.get(item.runId);
          if (whole) await a.lifecycle.giveUp(whole, action.why);
        },
      },
    });
    await runnerLoop.tick();
    expect(given).toEqual(['failing-1']);
    const ended = (await a.runs.get('failing-1'))!;
    expect(ended.status).toBe('Failed');
    expect(ended.result).toMatchObject({ _tag: 'Failed', reason: 'Unavailable', kind: 'worker-exit' });
    expect(ended.text).toBe(
      'code run failed (worker-exit): Islet could not finish the run: job stalled more than allowable limit',
    );
    // Seen once: the next tick hands the same failed job on no more.
    await runnerLoop.tick();
    expect(given).toEqual(['failing-1']);
  });

  it('a paused run whose resume a crash lost is resumed for its next round; one that ended leaves the paused set', async () => {
    await pausedForDecision('paused-1');
    const answered = await a.decisions.answer('acme', 'paused-1', 0, { allow: true, by: 'k' });
    expect(answered.ok).toBe(true);
    // The answer's own resume never happened (the gateway died): Waiting, still in the paused set.
    const ended = await pausedForDecision('paused-ended');
    await a.lifecycle.cancel(ended, 'cancelled by the caller');
    const applied = await recoveryOf(a).tick();
    expect(applied).toContainEqual({ runId: 'paused-1', action: { type: 'resume', round: 1 } });
    expect(applied).toContainEqual({ runId: 'paused-ended', action: { type: 'unmark-paused' } });
    expect((await a.runs.get('paused-1'))?.status).toBe('Running');
    expect(await a.runQueue.queues['read-only'].getJob('paused-1-r1')).toBeTruthy();
    expect(await a.decisions.pausedBefore('read-only', Date.now(), 10)).toEqual([]);
    // Level-triggered: nothing left to do for either.
    const again = await recoveryOf(a).tick();
    expect(again.filter((x) => x.runId.startsWith('paused-'))).toEqual([]);
  });

  it('a feed that cannot be read is counted as a failure, and the next tick does what it could not', async () => {
    await pausedForDecision('expiring-3');
    await pastExpiry();
    const failures = async () =>
      (await a.metrics.recoveryFailures.get()).values.find((v) => v.labels.feed === 'decision-expiry')
        ?.value ?? 0;
    const before = await failures();
    const broken: GatewayDeps = {
      ...a,
      decisions: {
        ...a.decisions,
        expireDue: async () => {
          throw new Error('Redis went away');
        },
      },
    };
    // The other feeds still run (the paused-runs feed sees a decision still pending: nothing to do).
    expect(await recoveryCountsAdded(a, () => recoveryOf(broken).tick())).toEqual({});
    expect(await failures()).toBe(before + 1);
    expect((await a.runs.get('expiring-3'))?.status).toBe('Waiting');
    let applied: AppliedAction[] = [];
    const added = await recoveryCountsAdded(a, async () => {
      applied = await recoveryOf(a).tick();
    });
    expect(applied).toContainEqual({ runId: 'expiring-3', action: { type: 'expire' } });
    // One count per applied action (an earlier test's run, ended while paused, may have a decision
    // expiring now too: its expire is applied, and counted, though the run's end stands).
    expect(applied.every((x) => x.action.type === 'expire')).toBe(true);
    expect(added).toEqual({ 'expire decision-expiry': applied.length });
    expect(await failures()).toBe(before + 1);
    expect((await a.runs.get('expiring-3'))?.status).toBe('Cancelled');
  });

  it('a healthy in-flight run is left alone', async () => {
    // Started by a runner (an attempt counted) and waiting on its job; and one queued, not yet started.
    await admit('healthy-started', { attempts: 1 });
    const queued = await admit('healthy-queued');
    await createRunsService(a).enqueue(queued);
    await a.redis.del(keys.orphanSweepLock());
    const applied = await recoveryOf(a).tick();
    expect(applied.filter((x) => x.runId.startsWith('healthy-'))).toEqual([]);
    expect((await a.runs.get('healthy-started'))?.status).toBe('Running');
    expect((await a.runs.get('healthy-queued'))?.status).toBe('Running');
    expect(await a.runQueue.queues['read-only'].getJob('healthy-queued')).toBeTruthy();
  });

  it('two gateways ticking at once apply each recovery once', async () => {
    await a.redis.del(keys.orphanSweepLock());
    await admit('orphan-2');
    await pausedForDecision('expiring-2');
    await pastExpiry();
    const before = (await cancelledCount(a)) + (await cancelledCount(b));
    const [fromA, fromB] = await Promise.all([recoveryOf(a).tick(), recoveryOf(b).tick()]);
    const all = [...fromA, ...fromB];
    expect(all.filter((x) => x.runId === 'orphan-2')).toEqual([
      { runId: 'orphan-2', action: { type: 'enqueue' } },
    ]);
    // Both may apply the expire (one from the expiry it was handed, one from the paused run whose
    // decision it saw expired) or, once it ended, take it out of the paused set; never a resume.
    // The end is written, and counted, once.
    const expiring = all.filter((x) => x.runId === 'expiring-2').map((x) => x.action.type);
    expect(expiring).toContain('expire');
    expect(expiring.filter((t) => t !== 'expire' && t !== 'unmark-paused')).toEqual([]);
    expect((await cancelledCount(a)) + (await cancelledCount(b)) - before).toBe(1);
    expect((await a.runs.get('expiring-2'))?.status).toBe('Cancelled');
    const jobs = await a.runQueue.queues['read-only'].getJobs(['waiting', 'prioritized', 'delayed']);
    expect(jobs.filter((j) => jobRunId(j) === 'orphan-2').map((j) => j.id)).toEqual(['orphan-2']);
    // Level-triggered: ticking again finds nothing left to do for either.
    const again = [...(await recoveryOf(a).tick()), ...(await recoveryOf(b).tick())];
    expect(again.filter((x) => x.runId === 'orphan-2' || x.runId === 'expiring-2')).toEqual([]);
  });
});
