/**
 * A sandbox host's threads below the engine in the scheduler, read from /proc/<pid>/task/<tid>/stat
 * (the kernel's nice value of each thread): by default every thread of a host, those that ran the
 * program included, has nice 10; `hostNice: 0` leaves them at the engine's. A niced program still
 * gets its CPU and its time limit still ends it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { describe, expect, it } from 'vitest';
import { DEFAULT_HOST_NICE, hostNiceOf } from './host-nice.ts';
import { createEngine } from './index.ts';
import type { EngineOptions } from './types.ts';

/** Each thread's nice value (stat's 19th field; the command name before it may hold spaces). */
function threadNices(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

async function hostThreads(options: EngineOptions, program: string): Promise<number[]> {
  const engine = createEngine({ prewarm: false, ...options });
  try {
    const out = await engine.execute(program);
    expect(out.status).toBe('completed');
    return threadNices(out.hostPid!);
  } finally {
    await engine.close();
  }
}

// Spins long enough that isolated-vm runs it on a thread of its own, started after the host's first line.
const BUSY = 'let s = 0; for (let i = 0; i < 2e6; i++) s += i; await Promise.resolve(); return s';

describe("a sandbox host's CPU priority", () => {
  it('is nice 10 on every thread of a host by default, below the engine', async () => {
    expect(DEFAULT_HOST_NICE).toBe(10);
    const base = getPriority();
    const nices = await hostThreads({}, BUSY);
    expect(nices.length).toBeGreaterThan(1);
    expect(nices).toEqual(nices.map(() => Math.max(base, 10)));
  });

  it("is the engine's own with hostNice 0, and the value given otherwise", async () => {
    const base = getPriority();
    expect(new Set(await hostThreads({ hostNice: 0 }, BUSY))).toEqual(new Set([base]));
    expect(new Set(await hostThreads({ hostNice: 15 }, BUSY))).toEqual(new Set([Math.max(base, 15)]));
  });

  it('reads the option as 0..19', () => {
    expect(hostNiceOf(undefined)).toBe(10);
    expect(hostNiceOf(Number.NaN)).toBe(10);
    expect(hostNiceOf(-5)).toBe(0);
    expect(hostNiceOf(40)).toBe(19);
    expect(hostNiceOf(3.7)).toBe(3);
  });

  it('still runs a niced program to its end, and its time limit still ends it', async () => {
    const engine = createEngine({ prewarm: false });
    try {
      const done = await engine.execute('let s = 0; for (let i = 0; i < 5e6; i++) s += i; return s');
      expect(done.status).toBe('completed');
      const spun = await engine.execute('for (;;) {}', { limits: { timeoutMs: 300 } });
      expect(spun.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (300ms)' });
    } finally {
      await engine.close();
    }
  });
});
