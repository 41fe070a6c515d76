import { RUN_CODE_LIMITS } from '@islet/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep } from '../test/processes.ts';
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
import type { BindingCall, BindingOutcome, Engine, ExecuteOptions, ProcessEvent } from './types.ts';

const engine = createEngine();
afterAll(() => engine.close());

const ok = (valueJson = '"ok"'): BindingOutcome => ({ type: 'result', valueJson });

/**
 * Runs `code` (it calls `t`, prints "spinning", then never yields) on `engine`, aborting 50 ms
 * after the call: the run ends as an abort with its line kept, and its host is killed (`events`).
 */
async function abortedSpinning(
  engine: Engine,
  events: ProcessEvent[],
  code: string,
  limits: ExecuteOptions['limits'],
): Promise<void> {
  const ac = new AbortController();
  const before = events.length;
  const out = await engine.execute(code, {
    signal: ac.signal,
    limits,
    bindings: ['t'],
    onCall: async () => {
      setTimeout(() => ac.abort('user pressed stop'), 50);
      return ok();
    },
  });
  expect(out.failure).toEqual({ kind: 'abort', message: 'the run was aborted: user pressed stop' });
  expect(out.logs).toEqual([{ level: 'log', text: 'spinning' }]);
  expect(events.slice(before).filter((e) => e.type === 'retired')).toEqual([
    expect.objectContaining({ type: 'retired', reason: 'killed' }),
  ]);
}

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

describe('abort', () => {
  it('an AbortSignal ends the run as abort and keeps the output', async () => {
    const ac = new AbortController();
    const out = await engine.execute('console.log("working"); await t(); for (;;) {}', {
      signal: ac.signal,
      bindings: ['t'],
      onCall: async () => {
        // The program is running (it printed and called); abort while it spins.
        setTimeout(() => ac.abort(), 100);
        return ok();
      },
    });
    expect(out.failure).toEqual({ kind: 'abort', message: 'the run was aborted' });
    expect(out.logs).toEqual([{ level: 'log', text: 'working' }]);
    expect(renderResultText(out)).toBe(
      'code run failed (abort): the run was aborted\n\nCaptured output:\nworking',
    );
  });

  it('an abort ends a first turn that never yields at once (its host is replaced), keeping the output', async () => {
    // The first turn runs on the host's own thread, which reads nothing until it returns: the
    // engine kills the host instead of waiting for its deadline (none, or a minute) or the
    // watchdog, and still reads what the host wrote before. The call goes out with the line
    // printed after it (one write): the abort comes once both were written. This engine's
    // watchdog grace outlasts the test, so only the kill can end these runs in time, and the
    // kill is what the process events report.
    const events: ProcessEvent[] = [];
    const patient = createEngine({ watchdogGraceMs: 3_600_000, onProcessEvent: (e) => events.push(e) });
    try {
      for (const timeoutMs of [null, 60_000])
        await abortedSpinning(patient, events, 't(); console.log("spinning"); for (;;) {}', { timeoutMs });
    } finally {
      await patient.close();
    }
    // A timed abort, whether or not the line was out by then: the same kind.
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 150);
    const spun = await engine.execute('console.log("spinning"); for (;;) {}', { signal: ac.signal });
    expect(spun.failure?.kind).toBe('abort');
    expect((await engine.execute('return 7')).valueJson).toBe('7');
  });

  it("a later turn on the host's thread that never yields: its own deadline, or the host ended after an abort's grace", async () => {
    // A call's outcome, delivered while the clock runs, starts its turn on the host's own thread
    // (no hop to isolated-vm's), which reads nothing until that turn returns. The deadline is the
    // turn's own; an abort or a stop waits a short grace for the `end` to be read, then ends the
    // host, as in the first turn. This engine's watchdog outlasts the test: only these end the runs.
    const events: ProcessEvent[] = [];
    const patient = createEngine({ watchdogGraceMs: 3_600_000, onProcessEvent: (e) => events.push(e) });
    try {
      const timed = await patient.execute('await t(); console.log("spinning"); for (;;) {}', {
        limits: { timeoutMs: 400 },
        bindings: ['t'],
        onCall: async () => ok(),
      });
      expect(timed.failure).toEqual({ kind: 'timeout', message: deadlineMessage(400) });
      expect(timed.logs).toEqual([{ level: 'log', text: 'spinning' }]);

      for (const timeBudget of ['elapsed', 'excluding-binding-waits'] as const)
        await abortedSpinning(patient, events, 'await t(); console.log("spinning"); for (;;) {}', {
          timeoutMs: 60_000,
          timeBudget,
        });

      // A stop for a call made in a busy later turn: stopped at that call, the host ended.
      let n = 0;
      const stopped = await patient.execute('await t(); t(); console.log("spinning"); for (;;) {}', {
        limits: { timeoutMs: 60_000 },
        bindings: ['t'],
        onCall: async () =>
          n++ === 0 ? ok() : ({ type: 'stop', code: 'cancelled', message: 'not allowed' } as const),
      });
      expect(stopped.status).toBe('stopped');
      expect(stopped.stop).toEqual({ code: 'cancelled', message: 'not allowed', atCall: 1 });
      expect(stopped.logs).toEqual([{ level: 'log', text: 'spinning' }]);
      expect((await patient.execute('return 7')).valueJson).toBe('7');
    } finally {
      await patient.close();
    }
  });

  it('keeps the order of many lines and calls printed in the first turn and after it', async () => {
    const seen: number[] = [];
    const out = await engine.execute(
      'for (let i = 0; i < 300; i++) { console.log(String(i)); if (i % 50 === 0) t(i); } await t(-1); for (let i = 300; i < 600; i++) console.log(String(i)); return 1',
      {
        bindings: ['t'],
        onCall: async (call) => {
          seen.push(JSON.parse(call.argsJson) as number);
          return ok();
        },
      },
    );
    expect(out.valueJson).toBe('1');
    expect(out.logs.map((l) => l.text)).toEqual(Array.from({ length: 600 }, (_, i) => String(i)));
    expect(seen).toEqual([0, 50, 100, 150, 200, 250, -1]);
  });

  it('aborts while the program waits on a binding, and before the run starts', async () => {
    const ac = new AbortController();
    let handlerDone = false;
    const out = await engine.execute('await t()', {
      bindings: ['t'],
      signal: ac.signal,
      onCall: async () => {
        ac.abort('user pressed stop');
        await sleep(3000);
        handlerDone = true;
        return ok();
      },
    });
    expect(out.failure).toEqual({ kind: 'abort', message: 'the run was aborted: user pressed stop' });
    expect(handlerDone).toBe(false);
    const early = await engine.execute('return 1', { signal: AbortSignal.abort() });
    expect(early.failure?.kind).toBe('abort');
  });
});

