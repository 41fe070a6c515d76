/**
 * The sandbox host's environment as the kernel gave it to the real process (/proc/<pid>/environ):
 * HOST_ENV's malloc settings and the niceness the host sets on itself (host-priority.ts) reach every
 * host, beside what `hostEnv` adds, and a name given there wins.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_HOST_NICE, HOST_NICE_ENV } from './host-priority.ts';
import { HOST_ENV } from './host-process.ts';
import { createEngine } from './index.ts';

/**
 * /proc/<pid>/environ is the process's own memory: glibc splits GLIBC_TUNABLES there in place while
 * it reads it (each `:` becomes a NUL), so the settings after the first show as entries of their own.
 * Joined back here: seeing them split is also seeing that glibc read them.
 */
function environOf(pid: number): Record<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8')
    .replace(/\0(?=glibc\.)/g, ':')
    .split('\0')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const);
  return Object.fromEntries(entries);
}

async function hostEnvironment(
  hostEnv?: Record<string, string>,
  hostNice?: number,
): Promise<Record<string, string>> {
  const engine = createEngine({
    prewarm: false,
    ...(hostEnv ? { hostEnv } : {}),
    ...(hostNice === undefined ? {} : { hostNice }),
  });
  try {
    const out = await engine.execute('return 1');
    expect(out.status).toBe('completed');
    expect(out.hostPid).toBeGreaterThan(0);
    return environOf(out.hostPid!);
  } finally {
    await engine.close();
  }
}

describe("the sandbox host's environment", () => {
  it("holds glibc malloc's top pad and mmap threshold, and nothing else by default", async () => {
    expect(HOST_ENV.GLIBC_TUNABLES).toBe('glibc.malloc.top_pad=1048576:glibc.malloc.mmap_threshold=4194304');
    expect(DEFAULT_HOST_NICE).toBe(0);
    expect(await hostEnvironment()).toEqual({ GLIBC_TUNABLES: HOST_ENV.GLIBC_TUNABLES });
    // hostNice: the host is told the niceness to set on itself (host-priority.test.ts reads it set).
    expect(await hostEnvironment(undefined, 10)).toEqual({
      GLIBC_TUNABLES: HOST_ENV.GLIBC_TUNABLES,
      [HOST_NICE_ENV]: '10',
    });
  });

  it('adds what hostEnv gives, and a name given there wins', async () => {
    expect(await hostEnvironment({ ISLET_PROBE: '1' })).toEqual({
      GLIBC_TUNABLES: HOST_ENV.GLIBC_TUNABLES,
      ISLET_PROBE: '1',
    });
    expect(
      await hostEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=1', [HOST_NICE_ENV]: '3' }),
    ).toEqual({
      GLIBC_TUNABLES: 'glibc.malloc.arena_max=1',
      [HOST_NICE_ENV]: '3',
    });
  });
});
