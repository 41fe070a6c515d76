/**
 * A run's start as the engine drives it (run.ts), against a stand-in for its sandbox host: the
 * program's frame is written before the run's abort listener is added (both in one turn, so no
 * abort can come between), and the listener still ends the run and is taken off at its end.
 * Read as an order of calls, never from time.
 */
import { describe, expect, it } from 'vitest';
import type { HostProcess } from './host-process.ts';
import { Run } from './run.ts';
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

function params(signal: AbortSignal): RunParams {
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
    readResident: () => undefined,
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
