/**
 * A call's client-gone signal may be given as what makes it (the gateway's fast call path, round
 * 42 `binding-floor`): a call that does not wait for a decision never asks for it, and a call
 * held for one asks once and ends its wait when the signal aborts (the runner went away).
 */
import type { BindingOutcome } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';
import { createCallProcessor } from './call-processor.ts';
import { createDecisionStore } from './decision-store.ts';

describe('a call’s signal made when first asked', () => {
  const r = useSuiteRedis();

  it('is never made for an allowed call; a held call makes it once and its abort ends the wait', async () => {
    const sealer = createTestSealer();
    const journal = createCallJournal({ redis: r.a, sealer });
    const decisions = createDecisionStore({ redis: r.a, sealer, expireAfterMs: 60_000 });
    const processor = createCallProcessor({ journal, decisions });
    const ac = new AbortController();
    let asked = 0;
    const signal = () => {
      asked++;
      return ac.signal;
    };
    const base = {
      run: { id: 'signal-run', tenant: 't1', mode: 'read-only' as const, toolCallId: 'c', code: 'x' },
      attempt: 1,
      approval: 'hold' as const,
      holdTimeoutMs: 30_000,
      signal,
      send: async (): Promise<BindingOutcome> => ({ type: 'result', valueJson: '{"ok":true}' }),
    };
    const allowed = await processor.process({
      ...base,
      call: { index: 0, binding: 'app.read', argsJson: '{}' },
      policy: 'allow',
    });
    expect(allowed.label).toBe('result');
    expect(asked).toBe(0);

    const held = processor.process({
      ...base,
      call: { index: 1, binding: 'app.write', argsJson: '{}' },
      policy: 'ask',
    });
    await expect.poll(() => asked).toBe(1);
    ac.abort();
    const ended = await held;
    expect(ended.label).toBe('cancelled');
    expect(ended.outcome).toMatchObject({ type: 'stop', code: 'cancelled' });
    expect(asked).toBe(1);
  });
});
