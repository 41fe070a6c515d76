/**
 * The default growth bound (10 MiB of private memory since a host's first run) sits above what a
 * host grows over its whole life of trivial or light-call runs (5-7 MiB by run ~530 then flat, up
 * to 9.8 once; ~9.5 MiB at run 1000 with 10 calls a run: round 36 `growth-bound` in
 * test/bench/README.md), so such a host leaves at its run bound, not halfway: each start is ~85 ms
 * of CPU taken from the runs beside it. A leak still passes it and retires the host.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from './engine.ts';
import { engineSettings } from './engine-settings.ts';
import type { Engine, ProcessEvent } from './types.ts';

const MiB = 1024 * 1024;
let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

/** An engine at the default growth bound whose reader plays a host `grownBytes` past its first run. */
function engineGrowing(grownBytes: number, events: ProcessEvent[]): Engine {
  let reads = 0;
  return createEngine({
    maxRunsPerProcess: 40,
    maxIdlePerPartition: 1,
    prewarm: false,
    // The run's own resident guard (a read while busy) sees the fresh size; the checks after the
    // first run's baseline see the grown one.
    residentBytesOf: () => (engine!.stats!().busy > 0 || reads++ === 0 ? 70 * MiB : 70 * MiB + grownBytes),
    onProcessEvent: (e) => events.push(e),
  });
}

const reasons = (events: ProcessEvent[]) => events.flatMap((e) => (e.type === 'retired' ? [e.reason] : []));

describe('the default growth bound', () => {
  it('is 10 MiB', () => {
    expect(engineSettings({}).maxGrowth).toBe(10 * MiB);
  });

  it("lets a host grown as a trivial host's plateau (9.8 MiB) serve to its run bound: one start a host", async () => {
    const events: ProcessEvent[] = [];
    engine = engineGrowing(9.8 * MiB, events);
    for (let i = 1; i <= 41; i++) expect((await engine.execute('return 1')).status).toBe('completed');
    // Checked after runs 1, 16 and 32 (not past the bound): retired at run 40 for its run count.
    expect(reasons(events)).toEqual(['max-runs']);
    expect(events.filter((e) => e.type === 'started')).toHaveLength(2);
  });

  it('still retires a host past it (a leak) at the check that finds it', async () => {
    const events: ProcessEvent[] = [];
    engine = engineGrowing(10.5 * MiB, events);
    for (let i = 1; i <= 17; i++) expect((await engine.execute('return 1')).status).toBe('completed');
    expect(reasons(events)).toEqual(['max-memory']);
    expect(events.filter((e) => e.type === 'started')).toHaveLength(2);
  });
});