describe('unfinished calls', () => {
  it('calls already started (handed to onCall) settle before the run closes; their results are discarded', async () => {
    const settled: number[] = [];
    const out = await engine.execute('t(1); t(2); return "done"', {
      bindings: ['t'],
      onCall: async (call) => {
        await sleep(300);
        settled.push(call.index);
        return ok();
      },
    });
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBe('"done"');
    expect(settled).toEqual([0, 1]);
    expect(out.durationMs).toBeGreaterThanOrEqual(290);
    expect(out.calls.map((c) => [c.index, c.outcome?.type, c.dropped])).toEqual([
      [0, 'result', undefined],
      [1, 'result', undefined],
    ]);
  });

  it('by default 128 calls are in flight at once: a Promise.all over a page of 100 goes out in one wave', async () => {
    let started = 0;
    let inFlight = 0;
    let most = 0;
    const held: (() => void)[] = [];
    let open = false;
    const releaseAll = () => {
      open = true;
      for (const r of held.splice(0)) r();
    };
    // With a lower cap the 128th never starts: the timer ends the wait and `most` tells.
    const fallback = setTimeout(releaseAll, 3000);
    const out = await engine.execute(
      'const xs = await Promise.all(Array.from({ length: 130 }, (_, i) => t(i))); return xs.length',
      {
        bindings: ['t'],
        onCall: async () => {
          started++;
          most = Math.max(most, ++inFlight);
          if (!open)
            await new Promise<void>((resolve) => {
              held.push(resolve);
              if (held.length === 128) releaseAll();
            });
          inFlight--;
          return ok('1');
        },
      },
    );
    clearTimeout(fallback);
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBe('130');
    expect(most).toBe(128);
    expect(started).toBe(130);
  });

  it('calls queued but never started are dropped, never run', async () => {
    const started: BindingCall[] = [];
    const out = await engine.execute('t(1); t(2); t(3); return "done"', {
      bindings: ['t'],
      limits: { maxConcurrentCalls: 1 },
      onCall: async (call) => {
        started.push(call);
        await sleep(100);
        return ok();
      },
    });
    expect(out.status).toBe('completed');
    expect(started.map((c) => c.argsJson)).toEqual(['1']);
    expect(out.calls.map((c) => [c.argsJson, c.outcome?.type, c.dropped])).toEqual([
      ['1', 'result', undefined],
      ['2', undefined, true],
      ['3', undefined, true],
    ]);
  });

  it('a call the program would make after it returned never starts', async () => {
    const started: string[] = [];
    const out = await engine.execute('t("first").then(() => t("second")); return 1', {
      bindings: ['t'],
      onCall: async (call) => {
        started.push(call.argsJson);
        await sleep(100);
        return ok();
      },
    });
    expect(out.status).toBe('completed');
    await sleep(200);
    expect(started).toEqual(['"first"']);
  });

  it('the deadline still applies while started calls settle', async () => {
    const out = await engine.execute('t(); return 1', {
      bindings: ['t'],
      limits: { timeoutMs: 300 },
      onCall: () => new Promise<BindingOutcome>(() => {}),
    });
    expect(out.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (300ms)' });
  });
});

describe('stop outcomes', () => {
  /** Call 1 is stopped (a decision to wait for); any other settles after 300 ms. */
  const stopAtSecondCall = async (call: BindingCall): Promise<BindingOutcome> => {
    if (call.index === 1) return { type: 'stop', code: 'suspended', message: 'waiting for a decision' };
    await sleep(300);
    return ok();
  };

  it('a stop ends the run as stopped at that call; no further onCall; started calls settle; logs kept', async () => {
    const started: number[] = [];
    const out = await engine.execute(
      `console.log("before");
       const slow = t("slow");
       try { await t("decide") } catch (e) { console.log("caught", e.name) }
       console.log("after");
       await t("later");
       return 1;`,
      {
        bindings: ['t'],
        onCall: async (call) => {
          started.push(call.index);
          return stopAtSecondCall(call);
        },
      },
    );
    expect(out.status).toBe('stopped');
    expect(out.stop).toEqual({ code: 'suspended', message: 'waiting for a decision', atCall: 1 });
    expect(out.failure).toBeUndefined();
    expect(started).toEqual([0, 1]);
    expect(out.logs).toEqual([{ level: 'log', text: 'before' }]);
    expect(out.calls[0]!.outcome).toEqual(ok());
    expect(out.calls[1]!.outcome).toEqual({
      type: 'stop',
      code: 'suspended',
      message: 'waiting for a decision',
    });
    expect(renderResultText(out)).toBe(
      'code run failed (abort): waiting for a decision\n\nCaptured output:\nbefore',
    );
    // The engine serves the next run normally.
    expect((await engine.execute('return 2')).valueJson).toBe('2');
  });

  it('a stop for a call the first turn made ends a program that never yields, at once', async () => {
    // The line printed after the call takes the call along before the turn returns; the turn then
    // spins on the host's own thread, which reads no `end`: the engine ends its host instead.
    // A call started before it still settles before the run closes. Waiting for the watchdog
    // instead would end it as a worker-exit failure, which `failure: undefined` refuses.
    const out = await engine.execute(
      't("slow").catch(() => undefined); t("decide").catch(() => undefined); console.log("asked"); for (;;) {}',
      { bindings: ['t'], onCall: stopAtSecondCall },
    );
    expect(out.status).toBe('stopped');
    expect(out.stop).toEqual({ code: 'suspended', message: 'waiting for a decision', atCall: 1 });
    expect(out.failure).toBeUndefined();
    expect(out.logs).toEqual([{ level: 'log', text: 'asked' }]);
    expect(out.calls[0]!.outcome).toEqual(ok());
    expect((await engine.execute('return 2')).valueJson).toBe('2');
  });

  it('replay-mismatch and cancelled stop the same way', async () => {
    for (const code of ['replay-mismatch', 'cancelled'] as const) {
      const out = await engine.execute('await t(); return 1', {
        bindings: ['t'],
        onCall: async () => ({ type: 'stop', code, message: code }),
      });
      expect(out.status).toBe('stopped');
      expect(out.stop).toEqual({ code, message: code, atCall: 0 });
    }
  });
});
