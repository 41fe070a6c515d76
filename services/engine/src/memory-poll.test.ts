/**
 * A run waiting on a call polls its isolate's disposal slowly (host-run.ts, `MEMORY_POLL_MS`; the
 * poll's count is asserted in host-run.test.ts on fake intervals): a heap limit passed in a later
 * turn is reported by that turn itself (the delivery's `applySync` error on the host's thread, the
 * `apply` promise's rejection on isolated-vm's). Checked here with the real engine and real hosts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from './index.ts';

const engine = createEngine({ maxIdlePerPartition: 1 });
afterAll(() => engine.close());

const grow = 'const keep = []; for (;;) keep.push("x".repeat(1 << 20) + keep.length);';

describe("a run's host while a call is out", () => {
  it.each([
    ['a deadline (the turn on the host thread)', 30_000],
    ['no deadline (the turn on isolated-vm’s thread)', null],
  ])('still ends a later turn past its heap limit as memory, with %s', async (_what, timeoutMs) => {
    const out = await engine.execute(`await t(); ${grow}`, {
      bindings: ['t'],
      limits: { memoryMb: 64, timeoutMs },
      partition: 'memory-poll',
      onCall: async () => ({ type: 'result', valueJson: 'null' }),
    });
    expect(out.status).toBe('failed');
    expect(out.failure).toEqual({
      kind: 'worker-exit',
      cause: 'memory',
      message: 'the program exceeded its heap limit of 64 MiB',
    });
  });
});
