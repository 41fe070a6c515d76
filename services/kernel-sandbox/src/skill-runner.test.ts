import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeLayout } from '../test/test-helpers.ts';
import { runSkill, SKILL_OUTPUT_CAP_BYTES, SKILL_RUN_UID_BASE } from './skill-runner.ts';

const layout = makeLayout('islet-skill-test-');
afterAll(() => layout.cleanup());
const tmpDir = join(layout.base, 'tmp');
mkdirSync(tmpDir, { recursive: true });

/** A live (not zombie) `sleep` process with this pid. */
function sleepAlive(pid: number): boolean {
  try {
    const m = /\((.*)\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return !!m && m[2] !== 'Z' && (m[1] === 'sleep' || m[1] === 'python3');
  } catch {
    return false;
  }
}

/** Pids of live processes whose command line contains `text`. */
function processesWith(text: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (cmd.includes(text) && !/\) Z /.test(stat)) out.push(Number(name));
    } catch {}
  }
  return out;
}

describe('run_code skill', () => {
  it('runs python, javascript and bash with the documented answer shape', async () => {
    const py = await runSkill({
      language: 'python',
      code: "import json\nprint(json.dumps({'sum': sum(range(10))}))",
      mode: 'read-only',
      tmpDir,
    });
    expect(py).toEqual({
      success: true,
      output: '{"sum": 45}\n',
      error: '',
      exitCode: 0,
      language: 'python',
    });
    const js = await runSkill({
      language: 'javascript',
      code: 'console.log([1,2,3].map(x => x * 2).join(","))',
      mode: 'read-only',
      tmpDir,
    });
    expect(js).toEqual({ success: true, output: '2,4,6\n', error: '', exitCode: 0, language: 'javascript' });
    const sh = await runSkill({
      language: 'bash',
      code: 'echo out; echo err >&2; exit 3',
      mode: 'read-only',
      tmpDir,
    });
    expect(sh).toEqual({ success: false, output: 'out\n', error: 'err\n', exitCode: 3, language: 'bash' });
  });

  it('starts with only PATH and HOME, as a non-root user, in the workspace, and removes its scratch', async () => {
    const r = await runSkill({
      language: 'javascript',
      code: 'console.log(Object.keys(process.env).sort().join(","));console.log(process.getuid());console.log(process.cwd())',
      mode: 'workspace-write',
      workspaceDir: layout.ws,
      workspaceRoot: layout.root,
      tmpDir,
    });
    const lines = r.output.trim().split('\n');
    expect(lines[0]).toBe('HOME,PATH');
    if (process.getuid?.() === 0) {
      expect(Number(lines[1])).toBeGreaterThanOrEqual(SKILL_RUN_UID_BASE); // a fresh uid per run
    } else expect(lines[1]).toBe(String(process.getuid?.()));
    expect(lines[2]).toBe(layout.ws);
    expect(readdirSync(tmpDir)).toEqual([]);
  });

  it('kills the program (and its children) at the timeout, keeping what it printed', async () => {
    const r = await runSkill({
      language: 'bash',
      code: 'echo started; sleep 600 & sleep 600; echo never',
      timeout: 400,
      mode: 'read-only',
      tmpDir,
    });
    // Answered at the timeout, not when the orphaned `sleep 600` lets go of the pipes (that would
    // outlast the test's own 60 s limit).
    expect(r).toMatchObject({ success: false, output: 'started\n', exitCode: 124, language: 'bash' });
    expect(r.error).toContain('timed out after 400 ms; the program was killed');
  });

  // Each escape keeps the output pipe open (before the supervisor, the answer waited for the
  // last holder) and leaves the program's process group or its parent.
  const ESCAPES = {
    setsid: 'setsid sleep 601.1 & echo "pid $!"',
    'double fork': '( (sleep 601.2 & echo "pid $!") & )',
    nohup: 'nohup sleep 601.3 2>/dev/null & echo "pid $!"',
    'python fork+setsid': `python3 -c 'import os,sys,time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print("pid", os.getpid(), flush=True)
        time.sleep(601.4)
    os._exit(0)
time.sleep(0.2)'`,
  };

  it.each(Object.entries(ESCAPES))(
    'answers at the timeout and leaves no process of the tree alive: %s',
    async (_name, escapeCode) => {
      const timeout = 3000; // room for python to start on a loaded machine
      const t0 = Date.now();
      const r = await runSkill({
        language: 'bash',
        code: `${escapeCode}\nsleep 0.3; echo started; sleep 60`,
        timeout,
        mode: 'read-only',
        tmpDir,
      });
      const elapsed = Date.now() - t0;
      expect(r.exitCode).toBe(124);
      expect(r.output).toContain('started');
      expect(elapsed).toBeGreaterThanOrEqual(timeout - 50);
      // The escapes sleep 601 s, ten times the test's own limit: an answer that waited for them
      // would fail the test by its timeout, so reaching here means it did not.
      const pids = [...r.output.matchAll(/^pid (\d+)$/gm)].map((m) => Number(m[1]));
      expect(pids).toHaveLength(1); // the escape did start
      expect(pids.filter(sleepAlive)).toEqual([]);
      expect(processesWith('sleep 601.')).toEqual([]);
    },
  );

  it('kills the whole tree as soon as the program itself exits', async () => {
    const r = await runSkill({
      language: 'bash',
      code: `${ESCAPES.setsid}\n${ESCAPES['double fork']}\nsleep 0.2; exit 5`,
      timeout: 20_000,
      mode: 'read-only',
      tmpDir,
    });
    // The program's own status, not the 20 s timeout's 124: answered when the program exited.
    expect(r.exitCode).toBe(5);
    expect([...r.output.matchAll(/^pid (\d+)$/gm)].map((m) => Number(m[1])).filter(sleepAlive)).toEqual([]);
  });

  it('keeps the first 1 MB of output and lets a program that prints more finish', async () => {
    const r = await runSkill({
      language: 'python',
      code: "for i in range(1024):\n    print('y' * 4095)\nprint('done', flush=True)\nimport sys\nsys.stderr.write('finished')",
      mode: 'read-only',
      tmpDir,
    });
    expect(Buffer.byteLength(r.output)).toBe(SKILL_OUTPUT_CAP_BYTES);
    expect(r.output.startsWith('y'.repeat(4095))).toBe(true);
    expect(r).toMatchObject({ success: true, exitCode: 0 });
    expect(r.error).toContain('finished');
    expect(r.error).toContain('stdout was truncated: captured the first 1048576 bytes');
  });

  it('explains how to install a missing interpreter', async () => {
    const r = await runSkill({
      language: 'python',
      code: 'print(1)',
      mode: 'read-only',
      tmpDir,
      interpreters: { python: 'python3-missing' },
    });
    expect(r).toEqual({
      success: false,
      output: '',
      error: 'python3 is not installed; install it with: apt-get install python3',
      exitCode: 127,
      language: 'python',
    });
    const b = await runSkill({
      language: 'bash',
      code: 'true',
      mode: 'read-only',
      tmpDir,
      interpreters: { bash: '/nonexistent/bash' },
    });
    expect(b.error).toBe('bash is not installed; install it with: apt-get install bash');
  });

  it('does not start when full enforcement is required and a layer is missing (sandbox-unavailable)', async () => {
    const r = await runSkill({
      language: 'bash',
      code: 'echo ran',
      mode: 'read-only',
      tmpDir,
      requireFull: true,
      testSkipLayer: 'seccomp',
    });
    expect(r.output).toBe('');
    expect(r.exitCode).toBe(78);
    expect(r.error).toMatch(
      /^code run failed \(sandbox-unavailable\): mode read-only could not be fully enforced/,
    );
  });

  it('answers instead of throwing when the host cannot prepare the run', async () => {
    const r = await runSkill({
      language: 'bash',
      code: 'true',
      mode: 'read-only',
      tmpDir: join(layout.base, 'missing'),
    });
    expect(r.success).toBe(false);
    expect(r.error).toMatch(/^the program could not be started: ENOENT/);
  });
});
