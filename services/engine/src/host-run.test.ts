/**
 * When a run inside the sandbox host reports its end (HostRun): a program that ends in its first
 * turn is reported from inside that turn, its isolate already stopped, before V8 tears the isolate
 * down; a program that ends in a later turn is reported once that turn's work settled. Real
 * isolated-vm and the real harness, prepared as host.ts prepares them; frames go to a recorder.
 */
import { createHook } from 'node:async_hooks';
import fs, { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FrameReader } from './frame.ts';
import { installHarness } from './harness-install.ts';
import { HostRun, type Prepared } from './host-run.ts';
import type { FromHost, ToHost } from './wire.ts';

const HARNESS = readFileSync(new URL('./guest/harness.js', import.meta.url), 'utf8');
const isolates: ivm.Isolate[] = [];
afterEach(() => {
  for (const i of isolates.splice(0)) if (!i.isDisposed) i.dispose();
});

function prepare(): Prepared {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  isolates.push(isolate);
  const context = isolate.createContextSync();
  const sink: Prepared['sink'] = { run: undefined };
  const { entry } = installHarness(isolate, context, HARNESS, {
    log: (l, t) => sink.run?.onLog(l, t),
    call: (i, b, a) => sink.run?.onCall(i, b, a),
    done: (k, a, b) => sink.run?.onDone(k, a, b),
    fail: (m, d) => sink.run?.onFail(m, d),
  });
  return { isolate, context, entry, memoryMb: 64, sink };
}

function runMessage(code: string, bindings: string[] = []): Extract<ToHost, { t: 'run' }> {
  return {
    t: 'run',
    code,
    config: { bindings, clockMs: 0, seed: 's' },
    memoryMb: 64,
    outputBytes: 1024 * 1024,
    outputCap: 'shared',
    budgetMs: 5000,
  };
}

/** Runs `code`'s first turn and records, in order, each frame (with whether the isolate was disposed then), the turn's return and `onFinished`. */
function firstTurn(code: string, bindings?: string[], flushes = false) {
  const prepared = prepare();
  const events: string[] = [];
  const frames: FromHost[] = [];
  let finished: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    finished = resolve;
  });
  const out = {
    send: (m: FromHost) => {
      frames.push(m);
      events.push(`${m.t}${prepared.isolate.isDisposed ? ' (isolate disposed)' : ''}`);
    },
    flush: () => {
      if (flushes) events.push('flush');
    },
  };
  const run = new HostRun(
    runMessage(code, bindings),
    prepared,
    () => {
      events.push('finished');
      finished();
    },
    out,
  );
  run.start();
  events.push('first turn returned');
  return { run, events, frames, ended, prepared };
}

describe('a run reports its end', () => {
  it('from inside its first turn when it ended there: the isolate is stopped, then done, then the turn unwinds', async () => {
    const { events, frames, ended, prepared } = firstTurn('console.log("hi"); return [1, 2, 3].length * 4;');
    await ended;
    expect(events).toEqual(['logs', 'done (isolate disposed)', 'finished', 'first turn returned']);
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '12' });
    expect(prepared.isolate.isDisposed).toBe(true);
  });

  it('from inside its first turn also when work it left behind spins: that work never runs again', async () => {
    const { events, frames, ended } = firstTurn('(async () => { for (;;) await null; })(); return 1;');
    await ended;
    expect(events).toEqual(['done (isolate disposed)', 'finished', 'first turn returned']);
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '1' });
  });

  it('after the turn that ended it settled, when that is a later turn (a call result)', async () => {
    const { run, events, frames, ended } = firstTurn('return (await apps.a.b({})).n + 1;', ['a.b']);
    expect(events).toEqual(['call', 'turn', 'first turn returned']);
    run.deliverResult({ t: 'result', id: 0, valueJson: '{"n":41}' });
    await ended;
    expect(events.slice(3)).toEqual(['done (isolate disposed)', 'finished']);
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '42' });
  });
});

describe("the error isolated-vm throws when a turn on the host's thread disposes the isolate", () => {
  /** Calls of Node's stack formatting (Error.prepareStackTrace) while `fn` runs; the limit after. */
  function formatted(fn: () => void): { calls: number; limitAfter: number } {
    let calls = 0;
    const saved = Error.prepareStackTrace;
    const limit = Error.stackTraceLimit;
    Error.prepareStackTrace = (e) => {
      calls++;
      return String(e);
    };
    try {
      fn();
      return { calls, limitAfter: Error.stackTraceLimit };
    } finally {
      Error.prepareStackTrace = saved;
      Error.stackTraceLimit = limit;
    }
  }

  it('gets no stack to format: the first turn, and a later one on the host thread, end with none formatted', async () => {
    // With Error.stackTraceLimit 0 (until round 39) isolated-vm read back an empty stack, formatted once a run.
    const limit = Error.stackTraceLimit;
    let first: ReturnType<typeof firstTurn> | undefined;
    const a = formatted(() => {
      first = firstTurn('return [1, 2, 3].length;');
    });
    expect(a).toEqual({ calls: 0, limitAfter: limit });
    expect(first!.events).toEqual(['done (isolate disposed)', 'finished', 'first turn returned']);
    expect(first!.frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '3' });

    const later = firstTurn('return (await apps.a.b({})).n + 1;', ['a.b']);
    const b = formatted(() =>
      later.run.deliverResult({ t: 'result', id: 0, valueJson: '{"n":1}', turnMs: 5000 }),
    );
    expect(b).toEqual({ calls: 0, limitAfter: limit });
    expect(later.frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '2' });
    await later.ended;
  });
});

