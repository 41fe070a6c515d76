/**
 * When a run inside the sandbox host reports its end (HostRun): a program that ends in its first
 * turn is reported from inside that turn, its isolate already stopped, before V8 tears the isolate
 * down; a program that ends in a later turn is reported once that turn's work settled. Real
 * isolated-vm and the real harness, prepared as host.ts prepares them; frames go to a recorder.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { afterEach, describe, expect, it } from 'vitest';
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
  const g = context.global;
  g.setSync(
    '__islet_log',
    new ivm.Callback((l: unknown, t: unknown) => sink.run?.onLog(l, t), { ignored: true }),
  );
  g.setSync(
    '__islet_log_wait',
    new ivm.Callback((l: unknown, t: unknown) => sink.run?.onLog(l, t), { sync: true }),
  );
  const call = (i: unknown, b: unknown, a: unknown) => sink.run?.onCall(i, b, a);
  g.setSync('__islet_call', new ivm.Callback(call, { ignored: true }));
  g.setSync('__islet_call_wait', new ivm.Callback(call, { sync: true }));
  const done = (k: unknown, a: unknown, b: unknown) => sink.run?.onDone(k, a, b);
  g.setSync('__islet_done', new ivm.Callback(done, { sync: true }));
  g.setSync(
    '__islet_fail',
    new ivm.Callback((m: unknown, d: unknown) => sink.run?.onFail(m, d), { sync: true }),
  );
  context.evalSync(HARNESS);
  const startRef = g.getSync('__islet_start', { reference: true }) as ivm.Reference;
  const deliver = g.getSync('__islet_deliver', { reference: true }) as ivm.Reference;
  return { isolate, context, startRef, deliver, memoryMb: 64, sink };
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
function firstTurn(code: string, bindings?: string[]) {
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
    flush: () => undefined,
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
