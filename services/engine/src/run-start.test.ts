/**
 * A run's start as the engine drives it (run.ts), against a stand-in for its sandbox host: the
 * program's frame is written before the run's abort listener is added (both in one turn, so no
 * abort can come between), and the listener still ends the run and is taken off at its end.
 * The same for a RunCancel handle (ExecuteOptions.cancel): listened to after the write, by no
 * EventTarget listener, ended by an abort with its reason, left at the run's end.
 * Read as an order of calls, never from time.
 */
import { describe, expect, it, vi } from 'vitest';
import { DeadlineWheel } from './deadline-wheel.ts';
import type { HostProcess } from './host-process.ts';
import { ResidentTicker } from './resident-guard.ts';
import { Run } from './run.ts';
import { RunCancel } from './run-cancel.ts';
import type { RunParams } from './run-params.ts';
import type { FromHost, ToHost } from './wire.ts';

interface Events {
  onMessage(m: FromHost): void;
}

function standIn(order: string[]) {
  const sent: ToHost[] = [];
  let events: Events | undefined;
  const host = {
    exited: false,
    attach(e: Events | undefined) {
      events = e;
    },
    send(m: ToHost) {
      order.push(`send ${m.t}`);
      sent.push(m);
      return true;
    },
    kill() {
      order.push('kill');
    },
    whenClosed: () => Promise.resolve(),
  } as unknown as HostProcess;
  return { host, sent, message: (m: FromHost) => events?.onMessage(m) };
}

function params(signal: AbortSignal | undefined, cancel?: RunCancel): RunParams {
  return {
    code: 'return 1',
    config: { bindings: [], clockMs: 0, seed: 's' },
    onCall: undefined,
    timeoutMs: 5000,
    spentMs: 0,
    excludeBindingWaits: false,
    memoryMb: 64,
    outputBytes: 65_536,
    outputCap: 'shared',
    maxConcurrentCalls: 4,
    watchdogGraceMs: 1000,
    signal,
    cancel,
    readResident: () => undefined,
    residentTicker: new ResidentTicker(),
    deadlines: new DeadlineWheel(),
  };
}

function watched(order: string[]) {
  const controller = new AbortController();
  const { signal } = controller;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<typeof add>) => {
    order.push(`listen ${args[0]}`);
    add(...args);
  }) as typeof signal.addEventListener;
  signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
    order.push(`unlisten ${args[0]}`);
    remove(...args);
  }) as typeof signal.removeEventListener;
  return controller;
}

describe("a run's start", () => {
  it('writes the program before it listens for an abort, and a completed run stops listening', async () => {
    const order: string[] = [];
    const controller = watched(order);
    const { host, message } = standIn(order);
    const result = new Run(host, params(controller.signal)).execute();
    expect(order).toEqual(['send run', 'listen abort']);
    message({ t: 'done', status: 'completed', valueJson: '1' });
    const { outcome } = await result;
    expect(outcome.status).toBe('completed');
    expect(order).toEqual(['send run', 'listen abort', 'unlisten abort']);
  });

  it('an abort after the program was written still ends the run (in its first turn, by its host)', async () => {
    const order: string[] = [];
    const controller = watched(order);
    const { host } = standIn(order);
    const result = new Run(host, params(controller.signal)).execute();
    controller.abort();
    const { outcome } = await result;
    expect(order.slice(0, 3)).toEqual(['send run', 'listen abort', 'kill']);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('abort');
  });

  it('a signal aborted before the start writes nothing', async () => {
    const order: string[] = [];
    const controller = watched(order);
    controller.abort();
    const { host, sent } = standIn(order);
    const { outcome } = await new Run(host, params(controller.signal)).execute();
    expect(sent).toEqual([]);
    expect(outcome.failure?.kind).toBe('abort');
  });
});

/** A handle whose `listen`/`unlisten` are recorded in `order`. */
function watchedCancel(order: string[]): RunCancel {
  const cancel = new RunCancel();
  const listen = cancel.listen.bind(cancel);
  const unlisten = cancel.unlisten.bind(cancel);
  cancel.listen = (fn) => {
    order.push('listen cancel');
    listen(fn);
  };
  cancel.unlisten = (fn) => {
    order.push('unlisten cancel');
    unlisten(fn);
  };
  return cancel;
}

