/**
 * A burst of call outcomes to one sandbox host (a `Promise.all`'s outcomes settling in one tick)
 * goes out in a few pipe writes, not one each; a lone outcome is written at once. Counted as the
 * engine's hosts' `pipeWrites` (every write to a host's pipe, this partition's hosts only: nothing
 * else in the process, such as the test pool's own messages, is in the count). Real engine, real host.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createEngine } from './engine.ts';
import { HostProcess } from './host-process.ts';

// Every host the engine starts, to read their pipe writes.
const hosts: HostProcess[] = [];
const start = HostProcess.start.bind(HostProcess);
vi.spyOn(HostProcess, 'start').mockImplementation(async (options) => {
  const host = await start(options);
  if (options.partition === 'burst') hosts.push(host);
  return host;
});
const pipeWrites = () => hosts.reduce((sum, h) => sum + h.pipeWrites, 0);
const engine = createEngine({ maxIdlePerPartition: 1 });
afterAll(() => engine.close());

const held: (() => void)[] = [];
const execute = (code: string) =>
  engine.execute(code, {
    bindings: ['t'],
    limits: { timeoutMs: 30_000 },
    partition: 'burst',
    onCall: (call) => {
      const { i, all } = JSON.parse(call.argsJson) as { i: number; all?: number };
      const outcome = { type: 'result' as const, valueJson: String(i) };
      if (!all) return Promise.resolve(outcome);
      // Held until all `all` calls arrived, then settled together in one tick: the burst is this
      // test's doing, not how the host's frames happened to be read (that varies with load).
      return new Promise((resolve) => {
        held.push(() => resolve(outcome));
        if (held.length === all) for (const settle of held.splice(0)) settle();
      });
    },
  });

describe("a burst of call outcomes to a host's pipe", () => {
  it('100 outcomes settled together cost a few writes, and every one reaches the program', async () => {
    const code =
      'return (await Promise.all(Array.from({ length: 100 }, (_, i) => t({ i, all: 100 })))).join(",")';
    await execute(code); // the host started and warm
    // Its `prepare` for the next isolate goes after the outcome (prepare-frame.test.ts): not counted.
    await new Promise((r) => setImmediate(r));
    const before = pipeWrites();
    const out = await execute(code);
    const writes = pipeWrites() - before;
    expect(out.status).toBe('completed');
    expect(JSON.parse(out.valueJson ?? '""')).toBe(Array.from({ length: 100 }, (_, i) => i).join(','));
    // The run frame, then the 100 outcomes settled in one tick: the first at once, the other 99 in
    // one corked write. One write each (the base) is 101.
    expect(writes).toBe(3);
  });

  it('sequential outcomes are each written at once, in their own tick, with no tick to end a burst', async () => {
    const code = 'let s = 0; for (let i = 0; i < 20; i++) s += await t({ i }); return s';
    await execute(code);
    await new Promise((r) => setImmediate(r));
    const before = pipeWrites();
    // Ticks the engine's send asks for (a burst's end): none while no other call is out.
    let sendTicks = 0;
    const nextTick = process.nextTick;
    process.nextTick = function (this: unknown, ...args: unknown[]) {
      if (new Error().stack?.includes('host-process.ts')) sendTicks++;
      return (nextTick as (...a: unknown[]) => void).apply(this, args);
    } as typeof process.nextTick;
    let out: Awaited<ReturnType<typeof execute>>;
    try {
      out = await execute(code);
    } finally {
      process.nextTick = nextTick;
    }
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBe('190');
    // The run frame and each of the 20 outcomes in a write of its own.
    expect(pipeWrites() - before).toBe(21);
    expect(sendTicks).toBe(0);
  });

  it('counts a gathered burst as one write after the first, and keeps an ungathered frame behind it', async () => {
    const host = await HostProcess.start({ partition: 'burst-unit', startupTimeoutMs: 20_000 });
    try {
      const result = (id: number) => ({ t: 'result' as const, id, valueJson: '1' });
      const before = host.pipeWrites;
      for (let id = 0; id < 10; id++) host.send(result(id), true);
      host.send({ t: 'end', kind: 'abort' });
      expect(host.pipeWrites - before).toBe(1);
      await new Promise((r) => process.nextTick(r));
      expect(host.pipeWrites - before).toBe(2);
      host.send(result(10), true);
      expect(host.pipeWrites - before).toBe(3);
    } finally {
      await host.stop();
    }
  });
});
