/**
 * How a run ends before its program does, through `execute` on real sandbox hosts: an abort (before
 * the run, in a first turn or a later one that never yields, while a call waits), calls started,
 * queued or never made when the program ends, a binding handler's stop. The limits themselves:
 * limits.test.ts. Shared helpers: test/run-helpers.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sleep } from '../test/processes.ts';
import { ok } from '../test/run-helpers.ts';
import { createEngine, deadlineMessage, renderResultText } from './index.ts';
import type { BindingCall, BindingOutcome, Engine, ExecuteOptions, ProcessEvent } from './types.ts';

const engine = createEngine();
afterAll(() => engine.close());

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