describe("a call's outcome starts the next turn", () => {
  it("with turnMs on the host thread: the next call and the turn's return are out before the delivery returns", () => {
    const { run, events, frames } = firstTurn(
      'let n = 0; for (let i = 0; i < 3; i++) n += (await apps.a.b({ i })).n; console.log("sum", n); return n;',
      ['a.b'],
    );
    expect(events).toEqual(['call', 'turn', 'first turn returned']);
    run.deliverResult({ t: 'result', id: 0, valueJson: '{"n":1}', turnMs: 5000 });
    // No thread hop: the program ran up to its next call inside this very call.
    expect(events.slice(3)).toEqual(['call', 'turn']);
    expect(frames.at(-2)).toMatchObject({ t: 'call', id: 1, binding: 'a.b', argsJson: '{"i":1}' });
    run.deliverResult({ t: 'error', id: 1, name: 'E', message: 'no', detailsJson: '{}', turnMs: 5000 });
    // An error outcome rejects the await; the program's throw ends the run in that same turn.
    expect(events.slice(5)).toEqual(['done (isolate disposed)', 'finished']);
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'failed', kind: 'exception' });
  });

  it("with turnMs: the lines printed after the turn's last call go out with its return, and its end is reported in it", () => {
    const { run, events, frames } = firstTurn(
      'const a = await apps.a.b({}); console.log("got", a.n); const b = await apps.a.b({}); console.log("again"); return a.n + b.n;',
      ['a.b'],
    );
    run.deliverResult({ t: 'result', id: 0, valueJson: '{"n":1}', turnMs: 5000 });
    expect(events.slice(3)).toEqual(['logs', 'call', 'turn']);
    run.deliverResult({ t: 'result', id: 1, valueJson: '{"n":2}', turnMs: 5000 });
    expect(events.slice(6)).toEqual(['logs', 'done (isolate disposed)', 'finished']);
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '3' });
  });

  it('with turnMs, a turn that outlives it ends the run as timeout from inside that turn', () => {
    const { run, events, frames } = firstTurn('await apps.a.b({}); console.log("spin"); for (;;) {}', [
      'a.b',
    ]);
    run.deliverResult({ t: 'result', id: 0, valueJson: '1', turnMs: 50 });
    expect(events.slice(3)).toEqual(['logs', 'done (isolate disposed)', 'finished']);
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'failed', kind: 'timeout' });
  });

  it("without turnMs on isolated-vm's thread: nothing is out when the delivery returns, and no `turn` follows", async () => {
    const { run, events, frames, ended } = firstTurn(
      'const a = await apps.a.b({}); const b = await apps.a.b({}); return a + b;',
      ['a.b'],
    );
    run.deliverResult({ t: 'result', id: 0, valueJson: '1' });
    expect(events.slice(3)).toEqual([]);
    await waitFor(() => frames.length === 3);
    expect(frames.at(-1)).toMatchObject({ t: 'call', id: 1 });
    // The next one with turnMs, while none is on isolated-vm's thread any more: on this thread.
    run.deliverResult({ t: 'result', id: 1, valueJson: '2', turnMs: 5000 });
    await ended;
    expect(events.slice(3)).toEqual(['call', 'done (isolate disposed)', 'finished']);
  });

  it("with turnMs while an earlier delivery is still on isolated-vm's thread: queued behind it, in order, and answered", async () => {
    const { run, frames } = firstTurn(
      'const [a, b] = await Promise.all([apps.a.b({}), apps.a.b({})]); await apps.a.b([a, b]);',
      ['a.b'],
    );
    run.deliverResult({ t: 'result', id: 0, valueJson: '"x"' });
    run.deliverResult({ t: 'result', id: 1, valueJson: '"y"', turnMs: 5000 });
    expect(frames.length).toBe(3);
    await waitFor(() => frames.length === 5);
    expect(frames.slice(3)).toEqual([
      { t: 'call', id: 2, binding: 'a.b', argsJson: '["x","y"]' },
      { t: 'turn' },
    ]);
  });
});

async function waitFor(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
}

describe('a turn on the host thread is written', () => {
  it('with its calls at its return; one that made no call and printed nothing leaves its `turn` for the next write', () => {
    const { run, events } = firstTurn(
      'const [a, b] = await Promise.all([apps.a.b({}), apps.a.b({})]); await apps.a.b([a, b]);',
      ['a.b'],
      true,
    );
    expect(events).toEqual(['call', 'call', 'turn', 'flush', 'first turn returned']);
    run.deliverResult({ t: 'result', id: 0, valueJson: '"x"', turnMs: 5000 });
    expect(events.slice(5)).toEqual(['turn']);
    run.deliverResult({ t: 'result', id: 1, valueJson: '"y"', turnMs: 5000 });
    expect(events.slice(6)).toEqual(['call', 'turn', 'flush']);
  });
});

