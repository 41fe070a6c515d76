/**
 * How a program's binding calls cross from its isolate to the sandbox host (host.ts, the guest
 * harness): without the isolate's thread waiting (`ignored` callbacks), bounded by a waited
 * hand-over every 64 calls or 1 MiB of arguments. Real isolated-vm, the real harness source.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { afterEach, describe, expect, it } from 'vitest';
import { installHarness } from './harness-install.ts';

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

  it('the harness waits for the host at every 64th call or log line and before queueing more than 1 MiB; all in order', async () => {
    const { isolate, context } = newIsolate();
    const got: { kind: 'call' | 'log'; id: number; waited: boolean; chars: number }[] = [];
    let done: (value: string) => void = () => undefined;
    const finished = new Promise<string>((resolve) => {
      done = resolve;
    });
    const call = (waited: boolean) => (id: number, _binding: string, argsJson: string) =>
      got.push({ kind: 'call', id, waited, chars: argsJson.length });
    const log = (waited: boolean) => (_level: string, text: string) =>
      got.push({ kind: 'log', id: Number(text.split(' ')[0]), waited, chars: text.length });
    const { entry } = installHarness(isolate, context, HARNESS, {
      log: log(false),
      logWait: log(true),
      call: call(false),
      callWait: call(true),
      done: (kind) => done(kind as string),
      fail: (m) => done(`fail: ${m as string}`),
    });
    // 100 small calls, each followed by a log line (200 items); then 10 calls of 300 KB; then one
    // of 2 MB; then 3 log lines of 600 KB (none of the calls awaited: they stay pending).
    const program = `
      for (let i = 0; i < 100; i++) { apps.t.c({ i }); console.log(i, 'after'); }
      const big = 'y'.repeat(300000);
      for (let i = 0; i < 10; i++) apps.t.c({ big });
      apps.t.c({ big: 'z'.repeat(2000000) });
      for (let i = 0; i < 3; i++) console.log(i, 'w'.repeat(600000));
      return 1;`;
    await entry.apply(undefined, [
      'start',
      program,
      JSON.stringify({ bindings: ['t.c'], clockMs: 0, seed: 's' }),
    ]);
    expect(await finished).toBe('value');
    // Everything arrived, in the program's order.
    const order = got.map((x) => `${x.kind}${x.id}`);
    const expected = [
      ...Array.from({ length: 100 }, (_, i) => [`call${i}`, `log${i}`]).flat(),
      ...Array.from({ length: 11 }, (_, i) => `call${100 + i}`),
      'log0',
      'log1',
      'log2',
    ];
    expect(order).toEqual(expected);
    const waited = got.flatMap((x, i) => (x.waited ? [i] : []));
    // The 64th, 128th and 192nd small items; then by size: of the 300 KB calls the 4th (three fit
    // in 1 MiB with the 8 small items queued after the last wait) and the 8th, then the 2 MB call
    // (alone past the bound), then the second 600 KB line (two pass 1 MiB; the third fits again).
    expect(waited).toEqual([63, 127, 191, 203, 207, 210, 212]);
    // Between two waits, never more than 63 items or 1 MiB queued (counts, not time).
    let queuedItems = 0;
    let queuedChars = 0;
    for (const x of got) {
      if (x.waited) {
        queuedItems = 0;
        queuedChars = 0;
        continue;
      }
      queuedItems++;
      queuedChars += x.chars;
      expect(queuedItems).toBeLessThan(64);
      expect(queuedChars).toBeLessThanOrEqual(1048576);
    }
  });
});
