/**
 * Outcomes that reach a sandbox host in one read go into the isolate in one entry
 * (`HostRun.deliverResults`, the harness's `__islet_deliver_all`): one `applySync`, so one
 * isolated-vm timeout whose record lives until it would have fired (the run's budget), not one a
 * call (round 34 `par-calls`: ~0.2 KiB a call of host memory). The program gets every outcome, in
 * order, and the engine one `turn` a delivery. Real isolated-vm and the real harness.
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

/** An isolate with the harness, as host.ts prepares it. */
function prepare(): Prepared {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  isolates.push(isolate);
  const context = isolate.createContextSync();
  const sink: Prepared['sink'] = { run: undefined };
  const g = context.global;
  const log = (l: unknown, t: unknown) => sink.run?.onLog(l, t);
  g.setSync('__islet_log', new ivm.Callback(log, { ignored: true }));
  g.setSync('__islet_log_wait', new ivm.Callback(log, { sync: true }));
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
  const deliver = counted(g.getSync('__islet_deliver', { reference: true }) as ivm.Reference);
  const deliverAll = counted(g.getSync('__islet_deliver_all', { reference: true }) as ivm.Reference);
  return { isolate, context, startRef, deliver, deliverAll, memoryMb: 64, sink };
}

/** A reference whose `applySync` calls are counted (an ivm.Reference itself cannot be spied on). */
function counted(ref: ivm.Reference): ivm.Reference & { syncCalls: number } {
  const wrapped = {
    syncCalls: 0,
    applySync: (...args: Parameters<ivm.Reference['applySync']>) => {
      wrapped.syncCalls++;
      return ref.applySync(...args);
    },
    apply: (...args: Parameters<ivm.Reference['apply']>) => ref.apply(...args),
  };
  return wrapped as unknown as ivm.Reference & { syncCalls: number };
}

function started(code: string) {
  const prepared = prepare();
  const frames: FromHost[] = [];
  let finished: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    finished = resolve;
  });
  const run = new HostRun(
    {
      t: 'run',
      code,
      config: { bindings: ['t'], clockMs: 0, seed: 's' },
      memoryMb: 64,
      outputBytes: 1024 * 1024,
      outputCap: 'shared',
      budgetMs: 5000,
    },
    prepared,
    finished,
    { send: (m: FromHost) => frames.push(m), flush: () => undefined },
  );
  run.start();
  const count = (ref: ivm.Reference | undefined) => () => (ref as unknown as { syncCalls: number }).syncCalls;
  const one = count(prepared.deliver);
  const all = count(prepared.deliverAll);
  return { run, frames, ended, one, all };
}

const result = (id: number, n: number): Extract<ToHost, { t: 'result' }> => ({
  t: 'result',
  id,
  valueJson: JSON.stringify({ n }),
  turnMs: 5000,
});

describe('outcomes read together', () => {
  it('go into the isolate in one entry, each to its call, with a turn each', async () => {
    const { run, frames, ended, one, all } = started(
      'const a = await Promise.all([t({}), t({}), t({})]);' +
        'const b = await Promise.all([t({}), t({})]);' +
        'return [...a, ...b].map((x) => x.n).join(",");',
    );
    expect(frames.filter((f) => f.t === 'call')).toHaveLength(3);
    run.deliverResults([result(0, 10), result(1, 11), result(2, 12)]);
    // One entry for three outcomes; the program's next calls came out of it.
    expect(all()).toBe(1);
    expect(one()).toBe(0);
    expect(frames.filter((f) => f.t === 'call')).toHaveLength(5);
    expect(frames.filter((f) => f.t === 'turn')).toHaveLength(1 + 3);
    // An error among them reaches its own call.
    run.deliverResults([
      result(3, 13),
      { t: 'error', id: 4, name: 'AppError', message: 'no', detailsJson: '{}', turnMs: 5000 },
    ]);
    await ended;
    expect(all()).toBe(2);
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'failed' });
    expect(JSON.stringify(frames.at(-1))).toContain('no');
  });

  it('keep their order, and one alone or without a deadline goes in as before', async () => {
    const { run, frames, ended, one, all } = started(
      'const out = []; await Promise.all([0, 1, 2, 3].map(async (i) => out.push((await t({ i })).n)));' +
        'return out.join(",");',
    );
    run.deliverResults([result(0, 0)]);
    expect(one()).toBe(1);
    run.deliverResults([result(2, 2), result(1, 1)]);
    expect(all()).toBe(1);
    // Without `turnMs` (the run's clock paused): one at a time, on isolated-vm's thread.
    run.deliverResults([
      { t: 'result', id: 3, valueJson: '{"n":3}' },
      { t: 'result', id: 3, valueJson: '{"n":3}' },
    ]);
    await ended;
    expect(all()).toBe(1);
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '"0,2,1,3"' });
  });
});
