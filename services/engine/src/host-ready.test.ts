/**
 * Which of a partition's hosts a run takes, by when each said its next isolate would be ready
 * (`done`'s `readyMs`): a sequential client whose runs come back sooner than that alternates over a
 * second host instead of waiting for its one host's make (test/bench/README.md, round 43
 * `engine-floor`). A fake host says 40 ms, as a real one on a slow box says ~3.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { sleep } from '../test/processes.ts';
import { createEngine } from './index.ts';
import { checkFromHost } from './wire.ts';

const FAKE_HOST = fileURLToPath(new URL('../test/fake-host.ts', import.meta.url));
let started = 0;
const engine = createEngine({
  maxRunsPerProcess: 10_000,
  maxHostResidentGrowthBytes: 2 ** 40,
  wrapCommand: (command) => ({
    command,
    args: ['--disable-warning=ExperimentalWarning', FAKE_HOST, 'slow-make'],
  }),
  onProcessEvent: (e) => {
    if (e.type === 'started') started++;
  },
});
afterAll(() => engine.close());
const pidOf = async () => {
  const out = await engine.execute('return 1');
  expect(out.valueJson).toBe('1');
  return out.hostPid;
};

describe("a host's word on when its next isolate is ready", () => {
  it('a run sooner than that starts a second host, and the next such run takes the other host', async () => {
    const a = await pidOf();
    await sleep(10);
    // Idle 10 ms, past the back-to-back 2 ms the base went by, short of what it said: a spare starts.
    expect(await pidOf()).toBe(a);
    await vi.waitFor(() => expect(started).toBe(2), { timeout: 15_000, interval: 20 });
    await sleep(100);
    // Both idle past their word (bounded at 50 ms): the one idle the shortest, as before.
    expect(await pidOf()).toBe(a);
    await sleep(10);
    const b = await pidOf();
    expect(b).not.toBe(a);
    await sleep(10);
    // Neither ready yet: the one idle longest, and no third host.
    expect(await pidOf()).toBe(a);
    expect(started).toBe(2);
  });

  it("a done's readyMs is a number not below 0", () => {
    const done = { t: 'done', status: 'completed', valueJson: '1' };
    expect(checkFromHost({ ...done, readyMs: 3.2 }).ok).toBe(true);
    expect(checkFromHost({ ...done, readyMs: -1 }).ok).toBe(false);
    expect(checkFromHost({ ...done, readyMs: '3' }).ok).toBe(false);
  });
});
