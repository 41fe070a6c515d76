/**
 * The run_code limits through `execute` on real sandbox hosts: the time budget (elapsed or excluding
 * binding waits, spent by earlier executions, none), the heap, the output cap (shared, or Code Mode's
 * separate). How a run ends early (abort, unfinished calls, stop): limits-ending.test.ts. Shared
 * helpers: test/run-helpers.ts.
 */
import { RUN_CODE_LIMITS } from '@islet/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep } from '../test/processes.ts';
import { ok } from '../test/run-helpers.ts';
import {
  createEngine,
  DEFAULT_MEMORY_MB,
  DEFAULT_OUTPUT_BYTES,
  DEFAULT_TIMEOUT_MS,
  deadlineMessage,
  effectiveTimeoutMs,
  MAX_TIMEOUT_MS,
  renderResultText,
} from './index.ts';
import type { BindingOutcome } from './types.ts';

const engine = createEngine();
afterAll(() => engine.close());

describe('the time budget', () => {
  it('defaults to 120000 ms, is capped at 600000 ms, and names the budget in its message', () => {
    expect({
      defaultTimeoutMs: DEFAULT_TIMEOUT_MS,
      maxTimeoutMs: MAX_TIMEOUT_MS,
      memoryMb: DEFAULT_MEMORY_MB,
      outputBytes: DEFAULT_OUTPUT_BYTES,
    }).toEqual(RUN_CODE_LIMITS);
    expect(DEFAULT_TIMEOUT_MS).toBe(120_000);
    expect(MAX_TIMEOUT_MS).toBe(600_000);
    expect(effectiveTimeoutMs(undefined)).toBe(120_000);
    expect(effectiveTimeoutMs(10_000_000)).toBe(600_000);
    expect(effectiveTimeoutMs(null)).toBeNull();
    expect(effectiveTimeoutMs(0)).toBe('invalid');
    expect(deadlineMessage(effectiveTimeoutMs(undefined) as number)).toBe(
      'execution deadline reached (120000ms)',
    );
  });

  it('a zero or negative budget does not switch the deadline off: the run is refused', async () => {
    const out = await engine.execute('return 1', { limits: { timeoutMs: 0 } });
    expect(out.failure).toEqual({
      kind: 'exception',
      message: 'invalid timeoutMs: expected a positive finite number',
    });
  });

  it('ends an endless loop as a timeout with the actual budget, keeping the output printed before it', async () => {
    const out = await engine.execute('console.log("before"); console.warn("still before"); for (;;) {}', {
      limits: { timeoutMs: 400 },
    });
    expect(out.status).toBe('failed');
    expect(out.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (400ms)' });
    expect(out.logs).toEqual([
      { level: 'log', text: 'before' },
      { level: 'warn', text: 'still before' },
    ]);
    expect(out.durationMs).toBeGreaterThanOrEqual(400);
    expect(renderResultText(out)).toBe(
      'code run failed (timeout): execution deadline reached (400ms)\n\nCaptured output:\nbefore\nstill before',
    );
  });

  it('counts elapsed time including binding waits by default', async () => {
    let handlerDone = false;
    const out = await engine.execute('return await t()', {
      bindings: ['t'],
      limits: { timeoutMs: 300 },
      onCall: async () => {
        await sleep(3000);
        handlerDone = true;
        return ok();
      },
    });
    expect(out.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (300ms)' });
    // The run ended while the call was still waiting: started, never settled in the record.
    expect(handlerDone).toBe(false);
    expect(out.calls).toEqual([
      { index: 0, binding: 't', argsJson: 'null', startedAtMs: expect.any(Number) },
    ]);
  });

  it("with 'excluding-binding-waits', time while a call is outstanding does not count", async () => {
    const out = await engine.execute('const a = await t(); const b = await t(); return [a, b]', {
      bindings: ['t'],
      limits: { timeoutMs: 300, timeBudget: 'excluding-binding-waits' },
      onCall: async () => {
        await sleep(250);
        return ok();
      },
    });
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBe('["ok","ok"]');
    expect(out.durationMs).toBeGreaterThanOrEqual(500);
    // Computing still counts.
    const busy = await engine.execute('await t(); for (;;) {}', {
      bindings: ['t'],
      limits: { timeoutMs: 300, timeBudget: 'excluding-binding-waits' },
      onCall: async () => {
        await sleep(200);
        return ok();
      },
    });
    expect(busy.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (300ms)' });
    expect(busy.durationMs).toBeGreaterThanOrEqual(480);
  });

  it('a replay given `spentMs` gets only the rest of its budget, and its timeout names the whole budget', async () => {
    // A program that never yields: the host's own first-turn deadline is the rest (50 ms), not 60 s.
    const busy = await engine.execute('for (;;) {}', { limits: { timeoutMs: 60_000, spentMs: 59_950 } });
    expect(busy.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (60000ms)' });
    expect(busy.budgetSpentMs).toBeGreaterThanOrEqual(59_950);
    // Waiting on a call: the engine's own timer.
    const waiting = await engine.execute('await t(); return 1', {
      bindings: ['t'],
      limits: { timeoutMs: 60_000, spentMs: 59_950 },
      onCall: () => new Promise<BindingOutcome>(() => undefined),
    });
    expect(waiting.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (60000ms)' });
    // The rest that ran out is counted with what the earlier executions spent: the whole budget.
    expect(waiting.budgetSpentMs).toBeGreaterThanOrEqual(60_000);
    // Excluding binding waits, what was counted is reported (no more than elapsed).
    const counted = await engine.execute('await t(); return 1', {
      bindings: ['t'],
      limits: { timeoutMs: 60_000, timeBudget: 'excluding-binding-waits', spentMs: 1000 },
      onCall: async () => {
        await sleep(100);
        return ok();
      },
    });
    expect(counted.status).toBe('completed');
    expect(counted.budgetSpentMs).toBeGreaterThanOrEqual(1000);
    expect(counted.budgetSpentMs).toBeLessThanOrEqual(1000 + counted.durationMs);
  });

  it("tells a binding handler through its signal when the run ended and the call's outcome is no longer used", async () => {
    let signal: AbortSignal | undefined;
    const out = await engine.execute('await t()', {
      bindings: ['t'],
      limits: { timeoutMs: 300 },
      onCall: (_call, context) => {
        signal = context.signal;
        expect(signal.aborted).toBe(false);
        return new Promise<BindingOutcome>(() => {});
      },
    });
    expect(out.failure?.kind).toBe('timeout');
    expect(signal?.aborted).toBe(true);
  });

  it('a run given no deadline (timeoutMs: null, for workflows) runs past the default budget logic', async () => {
    const out = await engine.execute('await t(); return "no deadline"', {
      bindings: ['t'],
      limits: { timeoutMs: null },
      onCall: async () => {
        await sleep(200);
        return ok();
      },
    });
    expect(out.valueJson).toBe('"no deadline"');
  });

  it('a promise that never settles ends as a timeout', async () => {
    const out = await engine.execute('await new Promise(() => {})', { limits: { timeoutMs: 300 } });
    expect(out.failure?.kind).toBe('timeout');
  });

  it('a program that returned completes at once, though work it left behind would spin on', async () => {
    // The first turn runs on the host's thread: the spinning leftover would hold it until the
    // deadline (and end the run as timeout) unless the program's end stops the isolate.
    for (const [code, value] of [
      ['(async () => { for (let i = 0; i < 5; i++) await null; for (;;) {} })(); return 1', '1'],
      ['Promise.resolve().then(() => Promise.resolve()).then(() => { for (;;) {} }); return 2', '2'],
      ['await t(); (async () => { for (let i = 0; i < 5; i++) await null; for (;;) {} })(); return 3', '3'],
    ] as const) {
      const out = await engine.execute(code, {
        bindings: ['t'],
        onCall: async () => ok(),
        limits: { timeoutMs: 5_000 },
      });
      // A leftover that held the host's thread would end the run as timeout, with no value.
      expect(out.valueJson).toBe(value);
      expect(out.failure).toBeUndefined();
    }
  });
});

describe('memory', () => {
  it('defaults to a 512 MiB heap; past its heap limit the run ends as worker-exit with cause memory', async () => {
    expect(DEFAULT_MEMORY_MB).toBe(512);
    const out = await engine.execute(
      'console.log("start"); const keep = []; for (;;) keep.push("x".repeat(1 << 20) + keep.length);',
      { limits: { memoryMb: 64, timeoutMs: 20_000 } },
    );
    expect(out.status).toBe('failed');
    expect(out.failure).toEqual({
      kind: 'worker-exit',
      cause: 'memory',
      message: 'the program exceeded its heap limit of 64 MiB',
    });
    expect(out.logs).toEqual([{ level: 'log', text: 'start' }]);
  });
});

describe('the output cap', () => {
  it('is 64 MiB by default, shared by log lines and the returned value', () => {
    expect(DEFAULT_OUTPUT_BYTES).toBe(67_108_864);
  });

  it('past the cap, keeps the fitting part of the output and fails with output-limit', async () => {
    const out = await engine.execute(
      'console.log("a".repeat(600)); console.log("é".repeat(300)); console.log("never"); return 1',
      { limits: { outputBytes: 1000 } },
    );
    expect(out.status).toBe('failed');
    expect(out.failure).toEqual({ kind: 'output-limit', message: 'output exceeded the cap of 1000 bytes' });
    expect(out.outputTruncated).toBe(true);
    expect(out.logs.map((l) => l.text)).toEqual(['a'.repeat(600), 'é'.repeat(200)]);
    expect(renderResultText(out)).toBe(
      `code run failed (output-limit): output exceeded the cap of 1000 bytes\n\nCaptured output:\n${'a'.repeat(600)}\n${'é'.repeat(200)}`,
    );
  });

  it('counts the returned value against the same cap', async () => {
    const fits = await engine.execute('console.log("x".repeat(500)); return "y".repeat(400)', {
      limits: { outputBytes: 1000 },
    });
    expect(fits.status).toBe('completed');
    const over = await engine.execute('console.log("x".repeat(500)); return "y".repeat(600)', {
      limits: { outputBytes: 1000 },
    });
    expect(over.failure).toEqual({ kind: 'output-limit', message: 'output exceeded the cap of 1000 bytes' });
    expect(over.logs).toEqual([{ level: 'log', text: 'x'.repeat(500) }]);
  });
});

describe("the output cap, Code Mode's way (outputCap: 'separate')", () => {
  it('keeps the most log text it may and lets the program go on', async () => {
    const out = await engine.execute(
      'for (let i = 0; i < 50; i++) console.log("line " + i); return "finished"',
      { limits: { outputBytes: 40, outputCap: 'separate' } },
    );
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBe('"finished"');
    expect(out.outputTruncated).toBe(true);
    expect(out.logs.map((l) => l.text)).toEqual([
      'line 0',
      'line 1',
      'line 2',
      'line 3',
      'line 4',
      'line 5',
      'line',
    ]);
  });

  it('a returned value larger than outputBytes fails with output-limit; logs do not count against it', async () => {
    const fits = await engine.execute('console.log("x".repeat(30)); return "y".repeat(30)', {
      limits: { outputBytes: 40, outputCap: 'separate' },
    });
    expect(fits.status).toBe('completed');
    expect(fits.outputTruncated).toBe(false);
    const over = await engine.execute('return "y".repeat(60)', {
      limits: { outputBytes: 40, outputCap: 'separate' },
    });
    expect(over.failure).toEqual({ kind: 'output-limit', message: 'output exceeded the cap of 40 bytes' });
  });

  it('caps outputBytes at 64 MiB', async () => {
    const out = await engine.execute('for (;;) console.log("x".repeat(1 << 20))', {
      limits: { outputBytes: 10 * 67_108_864, timeoutMs: 30_000 },
    });
    expect(out.failure).toEqual({
      kind: 'output-limit',
      message: 'output exceeded the cap of 67108864 bytes',
    });
  });
});
