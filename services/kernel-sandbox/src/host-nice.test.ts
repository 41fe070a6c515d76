/**
 * A sandbox host started under islet-jail (another uid, seccomp, Landlock) is below Islet's own
 * processes too: the host raises its own threads' niceness at start (engine host-priority.ts), which
 * needs no privilege and reaches the jailed process that the runner, as another uid, could not renice
 * from outside. Read from /proc, the kernel's own record.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { createEngine, type ProcessEvent } from '@islet/engine';
import { describe, expect, it } from 'vitest';
import { requireRoot } from '../test/test-helpers.ts';
import { wrapCommandForMode } from './jail.ts';

/** The process and its descendants (the launcher may keep a supervisor above the host). */
function tree(pid: number): number[] {
  const out = [pid];
  for (const tid of readdirSync(`/proc/${pid}/task`))
    for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean))
      out.push(...tree(Number(child)));
  return out;
}

const niceOf = (pid: number, tid: string) => {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
};

describe('a jailed sandbox host’s niceness', () => {
  it('is what hostNice names on every thread of the jailed host, which runs as another uid', async () => {
    requireRoot('islet-jail’s per-run uid');
    const events: ProcessEvent[] = [];
    const engine = createEngine({
      prewarm: false,
      hostNice: 10,
      wrapCommand: wrapCommandForMode('read-only', { require: 'full' }),
      onProcessEvent: (e) => events.push(e),
    });
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
      expect(uid).not.toBe(process.getuid?.());
      const want = Math.max(getPriority(process.pid), 10);
      const threads = readdirSync(`/proc/${host}/task`);
      expect(threads.length).toBeGreaterThan(1);
      expect(threads.filter((tid) => niceOf(host, tid) !== want)).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});