describe('a call on the host thread', () => {
  it("makes no timer on its path: its frame goes out at its turn's return (real output, stdout captured)", async () => {
    const writes: Buffer[] = [];
    const write = vi
      .spyOn(process.stdout, 'write')
      .mockImplementation((chunk: string | Uint8Array) => writes.push(Buffer.from(chunk)) > 0);
    // Frames go straight to fd 1 while stdout's stream holds nothing (host-output.ts).
    const writeSync = fs.writeSync;
    const direct = vi.spyOn(fs, 'writeSync').mockImplementation(((
      fd: number,
      chunk: Uint8Array,
      ...rest: never[]
    ) => {
      if (fd !== 1) return writeSync(fd, chunk, ...rest);
      writes.push(Buffer.from(chunk));
      return chunk.length;
    }) as typeof fs.writeSync);
    let timers = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'Timeout') timers++;
      },
    });
    const prepared = prepare();
    const run = new HostRun(
      runMessage('let n = 0; for (let i = 0; i < 4; i++) n += (await apps.a.b({ i })).n; return n;', ['a.b']),
      prepared,
      () => undefined,
    );
    let ended: () => void = () => undefined;
    const done = new Promise<void>((r) => {
      ended = r;
    });
    try {
      hook.enable();
      run.start();
      for (let id = 0; id < 3; id++)
        run.deliverResult({ t: 'result', id, valueJson: '{"n":1}', turnMs: 5000 });
      hook.disable();
      // One: the run's memory poll, armed as its first turn returned with the run going on.
      expect(timers).toBe(1);
    } finally {
      hook.disable();
      // Ended while stdout is still captured: its `done` is written after a turn of the loop.
      run.end('stop');
      setImmediate(() => setImmediate(ended));
      await done;
      write.mockRestore();
      direct.mockRestore();
    }
    writes.pop();
    // Each turn's call and return went out in one write, in order.
    const frames = writes.map((w) => {
      const out: unknown[] = [];
      const reader = new FrameReader((e) => e.type === 'message' && out.push(e.message));
      reader.push(w);
      return out.map((m) => (m as FromHost).t).join(',');
    });
    expect(frames).toEqual(['call,turn', 'call,turn', 'call,turn', 'call,turn']);
  });
});

describe('a run waiting on a call', () => {
  it("polls its isolate's disposal a few times a second, not every 20 ms (a later turn reports its own)", async () => {
    // Fake intervals only: a second passes on the poll's own clock, whatever the machine's load.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    let ticks = 0;
    const fake = globalThis.setInterval;
    const armed = vi.spyOn(globalThis, 'setInterval').mockImplementation(((fn: () => void, ms?: number) =>
      fake(() => {
        ticks++;
        fn();
      }, ms)) as typeof setInterval);
    try {
      const { run, ended, frames } = firstTurn('return (await apps.a.b({})).n + 1;', ['a.b']);
      expect(armed).toHaveBeenCalledTimes(1);
      vi.advanceTimersByTime(1000);
      // The base's 20 ms poll: 50 in that second. Still armed (a disposal outside any turn).
      expect(ticks).toBeGreaterThan(0);
      expect(ticks).toBeLessThanOrEqual(4);
      run.deliverResult({ t: 'result', id: 0, valueJson: '{"n":41}' });
      await ended;
      expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '42' });
    } finally {
      armed.mockRestore();
      vi.useRealTimers();
    }
  });
});

describe('a run that ends in its first turn', () => {
  it('makes no timer: its memory is polled only once a first turn returns with the run going on', async () => {
    const made: string[] = [];
    const hook = createHook({
      init(_id, type) {
        if (type === 'Timeout') made.push(type);
      },
    });
    hook.enable();
    try {
      const { ended, frames } = firstTurn('return [1, 2, 3].length * 4;');
      await ended;
      expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '12' });
    } finally {
      hook.disable();
    }
    expect(made).toEqual([]);
  });

  it("formats no stack for the error its isolate's dispose ends the turn with, and puts the limit back", async () => {
    const limit = Error.stackTraceLimit;
    const formatted: number[] = [];
    const before = Error.prepareStackTrace;
    // Node calls a user's prepareStackTrace for every error whose stack is read, with its frames.
    Error.prepareStackTrace = (error, frames) => {
      formatted.push(frames.length);
      return `${String(error)}`;
    };
    try {
      const { ended, frames, prepared } = firstTurn('return [1, 2, 3].length * 4;');
      await ended;
      expect(prepared.isolate.isDisposed).toBe(true);
      expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '12' });
    } finally {
      Error.prepareStackTrace = before;
    }
    expect(formatted.filter((n) => n > 0)).toEqual([]);
    expect(Error.stackTraceLimit).toBe(limit);
  });
});
