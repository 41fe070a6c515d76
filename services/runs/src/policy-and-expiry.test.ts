import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createDecisionStore } from './decision-store.ts';
import { expiryMessage } from './reconcile-run.ts';
import { createRunPolicyStore } from './run-policy-store.ts';
import { createRunRecoveryLoop, expiredDecisionsFeed } from './run-recovery-loop.ts';

describe('decision expiry in the recovery loop', () => {
  const r = useSuiteRedis();

  it('ends each expired run exactly once, from whichever loop sees it', async () => {
    const sealer = createTestSealer();
    const decisions = createDecisionStore({ redis: r.a, sealer, expireAfterMs: 100 });
    const expired: string[] = [];
    const head = {
      status: 'Waiting' as const,
      attempts: 1,
      createdAt: Date.now(),
      mode: 'read-only' as const,
    };
    const loops = [1, 2].map(() =>
      createRunRecoveryLoop({
        feeds: [expiredDecisionsFeed(decisions)],
        reads: { head: async () => head },
        capabilities: {
          expire: async (_a, item) => {
            expired.push(item.runId);
          },
        },
        policy: { graceMs: 0, resumeRepairAfterMs: 0 },
        intervalMs: 25,
      }),
    );
    for (const index of [0, 1]) {
      await decisions.request({
        tenant: 't1',
        mode: 'read-only',
        runId: 'exp-run',
        index,
        toolCallId: 'c',
        code: 'x',
        approval: 'stop',
        call: { connectionId: 'conn', tool: 'write', arguments: {} },
      });
    }
    for (const loop of loops) loop.start();
    await new Promise((r) => setTimeout(r, 400));
    await Promise.all(loops.map((l) => l.stop()));
    // One expire per expired decision, whichever loop took it; ending the run twice writes nothing.
    expect(expired).toEqual(['exp-run', 'exp-run']);
    expect((await decisions.listRun('exp-run')).map((d) => [d.index, d.state])).toEqual([
      [0, 'expired'],
      [1, 'expired'],
    ]);
    expect(expiryMessage(100)).toBe('decision expired: no answer within 100ms; the run was stopped');
  });
});

describe('tenant run policy', () => {
  const r = useSuiteRedis();

  it('defaults to run_code rules and lets a tenant and a request choose', async () => {
    const store = createRunPolicyStore(r.a);
    expect(await store.effective('t1')).toEqual({
      style: 'run_code',
      approval: 'hold',
      timeBudget: 'elapsed',
      fourEyes: false,
    });
    // A request's style brings that style's defaults.
    expect(await store.effective('t1', undefined, 'code-mode')).toEqual({
      style: 'code-mode',
      approval: 'stop',
      timeBudget: 'excluding-binding-waits',
      fourEyes: false,
    });
    await store.set('t2', { style: 'run_code' });
    expect(await store.effective('t2')).toEqual({
      style: 'run_code',
      approval: 'hold',
      timeBudget: 'elapsed',
      fourEyes: false,
    });
    expect(await store.effective('t2', 'stop')).toMatchObject({ approval: 'stop', timeBudget: 'elapsed' });
    await store.set('t3', { style: 'code-mode', timeBudget: 'elapsed', approval: 'hold' });
    expect(await store.effective('t3')).toEqual({
      style: 'code-mode',
      approval: 'hold',
      timeBudget: 'elapsed',
      fourEyes: false,
    });
    await store.set('t5', { style: 'code-mode', fourEyes: true });
    expect(await store.effective('t5')).toMatchObject({ fourEyes: true });
    // The tenant's overrides belong to its own style, not to a run that asks for the other one.
    expect(await store.effective('t3', undefined, 'run_code')).toEqual({
      style: 'run_code',
      approval: 'hold',
      timeBudget: 'elapsed',
      fourEyes: false,
    });
    expect(await store.effective('t3', undefined, 'code-mode')).toMatchObject({ approval: 'hold' });
    // An unknown approval mode is refused and stores nothing.
    await expect(store.set('t4', { style: 'code-mode', approval: 'later' as 'hold' })).rejects.toThrow(
      /approval/,
    );
    expect(await store.get('t4')).toEqual({ style: 'run_code' });
  });
});
