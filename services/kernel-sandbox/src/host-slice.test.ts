/**
 * ISLET_RUNNER_HOST_SLICE_US's mechanism (host-slice.ts): a sandbox host started through
 * `hostSliceSpawn(us).around` holds that EEVDF slice on every one of its threads, plain or under
 * islet-jail (another uid, which the runner could not set from outside), and the spawning thread is
 * back at the kernel's default after. Read from /proc/<pid>/task/<tid>/sched (`se.slice`), the
 * kernel's own record. A kernel before 6.12 (no custom slices) gives a note and no `around` instead.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { release } from 'node:os';
import { createEngine, type EngineOptions, type ProcessEvent } from '@islet/engine';
import { describe, expect, it } from 'vitest';
import { requireRoot } from '../test/test-helpers.ts';
import { hardenAddon } from './harden.ts';
import { hostSliceSpawn } from './host-slice.ts';
import { wrapCommandForMode } from './jail.ts';

const [major = 0, minor = 0] = release().split('.').map(Number);
const customSlices = major > 6 || (major === 6 && minor >= 12);
const US = 20_000;

/** The process and its descendants (the launcher may keep a supervisor above the host). */
function tree(pid: number): number[] {
  const out = [pid];
  for (const tid of readdirSync(`/proc/${pid}/task`))
    for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean))
      out.push(...tree(Number(child)));
  return out;
}

const sliceOf = (pid: number, tid: number | string) =>
  Number(/^se\.slice\s*:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/task/${tid}/sched`, 'utf8'))?.[1]);

/** Runs one program on a fresh engine; the host's pid, uid and every thread's slice. */
async function hostSlices(options: EngineOptions) {
  const events: ProcessEvent[] = [];
  const engine = createEngine({ prewarm: false, ...options, onProcessEvent: (e) => events.push(e) });
  try {
    const out = await engine.execute('return 6 * 7;');
    expect(out.failure).toBeUndefined();
    const started = events.find((e) => e.type === 'started')?.pid;
    expect(started).toBeTypeOf('number');
    const hosts = tree(started!).filter((pid) =>
      /\/host\.(js|ts)\0/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')),
    );
    expect(hosts).toHaveLength(1);
    const host = hosts[0]!;
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${host}/status`, 'utf8'))![1]);
    const threads = readdirSync(`/proc/${host}/task`);
    return { uid, threads: threads.length, slices: [...new Set(threads.map((tid) => sliceOf(host, tid)))] };
  } finally {
    await engine.close();
  }
}

describe('the sandbox hosts’ slice (ISLET_RUNNER_HOST_SLICE_US)', () => {
  it('is off at 0: nothing wraps the spawn', () => {
    expect(hostSliceSpawn(0)).toEqual({});
  });

  it.runIf(!customSlices)('gives a note and no wrap on a kernel without custom slices', () => {
    const taken = hostSliceSpawn(US);
    expect(taken.around).toBeUndefined();
    expect(taken.note).toMatch(/slice|not built/);
  });

  it.runIf(customSlices)(
    'is on every thread of a host it started; the spawning thread is back after',
    async () => {
      const base = hardenAddon()!.getSlice();
      const taken = hostSliceSpawn(US);
      expect(taken.note).toBeUndefined();
      const on = await hostSlices({ aroundHostSpawn: taken.around! });
      expect(on.threads).toBeGreaterThan(1);
      expect(on.slices).toEqual([US * 1000]);
      expect(hardenAddon()!.getSlice()).toBe(base);
      expect(sliceOf(process.pid, process.pid)).toBe(base);
      // Without it a host holds the kernel's slice, as this thread does.
      const off = await hostSlices({});
      expect(off.slices).toEqual([base]);
    },
  );

  it.runIf(customSlices)('is on every thread of a jailed host, which runs as another uid', async () => {
    requireRoot('islet-jail’s per-run uid');
    const jailed = await hostSlices({
      aroundHostSpawn: hostSliceSpawn(US).around!,
      wrapCommand: wrapCommandForMode('read-only', { require: 'full' }),
    });
    expect(jailed.uid).not.toBe(process.getuid?.());
    expect(jailed.slices).toEqual([US * 1000]);
  });
});
