import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installProfiles } from './install-profiles.ts';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'islet-prof-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('installProfiles', () => {
  it('copies profiles byte for byte, only when they differ, and repairs drift', () => {
    const from = tmp();
    const to = join(tmp(), 'islet');
    writeFileSync(join(from, 'read-only.json'), '{"defaultAction":"SCMP_ACT_ERRNO"}');
    writeFileSync(join(from, 'README'), 'not a profile');
    expect(installProfiles(from, to)).toEqual(['read-only.json']);
    expect(readFileSync(join(to, 'read-only.json'), 'utf8')).toBe('{"defaultAction":"SCMP_ACT_ERRNO"}');
    expect(installProfiles(from, to)).toEqual([]);
    writeFileSync(join(to, 'read-only.json'), '{}');
    expect(installProfiles(from, to)).toEqual(['read-only.json']);
    expect(readdirSync(to)).toEqual(['read-only.json']); // no temp files left
  });

  it('refuses a profile that is not JSON, leaving the installed one in place', () => {
    const from = tmp();
    const to = tmp();
    writeFileSync(join(to, 'bad.json'), '{"ok":true}');
    writeFileSync(join(from, 'bad.json'), '{not json');
    expect(() => installProfiles(from, to)).toThrow();
    expect(readFileSync(join(to, 'bad.json'), 'utf8')).toBe('{"ok":true}');
  });

  it('runs as the DaemonSet command line (a first pass, then stops on SIGTERM)', async () => {
    const from = tmp();
    const to = join(tmp(), 'islet');
    writeFileSync(join(from, 'workspace-write.json'), '{"a":1}');
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, 'install-profiles.ts'), from, to, '50'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      let stdout = '';
      child.stdout.setEncoding('utf8');
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once('exit', (code, signal) => resolve({ code, signal })),
      );
      // Its first pass is done when it says so (however long a loaded machine takes to start it);
      // only then is it told to stop.
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: string) => {
          stdout += chunk;
          if (stdout.includes('seccomp profiles installed')) resolve();
        });
        void exited.then((e) => reject(new Error(`exited before its first pass: ${JSON.stringify(e)}`)));
      });
      expect(readFileSync(join(to, 'workspace-write.json'), 'utf8')).toBe('{"a":1}');
      child.kill('SIGTERM');
      expect(await exited).toEqual({ code: 0, signal: null });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
