/**
 * A run whose job BullMQ gives up on (stalled more often than ISLET_RUNNER_MAX_STALLED_COUNT)
 * still reaches a final status: Failed / Unavailable. Own cluster, because it needs a stall limit of 0.
 */
import { expect, it } from 'vitest';
import { startSlowAppCluster, until } from './helpers.ts';

it('a job failed by the stall limit ends its run Failed/Unavailable instead of leaving it Running', async () => {
  const { cluster, app, a, conn, stop } = await startSlowAppCluster({
    runners: [{ modes: ['read-only'] }],
    env: {
      ISLET_RUNNER_LOCK_DURATION_MS: '2000',
      ISLET_RUNNER_STALLED_INTERVAL_MS: '500',
      ISLET_RUNNER_MAX_STALLED_COUNT: '0',
    },
    delayMs: 1500,
    answer: '{}',
  });
  try {
    const res = await a('POST', '/v1/runs', {
      code: 'await apps.slow.wait({}); return 1',
      description: 'Wait for a slow App',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [conn.id],
    });
    await until(async () => app.deliveries.length > 0, 15_000, 20);
    await cluster.killRunner(0, 'SIGKILL');
    await cluster.restartRunner(0);
    const ended = await until(
      async () => {
        const r = await a('GET', `/v1/code-runs/${res.body.id}`);
        return r.body.status !== 'Running' && r.body;
      },
      30_000,
      200,
    );
    expect(ended.status).toBe('Failed');
    expect(ended.result).toMatchObject({ _tag: 'Failed', reason: 'Unavailable', kind: 'worker-exit' });
    expect(ended.text).toMatch(/^code run failed \(worker-exit\): Islet could not finish the run: .*stalled/);
  } finally {
    await stop();
  }
}, 90_000);
