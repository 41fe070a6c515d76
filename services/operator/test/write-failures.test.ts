// A Deployment write the API server refuses (fake Kubernetes API, real Redis): the pool reads
// Ready=False / Stalled=True with the API's reason, one ReconcileFailed Event is counted up rather
// than repeated, retries back off, and the Stalled pool takes no share of its mode's depth.
// A transient failure (503, timeout) only retries with the backoff: no Stalled, no lost share.
// The same behaviours against a real API server: test/kube/defects.test.ts.

import { describe, expect, it } from 'vitest';
import type { Operator } from '../src/operator.ts';
import { onOperatorFixture } from './on-operator-fixture.ts';
import { NS, POOLS, runnerPool, STEADY_LEADER, waitFor } from './operator-fixture.ts';

describe('refused writes', () => {
  let op: Operator;
  const fx = onOperatorFixture(async (f) => {
    op = await f.startOperator({
      ...STEADY_LEADER,
      ISLET_OPERATOR_RETRY_BACKOFF_INITIAL_MS: '100',
      ISLET_OPERATOR_RETRY_BACKOFF_MAX_MS: '400',
    });
  });

  it('Stalled with the API’s reason, one counted Event, growing retry delays; no share of the depth', async () => {
    fx.api.failNext('PATCH', '/deployments/refused-runner', 422, 1000);
    fx.api.apply(POOLS, NS, runnerPool('refused'));
    const stalled = await waitFor('Stalled', () => {
      const c = fx.condition('refused', 'Stalled');
      return c?.status === 'True' ? c : undefined;
    });
    expect(stalled.reason).toBe('InjectedFailure');
    expect(stalled.message).toBe('injected 422');
    expect(fx.condition('refused', 'Ready')).toMatchObject({ status: 'False', reason: 'InjectedFailure' });
    expect(await op.metrics.registry.metrics()).toContain(
      'islet_operator_pool_stalled{pool="refused",reason="InjectedFailure"} 1',
    );
    const first = await waitFor('a retry', () => op.controller()?.retryState('refused'));
    const third = await waitFor('third failure', () => {
      const r = op.controller()?.retryState('refused');
      return r && r.failures >= 3 ? r : undefined;
    });
    expect(third.delayMs).toBeGreaterThan(first.delayMs);
    const events = () =>
      (fx.api.list('v1/events', NS) as { reason?: string; count?: number; message?: string }[]).filter(
        (e) => e.reason === 'ReconcileFailed',
      );
    await waitFor('counted', () => (events()[0]?.count ?? 0) >= 2);
    expect(events()).toHaveLength(1);
    expect(events()[0]?.message).toBe('InjectedFailure: injected 422');

    // 12 runs, target 2: the healthy pool of the same mode takes all of them (6), not half (3).
    await fx.queue('read-only').addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'run', data: { i } })));
    fx.api.apply(POOLS, NS, runnerPool('healthy'));
    await waitFor('healthy at 6', () => fx.replicasOf('healthy') === 6);
    await fx.queue('read-only').drain(true);
  });

  it('a transient failure (503) only retries: not Stalled, and the pool keeps its share of the depth', async () => {
    fx.api.failNext('PATCH', '/deployments/flaky-runner', 503, 1000);
    fx.api.apply(POOLS, NS, runnerPool('flaky'));
    const failed = () =>
      (
        fx.api.list('v1/events', NS) as {
          reason?: string;
          count?: number;
          involvedObject?: { name?: string };
        }[]
      ).find((e) => e.reason === 'ReconcileFailed' && e.involvedObject?.name === 'flaky');
    await waitFor('retried and counted', () => (failed()?.count ?? 0) >= 2);
    expect(fx.condition('flaky', 'Stalled')?.status).not.toBe('True');
    expect(fx.condition('flaky', 'Ready')?.status).not.toBe('False');
    expect(await op.metrics.registry.metrics()).not.toContain('islet_operator_pool_stalled{pool="flaky"');
    // 12 runs, target 2: the healthy pool shares them with the flaky one (3 each), the refused one takes none.
    await fx.queue('read-only').addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'run', data: { i } })));
    await waitFor('healthy at 3', () => fx.replicasOf('healthy') === 3);
    await new Promise((r) => setTimeout(r, 600));
    expect(fx.replicasOf('healthy')).toBe(3);
    await fx.queue('read-only').drain(true);
  });

  it('a scale whose status write then fails is still counted once (the retry finds it done)', async () => {
    fx.api.failNext('PUT', '/runnerpools/counted/status', 503, 1);
    fx.api.apply(POOLS, NS, runnerPool('counted', { mode: 'workspace-write' }));
    await waitFor('Ready', () => fx.condition('counted', 'Ready')?.status === 'True');
    // The first status write was refused with a 503, a later one landed.
    expect(
      fx.api.requests.filter((r) => r.method === 'PUT' && r.path.endsWith('/runnerpools/counted/status'))
        .length,
    ).toBeGreaterThanOrEqual(2);
    expect(await op.metrics.registry.metrics()).toContain(
      'islet_operator_scale_events_total{pool="counted",direction="up"} 1',
    );
  });
});
