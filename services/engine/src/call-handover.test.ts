/**
 * How a program's binding calls cross from its isolate to the sandbox host (host.ts, the guest
 * harness): without the isolate's thread waiting (`ignored` callbacks), bounded by a waited
 * hand-over every 64 calls or 1 MiB of arguments. Real isolated-vm, the real harness source.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { afterEach, describe, expect, it } from 'vitest';

const HARNESS = readFileSync(new URL('./guest/harness.js', import.meta.url), 'utf8');
const isolates: ivm.Isolate[] = [];
afterEach(() => {
  for (const i of isolates.splice(0)) if (!i.isDisposed) i.dispose();
});

function newIsolate(): { isolate: ivm.Isolate; context: ivm.Context } {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  isolates.push(isolate);
  return { isolate, context: isolate.createContextSync() };
}

describe('binding calls handed to the host', () => {
  it("isolated-vm runs a turn's ignored callbacks in order, before the turn's apply settles (what the host's flush relies on)", async () => {
    for (let round = 0; round < 20; round++) {
      const { context } = newIsolate();
      const seen: number[] = [];
      context.global.setSync('record', new ivm.Callback((n: number) => seen.push(n), { ignored: true }));
      context.global.setSync('wait', new ivm.Callback((n: number) => seen.push(-n), { sync: true }));
      const turn = context.evalSync(
        `(count) => { for (let i = 1; i <= count; i++) { if (i % 97 === 0) wait(i); else record(i); } }`,
        { reference: true },
      ) as ivm.Reference;
      await turn.apply(undefined, [500]);
      // Every callback of the turn ran before its apply settled, in the order the turn made them.
      expect(seen).toEqual(Array.from({ length: 500 }, (_, i) => ((i + 1) % 97 === 0 ? -(i + 1) : i + 1)));
    }
  });

  it('the harness waits for the host every 64th call and before queueing more than 1 MiB of arguments; a log is a wait too', async () => {
    const { context } = newIsolate();
    const calls: { id: number; waited: boolean; chars: number }[] = [];
    let done: (value: string) => void = () => undefined;
    const finished = new Promise<string>((resolve) => {
      done = resolve;
    });
    const call = (waited: boolean) => (id: number, _binding: string, argsJson: string) =>
      calls.push({ id, waited, chars: argsJson.length });
    const g = context.global;
    g.setSync(
      '__islet_log',
      new ivm.Callback(() => calls.push({ id: -1, waited: true, chars: 0 }), { sync: true }),
    );
    g.setSync('__islet_call', new ivm.Callback(call(false), { ignored: true }));
    g.setSync('__islet_call_wait', new ivm.Callback(call(true), { sync: true }));
    g.setSync('__islet_done', new ivm.Callback((kind: string) => done(kind), { sync: true }));
    g.setSync('__islet_fail', new ivm.Callback((m: string) => done(`fail: ${m}`), { sync: true }));
    context.evalSync(HARNESS);
    const start = g.getSync('__islet_start', { reference: true }) as ivm.Reference;
    // 150 small calls; a log; 10 calls of 300 KB; one of 2 MB (none awaited: they stay pending).
    const program = `
      for (let i = 0; i < 150; i++) apps.t.c({ i });
      console.log('x');
      const big = 'y'.repeat(300000);
      for (let i = 0; i < 10; i++) apps.t.c({ big });
      apps.t.c({ big: 'z'.repeat(2000000) });
      return 1;`;
    await start.apply(undefined, [program, JSON.stringify({ bindings: ['t.c'], clockMs: 0, seed: 's' })]);
    expect(await finished).toBe('value');
    const ids = calls.filter((c) => c.id >= 0);
    expect(ids.map((c) => c.id)).toEqual(Array.from({ length: 161 }, (_, i) => i));
    const waitedAt = (from: number, to: number) =>
      ids.filter((c) => c.waited && c.id >= from && c.id < to).map((c) => c.id);
    // Every 64th of the small ones.
    expect(waitedAt(0, 150)).toEqual([63, 127]);
    // After the log (a wait), 300 KB calls: three fit in 1 MiB, the fourth waits; then the 2 MB one.
    expect(waitedAt(150, 161)).toEqual([153, 157, 160]);
    // Between two waits, never more than 63 calls or 1 MiB of arguments queued.
    let queued = 0;
    let chars = 0;
    for (const c of calls) {
      if (c.waited) {
        queued = 0;
        chars = 0;
        continue;
      }
      queued++;
      chars += c.chars;
      expect(queued).toBeLessThan(64);
      expect(chars).toBeLessThanOrEqual(1048576);
    }
  });
});
