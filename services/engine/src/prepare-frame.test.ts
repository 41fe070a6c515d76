/**
 * A sandbox host makes its next isolate only once the engine has read the run's `done`: the host's
 * `done` says `held`, and the engine answers with one `prepare` frame after the outcome was handed
 * on (next-isolate.ts `afterRun`, engine.ts `release`). A run that takes the host before that sends
 * the `prepare` ahead of its own frame; a host never told still runs the next program (made on its
 * arrival). Counted as the host's pipe writes. Real engine, real hosts.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createEngine } from './engine.ts';
import { HostProcess } from './host-process.ts';
import type { FromHost, ToHost } from './wire.ts';

const hosts: HostProcess[] = [];
const start = HostProcess.start.bind(HostProcess);
vi.spyOn(HostProcess, 'start').mockImplementation(async (options) => {
  const host = await start(options);
  if (options.partition === 'prepare') hosts.push(host);
  return host;
});
const engine = createEngine({ maxIdlePerPartition: 1 });
const direct: HostProcess[] = [];
afterAll(async () => {
  await engine.close();
  for (const h of direct) await h.stop();
});

const execute = () =>
  engine.execute('return [1, 2, 3].length * 4', { limits: { timeoutMs: 30_000 }, partition: 'prepare' });
const tick = () => new Promise((r) => setImmediate(r));

describe("the host's next isolate waits for the engine's prepare", () => {
  it('one prepare a run, written after the outcome was handed on', async () => {
    expect((await execute()).valueJson).toBe('12');
    await tick();
    const host = hosts[0]!;
    const before = host.pipeWrites;
    const out = await execute();
    expect(out.valueJson).toBe('12');
    // The run frame only, when the outcome reaches the caller.
    expect(host.pipeWrites - before).toBe(1);
    await tick();
    expect(host.pipeWrites - before).toBe(2);
    await tick();
    expect(host.pipeWrites - before).toBe(2);
  });

  it('a run taking the host before its prepare went sends it first, then its own frame', async () => {
    expect((await execute()).valueJson).toBe('12');
    await tick();
    const host = hosts[0]!;
    const before = host.pipeWrites;
    const first = await execute();
    // In the same tick as the first one's outcome: its prepare has not gone yet.
    const second = execute();
    expect(host.pipeWrites - before).toBe(3);
    expect(first.valueJson).toBe('12');
    expect((await second).valueJson).toBe('12');
    await tick();
    expect(host.pipeWrites - before).toBe(4);
    expect(hosts).toHaveLength(1);
  });

  it("a host's done says held; a host never told to prepare still runs the next program", async () => {
    const host = await HostProcess.start({ partition: 'prepare-direct', startupTimeoutMs: 20_000 });
    direct.push(host);
    const runOnce = () =>
      new Promise<FromHost>((resolve, reject) => {
        host.attach({
          onMessage: (m) => {
            if (m.t === 'done') resolve(m);
          },
          onProtocolError: (reason) => reject(new Error(reason)),
          onExit: () => reject(new Error('the host exited')),
        });
        const run: ToHost = {
          t: 'run',
          code: 'return 7',
          config: { bindings: [], clockMs: 0, seed: 'p' },
          memoryMb: 128,
          outputBytes: 1024,
          outputCap: 'shared',
        };
        expect(host.send(run)).toBe(true);
      });
    for (let i = 0; i < 3; i++)
      expect(await runOnce()).toMatchObject({ t: 'done', status: 'completed', valueJson: '7', held: true });
  });
});
