/**
 * Graceful shutdown past its grace: a runner told to stop while its run waits on a slow App hands
 * the job back; another runner executes the run again (replay), the App call is never resent,
 * and the run reaches a final status.
 */
import { expect, it } from 'vitest';
import { startSlowAppCluster, until } from './helpers.ts';

it('SIGTERM past the grace hands the run back to another runner; nothing is sent twice', async () => {
  const { cluster, app, a, conn, stop } = await startSlowAppCluster({
    runners: [{ modes: ['read-only'] }, { modes: ['read-only'] }],
    env: {
      ISLET_RUNNER_SHUTDOWN_GRACE_MS: '300',
      ISLET_RUNNER_LOCK_DURATION_MS: '3000',
      ISLET_RUNNER_STALLED_INTERVAL_MS: '1000',
    },
    delayMs: 2500,
    answer: '{"v":"slow"}',
  });
  try {
    const code = `
      let got;
      try { got = (await apps.slow.wait({})).v; } catch (e) { got = e.name + ":" + e.details.reason; }
      return got;`;
    const res = await a('POST', '/v1/runs', {
      code,
      description: 'Wait for a slow App',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [conn.id],
    });
    const id = res.body.id;
    await until(async () => app.deliveries.length > 0, 15_000, 20);
    // Stop whichever runner holds it (one of them is idle and just exits).
    // The runners exit without waiting for the slow App's answer: the run is still Running (handed
    // back), where a runner that waited would have completed it before leaving.
    await Promise.all([cluster.killRunner(0, 'SIGTERM'), cluster.killRunner(1, 'SIGTERM')]);
    const mid = await a('GET', `/v1/code-runs/${id}`);
    expect(mid.body.status).toBe('Running'); // handed back, not ended by the runner that left
    await Promise.all([cluster.restartRunner(0), cluster.restartRunner(1)]);
    const ended = await until(
      async () => {
        const r = await a('GET', `/v1/code-runs/${id}`);
        return ['Completed', 'Failed', 'Cancelled'].includes(r.body.status) && r.body;
      },
      30_000,
      200,
    );
    expect(ended.status).toBe('Completed');
    // Either the journaled result was replayed, or the unknown outcome was reported; never a resend.
    expect(['slow', expect.stringMatching(/^AppCallFailed:/)]).toContainEqual(ended.result.value);
    expect(app.deliveries.filter((d) => d.idempotencyKey === `${id}:0`)).toHaveLength(1);
  } finally {
    await stop();
  }
}, 90_000);
