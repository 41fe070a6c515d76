/**
 * A sandbox host's threads below Islet's own processes (host-priority.ts): each host raises the
 * niceness of every one of its threads at start, before any isolate is made, to what the engine
 * names (`hostNice`; default 0, unchanged); threads it makes later (isolated-vm's, libuv's) inherit it.
 * Read from /proc/<pid>/task/<tid>/stat, the kernel's own record.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_HOST_NICE, HOST_NICE_ENV, hostNiceFrom } from './host-priority.ts';
import { createEngine } from './index.ts';
import type { Engine, ProcessEvent } from './types.ts';

/** Every thread's niceness (stat field 19), by thread name. */
function threadNiceness(pid: number): { comm: string; nice: number }[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), nice: Number(fields[16]) };
  });
}

const ours = getPriority(process.pid);
let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

/** Runs a program (with a binding call: threads made on a run's path) and returns its host's pid. */
async function hostAfterRun(hostNice: number | undefined): Promise<number> {
  const events: ProcessEvent[] = [];
  engine = createEngine({
    prewarm: false,
    onProcessEvent: (e) => events.push(e),
    ...(hostNice === undefined ? {} : { hostNice }),
  });
  const outcome = await engine.execute('return await apps.t.echo({ a: 1 })', {
    partition: 'p1',
    bindings: ['t.echo'],
    onCall: async (c) => ({ type: 'result', valueJson: c.argsJson }),
  });
  expect(outcome.status, JSON.stringify(outcome.failure)).toBe('completed');
  const started = events.find((e) => e.type === 'started');
  expect(started?.pid).toBeTypeOf('number');
  return started!.pid!;
}

describe('the sandbox host’s niceness', () => {
  it('is what hostNice names on every thread of the host, those made on a run’s path too', async () => {
    for (const hostNice of [10, 15]) {
      const pid = await hostAfterRun(hostNice);
      const threads = threadNiceness(pid);
      expect(threads.length).toBeGreaterThan(1);
      expect(threads.filter((t) => t.nice !== Math.max(ours, hostNice))).toEqual([]);
      await engine!.close();
      engine = undefined;
    }
  });

  it('is left as the engine’s by default (DEFAULT_HOST_NICE 0) and with hostNice 0', async () => {
    expect(DEFAULT_HOST_NICE).toBe(0);
    for (const hostNice of [undefined, 0]) {
      const pid = await hostAfterRun(hostNice);
      expect(threadNiceness(pid).filter((t) => t.nice !== ours)).toEqual([]);
      await engine!.close();
      engine = undefined;
    }
  });

  it('reads only a whole number 1–19 from the environment', () => {
    expect(hostNiceFrom({ [HOST_NICE_ENV]: '10' })).toBe(10);
    expect(hostNiceFrom({ [HOST_NICE_ENV]: '19' })).toBe(19);
    for (const bad of [undefined, '', '0', '20', '-5', '1.5', ' 3', '3x', '007'])
      expect(hostNiceFrom({ [HOST_NICE_ENV]: bad })).toBeUndefined();
  });
});
