/**
 * A run waiting on a call does not wake its sandbox host every 20 ms to ask whether its isolate was
 * disposed: a heap limit passed in a later turn is reported by that turn itself (the delivery's
 * `applySync` error on the host's thread, the `apply` promise's rejection on isolated-vm's), so the
 * host's own poll only covers a disposal outside any turn, at a slower pace (host-run.ts). Counted:
 * the host's main-thread wake-ups (voluntary context switches, /proc) while a call is out for 1 s.
 * Real engine, real hosts.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from './index.ts';
import type { BindingOutcome } from './types.ts';

const hosts = new Set<number>();
const engine = createEngine({
  maxIdlePerPartition: 1,
  onProcessEvent: (e) => {
    if (e.pid !== undefined && e.type === 'started') hosts.add(e.pid);
  },
});
afterAll(() => engine.close());

/** The hosts' main threads' voluntary context switches (their wake-ups from a wait), summed. */
const wakeUps = (): number => {
  let sum = 0;
  for (const pid of hosts) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
      sum += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      hosts.delete(pid); // gone
    }
  }
  return sum;
};

const grow = 'const keep = []; for (;;) keep.push("x".repeat(1 << 20) + keep.length);';

describe("a run's host while a call is out", () => {
  it('is not woken every 20 ms while its program waits on a call', async () => {
    let during: number | undefined;
    const out = await engine.execute('const a = await t(); return a.n;', {
      bindings: ['t'],
      limits: { timeoutMs: 30_000 },
      partition: 'memory-poll',
      onCall: async () => {
        // Past the first turn's return, where the poll is armed.
        await new Promise((r) => setTimeout(r, 50));
        const before = wakeUps();
        await new Promise((r) => setTimeout(r, 1000));
        during = wakeUps() - before;
        return { type: 'result', valueJson: '{"n":1}' } satisfies BindingOutcome;
      },
    });
    expect(out.status).toBe('completed');
    expect(hosts.size).toBeGreaterThan(0);
    // The base's 20 ms poll: ~50 a second. Now at most a handful (the poll, V8's own tasks).
    expect(during).toBeLessThan(20);
  });

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
