// What counts as demand, with real BullMQ jobs (fake Kubernetes API, real Redis): two RunnerPools
// for one mode pull from one queue and each scales for its share of the depth, not for all of it;
// jobs a runner deferred over their tenant's fair share (BullMQ's delayed set) still count.

import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { DelayedError, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { Operator } from '../src/operator.ts';
import { onOperatorFixture } from './on-operator-fixture.ts';
import { NS, POOLS, runnerPool, STEADY_LEADER, waitFor } from './operator-fixture.ts';

describe('queue demand', () => {
  let op: Operator;
  const fx = onOperatorFixture(async (f) => {
    op = await f.startOperator(STEADY_LEADER);
  });
  /** Reconciles that went through (every pool is reconciled each resync, 200 ms). */
  const reconciled = async () =>
    (await op.metrics.reconcileTotal.get()).values.find((v) => v.labels.result === 'ok')?.value ?? 0;
  /** Until `n` more reconciles went through: what a later one does, whatever the box's load. */
  const laterReconciles = async (n: number) => {
    const seen = await reconciled();
    await waitFor(`${n} more reconciles`, async () => (await reconciled()) >= seen + n);
  };

  it('12 waiting runs, target 2: one pool wants 6; two pools want 3 each, not 6 each', async () => {
    const queue = fx.queue('read-only');
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'run', data: { i } })));
    fx.api.apply(POOLS, NS, runnerPool('a'));
    await waitFor('a at 6', () => fx.replicasOf('a') === 6);
    fx.api.apply(POOLS, NS, runnerPool('b'));
    await waitFor('a and b at 3', () => fx.replicasOf('a') === 3 && fx.replicasOf('b') === 3);
    // And they stay there (no pool takes the whole queue on a later reconcile): two of each pool's.
    await laterReconciles(4);
    expect([fx.replicasOf('a'), fx.replicasOf('b')]).toEqual([3, 3]);
    fx.api.remove(POOLS, NS, 'b');
    await waitFor('a back at 6', () => fx.replicasOf('a') === 6);
    await queue.drain(true);
    fx.api.remove(POOLS, NS, 'a');
  });

  it('jobs deferred over their tenant’s share (delayed, as the runner defers them) count as demand', async () => {
    const mode = 'workspace-write';
    const queue = fx.queue(mode);
    await queue.addBulk(Array.from({ length: 8 }, (_, i) => ({ name: 'run', data: { tenant: 'flood', i } })));
    // What services/runner does with a job over its tenant's share: back to the queue, delayed until
    // a slot frees (here longer than the test), no attempt spent.
    const worker = new Worker(
      runQueueName(mode),
      async (job, token) => {
        await job.moveToDelayed(Date.now() + 120_000, token);
        throw new DelayedError();
      },
      {
        connection: { host: '127.0.0.1', port: fx.redisServer.port, maxRetriesPerRequest: null },
        prefix: QUEUE_PREFIX,
        concurrency: 4,
      },
    );
    try {
      await waitFor('8 deferred', async () => (await queue.getJobCounts('delayed')).delayed === 8);
      await worker.close();
      const counts = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed');
      expect(counts).toMatchObject({ waiting: 0, prioritized: 0, active: 0, delayed: 8 });
      // Without them the pool sat at minReplicas (1) while a tenant's flood waited: ceil(8 / 2) = 4.
      fx.api.apply(POOLS, NS, runnerPool('ww', { mode, minReplicas: 1 }));
      await waitFor('4 replicas for 8 deferred runs', () => fx.replicasOf('ww') === 4);
      await laterReconciles(2);
      expect(fx.replicasOf('ww')).toBe(4);
    } finally {
      await worker.close();
    }
    // Once they are gone (run, or cancelled), the pool goes back down.
    await queue.drain(true);
    await waitFor('back to 1', () => fx.replicasOf('ww') === 1);
  });
});
