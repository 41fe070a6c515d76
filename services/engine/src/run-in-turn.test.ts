/**
 * A run's program goes to an idle host in `execute`'s own turn (engine.ts `acquireIdle`): no await
 * between the call and the frame's write, where other work queued meanwhile (a BullMQ loop's next
 * fetch, in a runner) would run first (test/bench/README.md, round 40 `seq-stages`). Real hosts;
 * read as a count of pipe writes, never from time.
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { runOn } from '../test/run-helpers.ts';
import { createEngine } from './index.ts';

const engine = createEngine({
  prewarm: false,
  maxRunsPerProcess: 10_000,
  maxHostResidentGrowthBytes: 2 ** 40,
});
afterAll(() => engine.close());
const run = runOn(engine);

/** Counts the process's synchronous file writes (the engine writes a frame straight to the pipe). */
function countWrites(): { count: () => number; restore: () => void } {
  const writeSync = fs.writeSync;
  const writevSync = fs.writevSync;
  let n = 0;
  fs.writeSync = ((...args: Parameters<typeof writeSync>) => {
    n++;
    return writeSync(...args);
  }) as typeof writeSync;
  fs.writevSync = ((...args: Parameters<typeof writevSync>) => {
    n++;
    return writevSync(...args);
  }) as typeof writevSync;
  // The engine imports them by name: its bindings follow the module object once synced.
  syncBuiltinESMExports();
  return {
    count: () => n,
    restore: () => {
      fs.writeSync = writeSync;
      fs.writevSync = writevSync;
      syncBuiltinESMExports();
    },
  };
}

describe("a run's start on an idle host", () => {
  it('writes the program to the host before execute returns (no await to take the host)', async () => {
    // A host made and idle (its first run done).
    expect((await run('return 1')).status).toBe('completed');
    // Its `prepare` (the next isolate's make) goes a tick after the outcome (prepare-frame.test.ts).
    await new Promise((r) => setImmediate(r));
    const writes = countWrites();
    let sync = -1;
    let pending: ReturnType<typeof run>;
    try {
      pending = run('return 2');
      sync = writes.count();
    } finally {
      writes.restore();
    }
    // The base took its idle host behind an `await`: its frame went out a microtask later (0 here).
    expect(sync).toBe(1);
    const outcome = await pending;
    expect(outcome.status).toBe('completed');
    expect(outcome.valueJson).toBe('2');
  });

  it('a run finding no idle host still gets one (a host started for it)', async () => {
    const other = await run('return 3', { partition: 'another tenant' });
    expect(other.status).toBe('completed');
    expect(other.valueJson).toBe('3');
  });
});
