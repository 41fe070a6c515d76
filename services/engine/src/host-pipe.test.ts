/**
 * Frames to a sandbox host written straight to its pipe's descriptor (host-process.ts `write`):
 * what the pipe does not take at once (a message larger than it, in many frames) goes on through
 * stdin's stream, and a frame sent behind it waits its turn. Real host; the engine's frames split
 * at 256 KiB so a 6 MiB outcome is 24 frames in one write.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { HostProcess } from './host-process.ts';
import type { FromHost, ToHost } from './wire.ts';

const hosts: HostProcess[] = [];
afterAll(async () => {
  for (const h of hosts) await h.stop();
});

/** Runs `code` on a fresh host; `answer` sends the outcomes of the calls made so far. */
async function run(
  code: string,
  answer: (host: HostProcess, calls: number[]) => void,
): Promise<{ done: FromHost; writes: number }> {
  const host = await HostProcess.start({
    partition: 'pipe',
    startupTimeoutMs: 20_000,
    frameLimits: { maxFrameBytes: 256 * 1024, maxMessageBytes: 256 * 1024 * 1024 },
  });
  hosts.push(host);
  const before = host.pipeWrites;
  const calls: number[] = [];
  const done = new Promise<FromHost>((resolve, reject) => {
    host.attach({
      onMessage: (m) => {
        if (m.t === 'call') {
          calls.push(m.id);
          answer(host, calls);
        } else if (m.t === 'done') resolve(m);
      },
      onProtocolError: (reason) => reject(new Error(reason)),
      onExit: () => reject(new Error('the host exited')),
    });
  });
  const start: ToHost = {
    t: 'run',
    code,
    config: { bindings: ['t'], clockMs: 0, seed: 'pipe' },
    memoryMb: 256,
    outputBytes: 1024 * 1024,
    outputCap: 'shared',
  };
  expect(host.send(start)).toBe(true);
  return { done: await done, writes: host.pipeWrites - before - 1 };
}

const big = `${'a'.repeat(6 * 1024 * 1024)}xyz`;

describe("frames straight to a host's pipe", () => {
  it('a message larger than the pipe arrives whole, in one write of ours, and the next one behind it', async () => {
    const { done, writes } = await run(
      'const a = await t({}); const b = await t({}); return [a.length, a.slice(-3), b].join(":");',
      (host, calls) => {
        const id = calls.at(-1)!;
        host.send({ t: 'result', id, valueJson: JSON.stringify(id === 0 ? big : 'small') }, true);
      },
    );
    expect(done).toMatchObject({ status: 'completed', valueJson: JSON.stringify(`${big.length}:xyz:small`) });
    expect(writes).toBe(2);
  });

  it("a burst's outcomes keep their order behind a large first one still going through the stream", async () => {
    const { done, writes } = await run(
      'const [a, b, c] = await Promise.all([t(1), t(2), t(3)]); return [a.length, b, c].join(":");',
      (host, calls) => {
        if (calls.length < 3) return;
        // One tick: the first written at once (most of it through the stream), the others held
        // for the tick's end and then queued behind it.
        host.send({ t: 'result', id: 0, valueJson: JSON.stringify(big) }, true);
        host.send({ t: 'result', id: 1, valueJson: '"b"' }, true);
        host.send({ t: 'result', id: 2, valueJson: '"c"' }, true);
      },
    );
    expect(done).toMatchObject({ status: 'completed', valueJson: JSON.stringify(`${big.length}:b:c`) });
    expect(writes).toBe(2);
  });
});
