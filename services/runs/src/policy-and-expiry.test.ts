import { describe, expect, it } from 'vitest';
import { expiryMessage, startDecisionExpiry } from './decision-expiry.ts';
import { createDecisionStore } from './decision-store.ts';
import type { DecisionRecord } from './decision-types.ts';
import { resolveApproval, resolveTimeBudget } from './policy-defaults.ts';
import { createRunPolicyStore } from './run-policy-store.ts';
import { useSuiteRedis } from './test-redis.ts';
import { createTestSealer } from './test-sealer.ts';

describe('approval and time-budget defaults', () => {
  it('holds run_code-style calls and stops Code Mode runs unless the request or tenant says otherwise', () => {
    expect(resolveApproval('run_code')).toBe('hold');
    expect(resolveApproval('code-mode')).toBe('stop');
    expect(resolveApproval('code-mode', undefined, 'hold')).toBe('hold');
    expect(resolveApproval('run_code', 'stop', 'hold')).toBe('stop');
    expect(resolveTimeBudget('run_code')).toBe('elapsed');
    expect(resolveTimeBudget('code-mode')).toBe('excluding-binding-waits');
    expect(resolveTimeBudget('code-mode', 'elapsed')).toBe('elapsed');
  });
});

describe('decision expiry sweeper', () => {
  const r = useSuiteRedis();

  it('ends each expired run exactly once, from whichever sweeper sees it', async () => {
    const sealer = createTestSealer();
    const decisions = createDecisionStore({ redis: r.a, sealer, expireAfterMs: 100 });
    const ended: DecisionRecord[] = [];
    const sweepers = [1, 2].map(() =>
      startDecisionExpiry({
        decisions,
        intervalMs: 25,
        onExpired: async (d) => {
          ended.push(d);
        },
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
    await new Promise((r) => setTimeout(r, 400));
    await Promise.all(sweepers.map((s) => s.stop()));
    expect(ended.map((d) => [d.runId, d.index, d.state]).sort()).toEqual([
      ['exp-run', 0, 'expired'],
      ['exp-run', 1, 'expired'],
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
