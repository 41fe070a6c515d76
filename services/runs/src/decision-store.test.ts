import { pausedRunsKey } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createDecisionStore, decisionView } from './decision-store.ts';
import { ESCALATION_INDEX } from './decision-types.ts';

describe('decision store on real Redis', () => {
  const r = useSuiteRedis();
  const sealer = createTestSealer();
  let n = 0;
  const newRun = () => `drun-${Date.now()}-${n++}`;
  /** RPUSHes the server ran so far, scripts' own included (this file's server is its own). */
  const rpushCalls = async () =>
    Number(/cmdstat_rpush:calls=(\d+)/.exec(await r.a.info('commandstats'))?.[1] ?? 0);
  const ask = (runId: string, tenant = 't1', index = 1) => ({
    tenant,
    mode: 'read-only' as const,
    runId,
    index,
    toolCallId: 'call-9',
    code: 'const notes = await apps.notes.read_note({}); await apps.mail.send_email({ to: "team@example.com" })',
    approval: 'stop' as const,
    call: { connectionId: 'conn-7', tool: 'send_email', arguments: { to: 'team@example.com' } },
  });

  it("records a request in the Code Mode document's shape, once per (run, index), sealed at rest", async () => {
    const store = createDecisionStore({ redis: r.a, sealer, keyPrefix: 'd1:' });
    const run = newRun();
    const first = await store.request(ask(run));
    const again = await store.request(ask(run));
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(first.decision.request).toMatchObject({
      capability: { action: 'apps.call', target: 'conn-7/send_email' },
      toolCallId: 'call-9',
      app: { id: 'conn-7', callId: 'call-9:1', arguments: { to: 'team@example.com' } },
      code: { run, index: 1, code: ask(run).code },
    });
    expect(JSON.stringify(await r.a.hgetall(`d1:decisions:{${run}}`))).not.toContain('team@example.com');
    const pending = await store.listPending('t1');
    expect(pending.map((d) => decisionView(d).id)).toContain(`${run}:1`);
    // A stop-style request counts the run as paused in its mode's set; a held one does not.
    expect(await r.a.zscore(pausedRunsKey('read-only'), run)).not.toBeNull();
    const held = newRun();
    await store.request({ ...ask(held), approval: 'hold' });
    expect(await r.a.zscore(pausedRunsKey('read-only'), held)).toBeNull();
  });

  it('takes one answer only, from the owning tenant; the other tenant gets not-found', async () => {
    const store = createDecisionStore({ redis: r.a, sealer, keyPrefix: 'd2:' });
    const other = createDecisionStore({ redis: r.b, sealer, keyPrefix: 'd2:' });
    const run = newRun();
    await store.request(ask(run));
    expect(await other.listPending('t2')).toEqual([]);
    expect(await other.answer('t2', run, 1, { allow: true, by: 'k2' })).toEqual({
      ok: false,
      error: 'not-found',
    });
    const [x, y] = await Promise.all([
      store.answer('t1', run, 1, { allow: false, by: 'k1' }),
      other.answer('t1', run, 1, { allow: true, by: 'k1b' }),
    ]);
    const oks = [x, y].filter((r) => r?.ok);
    expect(oks).toHaveLength(1);
    expect([x, y].find((r) => !r?.ok)).toMatchObject({ ok: false, error: 'conflict' });
    expect(await store.listPending('t1')).toEqual([]);
    expect(await store.answer('t1', run, 7, { allow: true, by: 'k1' })).toEqual({
      ok: false,
      error: 'not-found',
    });
  });

  it('counts the run’s other pending decisions and keeps input for AppInputRequired', async () => {
    const store = createDecisionStore({ redis: r.a, sealer, keyPrefix: 'd3:' });
    const run = newRun();
    await store.request(ask(run, 't1', 1));
    await store.request(ask(run, 't1', 2));
    const first = await store.answer('t1', run, 1, { allow: true, input: { code: '1234' }, by: 'k1' });
    expect(first).toMatchObject({ ok: true, stillPending: 1 });
    const second = await store.answer('t1', run, 2, { allow: true, by: 'k1' });
    expect(second).toMatchObject({ ok: true, stillPending: 0 });
    expect((await store.get(run, 1))?.answer).toMatchObject({
      allow: true,
      input: { code: '1234' },
      by: 'k1',
    });
    expect((await store.get(run, 1))?.state).toBe('allowed');
  });

  it('wakes a hold-in-place waiter on another connection when the answer arrives', async () => {
    const store = createDecisionStore({ redis: r.a, sealer, keyPrefix: 'd4:' });
    const other = createDecisionStore({ redis: r.b, sealer, keyPrefix: 'd4:' });
    const run = newRun();
    await store.request({ ...ask(run), approval: 'hold' });
    const wake = `d4:decisions:{${run}}:answered:1`;
    const pushesBefore = await rpushCalls();
    setTimeout(() => void other.answer('t1', run, 1, { allow: true, by: 'k' }), 150);
    const answered = await store.waitForAnswer(run, 1, { timeoutMs: 5000 });
    expect(answered?.state).toBe('allowed');
    // Woken by the answer's push, not by its once-a-second re-check: the settle script pushed one
    // entry and the waiter's BLPOP took it (a waiter that found the answer by re-reading the hash
    // would have left it in the list).
    expect((await rpushCalls()) - pushesBefore).toBe(1);
    expect(await r.a.llen(wake)).toBe(0);
    const run2 = newRun();
    await store.request({ ...ask(run2), approval: 'hold' });
    expect(await store.waitForAnswer(run2, 1, { timeoutMs: 200 })).toBeUndefined();
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    expect(await store.waitForAnswer(run2, 1, { timeoutMs: 5000, signal: ctl.signal })).toBeUndefined();
  });

  it('expires unanswered decisions after the configured time, each exactly once', async () => {
    let clock = 1_000_000;
    const store = createDecisionStore({
      redis: r.a,
      sealer,
      keyPrefix: 'd5:',
      expireAfterMs: 500,
      now: () => clock,
    });
    const twin = createDecisionStore({
      redis: r.b,
      sealer,
      keyPrefix: 'd5:',
      expireAfterMs: 500,
      now: () => clock,
    });
    const run = newRun();
    await store.request(ask(run));
    expect(await store.expireDue()).toEqual([]);
    expect(await store.countAllPending()).toBe(1);
    clock += 501;
    const [x, y] = await Promise.all([store.expireDue(), twin.expireDue()]);
    expect([...x, ...y].map((d) => [d.runId, d.state])).toEqual([[run, 'expired']]);
    expect(await store.answer('t1', run, 1, { allow: true, by: 'k' })).toMatchObject({
      ok: false,
      error: 'conflict',
    });
    expect(await store.listPending('t1')).toEqual([]);
    expect(await store.countAllPending()).toBe(0);
  });

  it('shows a wider-access request with its justification, before any call', async () => {
    const store = createDecisionStore({ redis: r.a, sealer, keyPrefix: 'd6:' });
    const run = newRun();
    const { decision } = await store.request({
      tenant: 't1',
      mode: 'read-only',
      runId: run,
      index: ESCALATION_INDEX,
      toolCallId: 'call-3',
      code: 'await fs.write()',
      approval: 'stop',
      escalation: { mode: 'workspace-write', justification: 'It must write the report into the workspace.' },
    });
    expect(decisionView(decision)).toMatchObject({
      id: `${run}:-1`,
      state: 'pending',
      capability: { action: 'sandbox.escalate', target: 'workspace-write' },
      justification: 'It must write the report into the workspace.',
      code: { run, index: -1 },
    });
    expect(await store.closeRun(run)).toBe(1);
    expect(await store.listPending('t1')).toEqual([]);
  });

  it('keeps the per-mode paused-runs set the operator counts', async () => {
    const store = createDecisionStore({ redis: r.a, sealer });
    const run = newRun();
    await store.markPaused(run, 'workspace-write');
    expect(await r.a.zscore(pausedRunsKey('workspace-write'), run)).not.toBeNull();
    await store.unmarkPaused(run, 'workspace-write');
    expect(await r.a.zscore(pausedRunsKey('workspace-write'), run)).toBeNull();
  });
});