/** Counts EventTarget listeners added to any AbortSignal while `fn` runs. */
async function abortListeners<T>(fn: () => Promise<T>): Promise<{ added: number; value: T }> {
  const proto = EventTarget.prototype;
  const add = proto.addEventListener;
  let added = 0;
  proto.addEventListener = function (this: EventTarget, ...args: Parameters<typeof add>) {
    if (this instanceof AbortSignal) added++;
    return add.apply(this, args);
  };
  try {
    const value = await fn();
    return { added, value };
  } finally {
    proto.addEventListener = add;
  }
}

describe("a run's start with a cancel handle", () => {
  it('listens after the program is written, adds no EventTarget listener, stops listening at its end', async () => {
    const order: string[] = [];
    const cancel = watchedCancel(order);
    const { host, message } = standIn(order);
    const { added, value: outcome } = await abortListeners(async () => {
      const result = new Run(host, params(undefined, cancel)).execute();
      expect(order).toEqual(['send run', 'listen cancel']);
      message({ t: 'done', status: 'completed', valueJson: '1' });
      return (await result).outcome;
    });
    expect(outcome.status).toBe('completed');
    expect(added).toBe(0);
    expect(order).toEqual(['send run', 'listen cancel', 'unlisten cancel']);
    // Aborted after the run's end: nothing is told (the host is not killed).
    cancel.abort('late');
    expect(order).toEqual(['send run', 'listen cancel', 'unlisten cancel']);
  });

  it('an abort after the program was written ends the run with its reason (by its host, in its first turn)', async () => {
    const order: string[] = [];
    const cancel = watchedCancel(order);
    const { host } = standIn(order);
    const result = new Run(host, params(undefined, cancel)).execute();
    cancel.abort(new Error('the lease was lost'));
    const { outcome } = await result;
    expect(order.slice(0, 3)).toEqual(['send run', 'listen cancel', 'kill']);
    expect(outcome.failure?.kind).toBe('abort');
    expect(outcome.failure?.message).toBe('the run was aborted: the lease was lost');
  });

  it("an abort's text is a signal's: an AbortError reason gives the plain text", async () => {
    const cancel = new RunCancel();
    const { host } = standIn([]);
    const result = new Run(host, params(undefined, cancel)).execute();
    const controller = new AbortController();
    controller.abort();
    cancel.abort(controller.signal.reason);
    const { outcome } = await result;
    expect(outcome.failure?.message).toBe('the run was aborted');
  });

  it('a handle aborted before the start writes nothing', async () => {
    const cancel = new RunCancel();
    cancel.abort('cancelled');
    const { host, sent } = standIn([]);
    const { outcome } = await new Run(host, params(undefined, cancel)).execute();
    expect(sent).toEqual([]);
    expect(outcome.failure?.kind).toBe('abort');
    expect(outcome.failure?.message).toBe('the run was aborted: cancelled');
  });

  it('aborts once: a second abort keeps the first reason and tells no one again', () => {
    const cancel = new RunCancel();
    let told = 0;
    cancel.listen(() => told++);
    cancel.abort('first');
    cancel.abort('second');
    expect(told).toBe(1);
    expect(cancel.aborted).toBe(true);
    expect(cancel.reason).toBe('first');
  });

  it("arms the deadline's timer after the program's write, and the deadline still ends the run", () => {
    vi.useFakeTimers();
    try {
      const order: string[] = [];
      const { host, sent } = standIn(order);
      const send = host.send.bind(host);
      host.send = ((m: ToHost) => {
        order.push(`timers ${vi.getTimerCount()}`);
        return send(m);
      }) as typeof host.send;
      void new Run(host, params(undefined)).execute();
      // The base armed it first: `timers 1` at the write.
      expect(order).toEqual(['timers 0', 'send run']);
      expect(vi.getTimerCount()).toBeGreaterThanOrEqual(1);
      // The frame carries the whole budget (nothing of it ran before the write).
      expect((sent[0] as { budgetMs?: number }).budgetMs).toBe(5000);
      vi.advanceTimersByTime(4999);
      expect(order).not.toContain('send end');
      // Spent: the host is told to end the run (its first turn keeps its own deadline too).
      vi.advanceTimersByTime(1);
      expect(order).toContain('send end');
    } finally {
      vi.useRealTimers();
    }
  });
});
