/** The engine's process lifecycle hook and stats (what the runner turns into sandbox metrics). */
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from './engine.ts';
import { readResidentBytes } from './host-process.ts';
import { hostResidentLimitBytes } from './limits.ts';
import type { Engine, ProcessEvent } from './types.ts';

let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

const until = async (fn: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('onProcessEvent and stats()', () => {
  it('reports starts, exits, and replacements after max runs and after a failure', async () => {
    const events: ProcessEvent[] = [];
    engine = createEngine({ maxRunsPerProcess: 2, prewarm: false, onProcessEvent: (e) => events.push(e) });
    expect(engine.stats?.()).toEqual({ processes: 0, busy: 0 });

    expect((await engine.execute('return 1', { partition: 't1' })).status).toBe('completed');
    expect(engine.stats?.()).toEqual({ processes: 1, busy: 0 });
    expect(events.filter((e) => e.type === 'started')).toHaveLength(1);

    expect((await engine.execute('return 2', { partition: 't1' })).status).toBe('completed');
    // the second run was that host's last: it is replaced
    expect(events).toContainEqual(expect.objectContaining({ type: 'retired', reason: 'max-runs' }));
    await until(() => events.some((e) => e.type === 'exited'));
    expect(engine.stats?.().processes).toBe(0);

    // a run the watchdog must kill leaves its host unusable
    const spin = await engine.execute('for (;;) {}', { partition: 't1', limits: { timeoutMs: 200 } });
    expect(spin.status).toBe('failed');
    // …by the tenant's program (the watchdog), not by a crash: the alert must not page on it.
    expect(events).toContainEqual(expect.objectContaining({ type: 'retired', reason: 'killed' }));
    expect(events.some((e) => e.type === 'retired' && e.reason === 'crashed')).toBe(false);
    expect(events.filter((e) => e.type === 'started')).toHaveLength(2);
    await until(() => events.filter((e) => e.type === 'exited').length === 2);
    expect(engine.stats?.()).toEqual({ processes: 0, busy: 0 });
  });

  it('retires a host whose resident memory grew past maxHostResidentGrowthBytes since its first run', async () => {
    const events: ProcessEvent[] = [];
    const MiB = 1024 * 1024;
    // The reader plays a host that is 70 MiB after its first run (a larger machine: no retirement
    // for its size alone), 75 MiB at its 16th run (inside 8 MiB of growth) and 79 MiB at its 32nd.
    const reads: number[] = [];
    const sizes = [70 * MiB, 75 * MiB, 79 * MiB];
    engine = createEngine({
      maxHostResidentGrowthBytes: 8 * MiB,
      // One host per partition: back-to-back runs would otherwise get a second host (whenever a
      // run finds its host idle for under 2 ms), and this test follows one host's reads.
      maxIdlePerPartition: 1,
      residentBytesOf: () => {
        // A read while the run is still going is the run's own resident guard (runs past 100 ms,
        // e.g. on a loaded machine), not the check after it: not counted, and far below any bound.
        if (engine!.stats!().busy > 0) return sizes[0];
        reads.push(reads.length);
        return sizes[Math.min(reads.length - 1, sizes.length - 1)];
      },
      onProcessEvent: (e) => events.push(e),
    });
    const first = await engine.execute('return 1', { partition: 't1' });
    for (let i = 2; i <= 31; i++)
      expect((await engine.execute('return 1', { partition: 't1' })).hostPid).toBe(first.hostPid);
    // Read after runs 1 and 16 only (not on every run's path).
    expect(reads).toHaveLength(2);
    expect(events.some((e) => e.type === 'retired')).toBe(false);
    const last = await engine.execute('return 32', { partition: 't1' });
    expect(last.hostPid).toBe(first.hostPid);
    expect(reads).toHaveLength(3);
    // Past its bound with no other host to take the next run: it serves on while its replacement
    // starts, so no run waits for a host start.
    expect(events.some((e) => e.type === 'retired')).toBe(false);
    await until(() => events.filter((e) => e.type === 'started').length === 2);
    const spare = events.filter((e) => e.type === 'started')[1]!.pid;
    // Its replacement is ready and it is idle: it is retired then, with no further run.
    await until(() => events.some((e) => e.type === 'retired'));
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'retired', reason: 'max-memory', pid: first.hostPid }),
    );
    const next = await engine.execute('return 2', { partition: 't1' });
    expect(next.valueJson).toBe('2');
    expect(next.hostPid).toBe(spare);
    expect(events.filter((e) => e.type === 'started')).toHaveLength(2);
  });

  it('retires a host past its growth bound at once when no replacement starts ahead (prewarm off)', async () => {
    const events: ProcessEvent[] = [];
    const MiB = 1024 * 1024;
    let reads = 0;
    // No spares (prewarm off): nothing is ready ahead, so the bound holds at the check that finds it.
    engine = createEngine({
      maxHostResidentGrowthBytes: 1 * MiB,
      maxIdlePerPartition: 1,
      prewarm: false,
      residentBytesOf: () => (engine!.stats!().busy > 0 ? 70 * MiB : 70 * MiB + (reads++ > 0 ? 2 * MiB : 0)),
      onProcessEvent: (e) => events.push(e),
    });
    const first = await engine.execute('return 1', { partition: 't1' });
    for (let i = 2; i <= 16; i++) await engine.execute('return 1', { partition: 't1' });
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'retired', reason: 'max-memory', pid: first.hostPid }),
    );
  });

  it('ends a run whose host passes twice its heap limit plus 256 MiB resident, even in a first turn that never yields', async () => {
    const events: ProcessEvent[] = [];
    const MiB = 1024 * 1024;
    const bound = (64 * 2 + 256) * MiB;
    expect(hostResidentLimitBytes(64)).toBe(bound);
    // The reader plays a host at the bound, then past it: memory V8 does not count (the host's
    // thread is inside the program's first turn and watches nothing).
    let resident = bound;
    engine = createEngine({ residentBytesOf: () => resident, onProcessEvent: (e) => events.push(e) });
    const limits = { memoryMb: 64, timeoutMs: 20_000 };
    const atBound = await engine.execute(
      'let x = 0; for (let i = 0; i < 2e8; i++) x += i % 7; return x > 0',
      {
        partition: 't1',
        limits,
      },
    );
    expect(atBound.valueJson).toBe('true');
    setTimeout(() => {
      resident = bound + 1;
    }, 150);
    // Ended by the guard (cause `memory`), not by the 20 s budget (kind `timeout`).
    const past = await engine.execute('console.log("growing"); for (;;) {}', { partition: 't1', limits });
    expect(past.failure).toEqual({
      kind: 'worker-exit',
      cause: 'memory',
      message: 'the program exceeded its heap limit of 64 MiB',
    });
    expect(past.logs).toEqual([{ level: 'log', text: 'growing' }]);
    // The tenant's program, not a crash: the alert must not page on it.
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'retired', reason: 'killed', pid: past.hostPid }),
    );
    resident = 60 * MiB;
    expect((await engine.execute('return 2', { partition: 't1' })).valueJson).toBe('2');
  });

  it("reads a live host's resident memory from /proc", async () => {
    engine = createEngine({ prewarm: false });
    const out = await engine.execute('return 1');
    const rss = readResidentBytes(out.hostPid!);
    // A pooled host: tens of MiB, nowhere near zero or gigabytes.
    expect(rss).toBeGreaterThan(20 * 1024 * 1024);
    expect(rss).toBeLessThan(400 * 1024 * 1024);
    expect(readResidentBytes(2 ** 22 + 12345)).toBeUndefined();
  });

  it('starts the replacement of a host in its last quarter of runs, so the next run waits for no start', async () => {
    const events: ProcessEvent[] = [];
    engine = createEngine({ maxRunsPerProcess: 8, onProcessEvent: (e) => events.push(e) });
    const starts = () => events.filter((e) => e.type === 'started').length;
    // Runs apart, not back to back (those get a second host: the next test).
    const run = async () => {
      await new Promise((r) => setTimeout(r, 20));
      return engine!.execute('return 1');
    };
    const first = await run();
    for (let i = 0; i < 4; i++) expect((await run()).hostPid).toBe(first.hostPid);
    // Five runs done, three to go: no replacement yet (it would only hold memory).
    await new Promise((r) => setTimeout(r, 1000));
    expect(starts()).toBe(1);
    await run();
    // The sixth run ended inside the last quarter: the spare starts now, off any run's path.
    await until(() => starts() === 2, 30_000);
    expect(engine.stats?.().processes).toBe(2);
    // The spare waits in the pool while the old host serves its last runs.
    expect((await run()).hostPid).toBe(first.hostPid);
    expect((await run()).hostPid).toBe(first.hostPid);
    expect(events).toContainEqual(expect.objectContaining({ type: 'retired', reason: 'max-runs' }));
    // The next run takes the spare whose start had already finished (`started` is emitted once a
    // host is ready) before the run began: no wait for a start, and no third start.
    const spare = events.filter((e) => e.type === 'started')[1]!.pid;
    const next = await run();
    expect(next.valueJson).toBe('1');
    expect(next.hostPid).toBe(spare);
    expect(next.hostPid).not.toBe(first.hostPid);
    expect(starts()).toBe(2);
  });

  it('spawns a spare only after the run that asked for it has handed on its result', async () => {
    // A spawn blocks the runner's thread for a fork of a large process (~1.5-2 ms): made inside
    // the release of a run, it delayed that run's end by as much.
    const order: string[] = [];
    engine = createEngine({
      maxRunsPerProcess: 2,
      wrapCommand: (command, args) => {
        order.push('spawn');
        return { command, args };
      },
    });
    // Two runs: the first starts the host; its release is in the host's last quarter (1 of 2
    // runs), so it asks for the replacement; the second's release retires the host.
    for (let i = 1; i <= 2; i++) {
      const out = await engine.execute('return 1').then((o) => {
        order.push(`result ${i}`);
        return o;
      });
      expect(out.valueJson).toBe('1');
    }
    await until(() => order.filter((o) => o === 'spawn').length === 2, 30_000);
    expect(order.slice(0, 3)).toEqual(['spawn', 'result 1', 'spawn']);
  });

  it('gives back-to-back runs of one partition a second host, so each host makes its next isolate while the other runs', async () => {
    const events: ProcessEvent[] = [];
    engine = createEngine({ onProcessEvent: (e) => events.push(e) });
    const starts = () => events.filter((e) => e.type === 'started').length;
    // Runs apart: the host has made its next isolate before the next run comes; one host.
    for (let i = 0; i < 5; i++) {
      await engine.execute('return 1', { partition: 't1' });
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(starts()).toBe(1);
    // Back to back: a second host starts in the background, then the runs alternate.
    for (let i = 0; i < 3; i++) await engine.execute('return 1', { partition: 't1' });
    await until(() => starts() === 2, 30_000);
    const pids: (number | undefined)[] = [];
    for (let i = 0; i < 6; i++) pids.push((await engine.execute('return 1', { partition: 't1' })).hostPid);
    expect(new Set(pids).size).toBe(2);
    // They alternate (a pause of 2 ms or more between two runs, a GC on a loaded machine, may let
    // one host serve twice in a row: its isolate is made by then).
    const switches = pids.filter((pid, i) => i > 0 && pid !== pids[i - 1]).length;
    expect(switches).toBeGreaterThanOrEqual(4);
    // Never a third for one partition, and another partition never shares them.
    expect(starts()).toBe(2);
    const other = await engine.execute('return 1', { partition: 't2' });
    expect(pids).not.toContain(other.hostPid);
  });

  it('starts at most maxStartingHosts hosts at once; waiting runs take a freed host or the next start', async () => {
    let spawned = 0;
    let ready = 0;
    let mostStartingAtOnce = 0;
    engine = createEngine({
      maxStartingHosts: 2,
      prewarm: false,
      wrapCommand: (command, args) => {
        spawned++;
        mostStartingAtOnce = Math.max(mostStartingAtOnce, spawned - ready);
        return { command, args };
      },
      onProcessEvent: (e) => {
        if (e.type === 'started') ready++;
      },
    });
    const outs = await Promise.all(
      Array.from({ length: 8 }, (_, i) => engine!.execute(`return ${i}`, { partition: 't1' })),
    );
    expect(outs.map((o) => o.valueJson)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
    expect(mostStartingAtOnce).toBeLessThanOrEqual(2);
    // Still one fresh isolate per run: eight runs on at most eight processes, each process serving
    // one run at a time (the engine's busy set), never two isolates in one run.
    expect(spawned).toBeLessThanOrEqual(8);
    expect(spawned).toBeGreaterThanOrEqual(1);
    // A closed engine lets no waiting run hang.
    const closing = createEngine({ maxStartingHosts: 1, prewarm: false });
    const pending = Array.from({ length: 3 }, () => closing.execute('return 1', { partition: 't2' }));
    await closing.close();
    for (const out of await Promise.all(pending)) expect(['completed', 'failed']).toContain(out.status);
  });

  it('a hook that throws does not break runs', async () => {
    engine = createEngine({
      onProcessEvent: () => {
        throw new Error('metrics down');
      },
    });
    expect((await engine.execute('return 3')).valueJson).toBe('3');
  });
});
