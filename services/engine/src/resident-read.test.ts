/**
 * The engine reads a host's resident memory (the run's guard every RESIDENT_GUARD_MS, the release's
 * growth check) through one /proc/<pid>/status descriptor a host, kept open and read again from its
 * start, closed when the host exits: an open and a close fewer each read. Counted from this
 * process's open descriptors.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { childPids } from '../test/processes.ts';
import { createEngine } from './index.ts';

/** This process's descriptors open on `/proc/<pid>/status`. */
function statusDescriptors(pid: number): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === `/proc/${pid}/status`) n++;
    } catch {
      // closed meanwhile (readdir's own descriptor)
    }
  }
  return n;
}

describe("a host's resident memory", () => {
  it('is read through one descriptor a host, kept open across its runs, closed when the host exits', async () => {
    const seen: number[] = [];
    const host = createEngine();
    try {
      // The release reads a host after its first run and every 16th (its growth check): two reads
      // of one host, 15 runs apart.
      for (let i = 0; i < 16; i++) {
        const out = await host.execute('return 1;', { limits: { timeoutMs: 5000 } });
        expect(out.status).toBe('completed');
      }
      const pids = childPids();
      const read = pids.filter((pid) => statusDescriptors(pid) > 0);
      // One host ran the programs; both reads went through one descriptor, still open for the next.
      expect(read).toHaveLength(1);
      const pid = read[0]!;
      seen.push(pid);
      expect(statusDescriptors(pid)).toBe(1);
    } finally {
      await host.close();
    }
    // The host exited: its descriptor is closed.
    expect(statusDescriptors(seen[0]!)).toBe(0);
  });
});
