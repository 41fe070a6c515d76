/**
 * The growth bound reads a host's private memory (RssAnon + RssShmem), not VmRSS: the node
 * binary's code pages that V8's optimizing compiler maps in once in a host's life are file-backed
 * and shared (~5 MiB at once; they alone replaced a host every ~20 runs of 100 calls, round 34
 * `par-calls`), while a leak, anonymous memory, still retires the host.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from './engine.ts';
import { HostProcess, privateBytesOf } from './host-process.ts';
import type { Engine, ProcessEvent } from './types.ts';

const MiB = 1024 * 1024;
let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

/** A /proc/<pid>/status's memory lines, KiB. */
const status = (rss: number, anon: number, file: number, shmem: number) =>
  `Name:\tnode\nVmPeak:\t 900000 kB\nVmRSS:\t${rss} kB\nRssAnon:\t${anon} kB\nRssFile:\t${file} kB\nRssShmem:\t${shmem} kB\nVmData:\t 1 kB\n`;

describe("a host's growth bound", () => {
  it('counts anonymous and shared-memory pages, not file-backed ones', () => {
    const base = privateBytesOf(status(56_000, 14_000, 41_900, 100))!;
    expect(base).toBe(14_100 * 1024);
    // Turbofan's text mapped in: VmRSS +5 MiB, all of it file-backed: no growth.
    expect(privateBytesOf(status(61_120, 14_000, 47_020, 100))! - base).toBe(0);
    // A leak: anonymous memory.
    expect(privateBytesOf(status(62_144, 20_144, 41_900, 100))! - base).toBe(6_144 * 1024);
    // A status without the lines (no such kernel): unknown, not zero.
    expect(privateBytesOf('VmRSS:\t100 kB\n')).toBeUndefined();
  });

  it("reads a real host's RssAnon + RssShmem, below its VmRSS by its file-backed pages", async () => {
    const host = await HostProcess.start({ partition: 'private-read', startupTimeoutMs: 20_000 });
    try {
      const text = readFileSync(`/proc/${host.pid}/status`, 'latin1');
      const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)![1]) * 1024;
      const read = host.privateBytes()!;
      // Read at different moments: within 1 MiB of the test's own read.
      expect(Math.abs(read - (kb('RssAnon') + kb('RssShmem')))).toBeLessThan(MiB);
      // The node binary and its libraries: tens of MiB that the bound no longer counts.
      expect(host.residentBytes()! - read).toBeGreaterThan(20 * MiB);
    } finally {
      host.kill();
    }
  });

  it('still retires a host whose own anonymous memory grows (a leak), read from /proc', async () => {
    const events: ProcessEvent[] = [];
    const preload = fileURLToPath(new URL('../test/leak-preload.mjs', import.meta.url));
    engine = createEngine({
      maxHostResidentGrowthBytes: 8 * MiB,
      prewarm: false,
      // The host keeps 1 MiB for every frame write after its first run's (leak-preload.mjs).
      wrapCommand: (command, args) => ({ command, args: ['--import', preload, ...args] }),
      onProcessEvent: (e) => events.push(e),
    });
    for (let i = 0; i < 40; i++) {
      const out = await engine.execute('return 1;', { limits: { timeoutMs: 5000 } });
      expect(out.status).toBe('completed');
    }
    const retired = events.filter((e) => e.type === 'retired');
    // ~16 MiB kept by the 16th run's check: past the 8 MiB bound there, with no real leak of ours.
    expect(retired.map((e) => (e as { reason: string }).reason)).toContain('max-memory');
  });
});
