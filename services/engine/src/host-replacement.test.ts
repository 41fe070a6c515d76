/**
 * A host due for retirement (past its growth bound, at its run bound) and its own replacement: the
 * host serves on until that replacement is ready, then the replacement takes its place; several
 * hosts due together each get theirs (16 clients on a runner's 4 slots), and the wait is bounded.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from './engine.ts';
import type { Engine, EngineOptions, ProcessEvent } from './types.ts';

let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

const MiB = 1024 * 1024;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started = (events: ProcessEvent[]) => events.filter((e) => e.type === 'started');
const retired = (events: ProcessEvent[]) =>
  events.filter((e): e is Extract<ProcessEvent, { type: 'retired' }> => e.type === 'retired');
type Wrap = NonNullable<EngineOptions['wrapCommand']>;
/** The engine's first host starts as is; every later start runs as `later` makes it. */
function laterStarts(later: Wrap): { wrapCommand: Wrap; count: () => number } {
  let spawns = 0;
  return {
    wrapCommand: (command, args) => (spawns++ === 0 ? { command, args } : later(command, args)),
    count: () => spawns,
  };
}

describe('a host due for retirement and its own replacement', () => {
  it('gives each of four hosts due at once its own replacement; none retires before it, no run waits for a start', async () => {
    const events: ProcessEvent[] = [];
    // Four slots' hosts, started together, all found 6 MiB past their first run's size by one
    // check (their 16th run): the 16-client bench's hosts passing their growth step together.
    const grown = new Set<number>();
    engine = createEngine({
      maxIdlePerPartition: 4,
      maxHostResidentGrowthBytes: 5 * MiB,
      residentBytesOf: (pid) => 70 * MiB + (grown.has(pid) ? 6 * MiB : 0),
      onProcessEvent: (e) => events.push(e),
    });
    // Four runs at once, as four busy slots: each takes one of the four idle hosts.
    const wave = () =>
      Promise.all(Array.from({ length: 4 }, () => engine!.execute('return 1', { partition: 't1' })));
    const first = await wave();
    const originals = new Set(first.map((o) => o.hostPid));
    expect(originals.size).toBe(4);
    for (let i = 2; i <= 15; i++) await wave();
    for (const pid of originals) grown.add(pid!);
    let waves = 0;
    while (retired(events).length < 4 && waves++ < 200) {
      const ready = new Set(started(events).map((e) => e.pid));
      for (const out of await wave()) {
        expect(out.status).toBe('completed');
        // Served by a host started before the wave: no run waited for a host's start.
        expect(ready.has(out.hostPid)).toBe(true);
      }
      await pause(5);
    }
    const gone = retired(events);
    expect(gone.map((e) => e.pid).sort()).toEqual([...originals].sort());
    expect(gone.map((e) => e.reason)).toEqual(['max-memory', 'max-memory', 'max-memory', 'max-memory']);
    // Each retirement came after a replacement of its own had started (4 + n starts before the n-th)…
    gone.forEach((e, n) => {
      expect(started(events.slice(0, events.indexOf(e))).length).toBeGreaterThanOrEqual(4 + n + 1);
    });
    // …and one start a retirement, no more: no spare stopped as a surplus fifth host.
    expect(started(events)).toHaveLength(8);
    const replacements = new Set(
      started(events)
        .slice(4)
        .map((e) => e.pid),
    );
    for (const out of await wave()) expect(replacements.has(out.hostPid)).toBe(true);
    expect(events.some((e) => e.type === 'exited' && replacements.has(e.pid))).toBe(false);
  });

  it('retires a due host whose replacement is still starting after a quarter of its run bound, and the next run waits for that replacement, not a third start', async () => {
    const events: ProcessEvent[] = [];
    // Every start after the first takes 5 s longer than the runs: a loaded machine's start.
    const starts = laterStarts((command, args) => ({
      command: '/bin/sh',
      args: ['-c', 'sleep 5; exec "$0" "$@"', command, ...args],
    }));
    engine = createEngine({
      // Replacement starts at run 6 (its last quarter), due at 8, served on for 2 runs at most.
      maxRunsPerProcess: 8,
      maxIdlePerPartition: 1,
      wrapCommand: starts.wrapCommand,
      onProcessEvent: (e) => events.push(e),
    });
    const first = await engine.execute('return 1', { partition: 't1' });
    for (let i = 2; i <= 10; i++) {
      const out = await engine.execute('return 1', { partition: 't1' });
      // Runs 9 and 10 are past its run bound: the host serves them while its replacement starts.
      expect(out.hostPid).toBe(first.hostPid);
      if (i < 10) expect(retired(events)).toHaveLength(0);
    }
    expect(retired(events)).toEqual([expect.objectContaining({ reason: 'max-runs', pid: first.hostPid })]);
    expect(started(events)).toHaveLength(1);
    const next = await engine.execute('return 11', { partition: 't1' });
    expect(next.valueJson).toBe('11');
    expect(started(events)).toHaveLength(2);
    expect(next.hostPid).toBe(started(events)[1]!.pid);
    expect(starts.count()).toBe(2);
  });

  it('retires a due host at its next run when its replacement fails to start', async () => {
    const events: ProcessEvent[] = [];
    let startFailed: () => void = () => {};
    const failedStart = new Promise<void>((resolve) => {
      startFailed = resolve;
    });
    const starts = laterStarts(() => ({ command: '/bin/sh', args: ['-c', 'exit 3'] }));
    engine = createEngine({
      maxRunsPerProcess: 8,
      maxIdlePerPartition: 1,
      wrapCommand: starts.wrapCommand,
      onProcessEvent: (e) => {
        events.push(e);
        if (e.type === 'start-failed') startFailed();
      },
    });
    const first = await engine.execute('return 1', { partition: 't1' });
    for (let i = 2; i <= 6; i++) await engine.execute('return 1', { partition: 't1' });
    // The replacement asked for at run 6 fails (before run 7, so run 8 finds no replacement).
    await failedStart;
    expect(starts.count()).toBe(2);
    expect(events.filter((e) => e.type === 'start-failed')).toEqual([
      { type: 'start-failed', partition: 't1', pid: undefined, message: expect.stringMatching(/\S/) },
    ]);
    await engine.execute('return 7', { partition: 't1' });
    expect(retired(events)).toHaveLength(0);
    await engine.execute('return 8', { partition: 't1' });
    expect(retired(events)).toEqual([expect.objectContaining({ reason: 'max-runs', pid: first.hostPid })]);
  });
});
