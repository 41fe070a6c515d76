/**
 * A skill writing far past its workspace's byte limit while it runs (many files, each under
 * RLIMIT_FSIZE; one file in an already full workspace), through the real skill path with the
 * workspace store's default limits (100 MiB, 1000 files). The limits must hold while it runs, not
 * only when the runner measures the workspace afterwards.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  closeFilesHelpers,
  DEFAULT_WORKSPACE_LIMITS,
  JAIL_WORKSPACE_FULL_EXIT_CODE,
  runSkill,
  WorkspaceStore,
} from '../../services/kernel-sandbox/src/index.ts';
import { makeLayout } from '../../services/kernel-sandbox/test/test-helpers.ts';

const layout = makeLayout('islet-budget-');
const store = new WorkspaceStore({ root: layout.root });
afterAll(() => {
  closeFilesHelpers();
  layout.cleanup();
});

const MiB = 1024 * 1024;
const LIMIT = DEFAULT_WORKSPACE_LIMITS.maxWorkspaceBytes;
/**
 * What may pass the limit before the supervisor's next look: the writes of a few check intervals
 * plus one chunk. Far below what the attacks write past it (180 MiB).
 */
const SLACK = 48 * MiB;

let n = 0;
function freshWorkspace(): { session: string; dir: string } {
  const session = `budget-${++n}`;
  const dir = join(layout.root, 'tenant-a', session);
  mkdirSync(dir, { mode: 0o755 });
  return { session, dir };
}

const skill = (dir: string, code: string) =>
  runSkill({
    mode: 'workspace-write',
    workspaceDir: dir,
    workspaceRoot: layout.root,
    timeout: 60_000,
    language: 'python',
    code,
  });

describe('a skill writing past its workspace limit while it runs', () => {
  it('many files, each under RLIMIT_FSIZE: stopped near the limit, not 180 MiB past it', async () => {
    const { session, dir } = freshWorkspace();
    const r = await skill(
      dir,
      [
        'chunk = b"x" * (4 << 20)',
        'for i in range(70):', // 280 MiB in 4 MiB files
        '  with open("f%03d.bin" % i, "wb") as f: f.write(chunk)',
        'print("wrote 280 MiB")',
      ].join('\n'),
    );
    const usage = await store.usage('tenant-a', session);
    expect(usage.bytes).toBeLessThanOrEqual(LIMIT + SLACK);
    expect(usage.bytes).toBeGreaterThan(LIMIT);
    expect(r.output).toBe('');
    expect(r.exitCode).toBe(JAIL_WORKSPACE_FULL_EXIT_CODE);
    expect(r.error).toContain('the workspace passed its limit while the program ran');
    expect(usage.over).toBe(true);
    // …and the store then refuses further writes until files are removed.
    await expect(store.workspace('tenant-a', session).write('more.txt', Buffer.from('x'))).rejects.toThrow();
  });

  it('one growing file in a workspace that is already 60 MiB full', async () => {
    const { session, dir } = freshWorkspace();
    for (let i = 0; i < 6; i++) writeFileSync(join(dir, `old-${i}.bin`), Buffer.alloc(10 * MiB, 1));
    const r = await skill(
      dir,
      [
        'chunk = b"y" * (1 << 20)',
        'try:',
        '  with open("big.bin", "wb") as f:',
        '    for i in range(200): f.write(chunk); f.flush()',
        '  print("wrote 200 MiB")',
        'except OSError as e: print("stopped", e.errno)',
      ].join('\n'),
    );
    const usage = await store.usage('tenant-a', session);
    // RLIMIT_FSIZE was what the budget left (40 MiB) plus the largest file there (10 MiB): whatever
    // the supervisor's timing, the file stops at 50 MiB (or earlier, when the supervisor saw it first).
    expect(usage.bytes).toBeLessThanOrEqual(LIMIT + 10 * MiB);
    expect(r.output).not.toContain('wrote 200 MiB');
    expect(r.success).toBe(false);
  });

  it('a skill that only reads a workspace already over its limit is not blamed for it', async () => {
    const { dir } = freshWorkspace();
    for (let i = 0; i < 11; i++) writeFileSync(join(dir, `old-${i}.bin`), Buffer.alloc(10 * MiB, 1));
    const r = await skill(dir, 'import os\nprint(len(os.listdir(".")))');
    expect(r).toMatchObject({ success: true, output: '11\n', exitCode: 0 });
  });

  it('a skill that stays under the limit is not disturbed', async () => {
    const { dir } = freshWorkspace();
    const r = await skill(
      dir,
      'for i in range(20):\n  open("ok%d.bin" % i, "wb").write(b"z" * (1 << 20))\nprint("done")',
    );
    expect(r).toMatchObject({ success: true, output: 'done\n', exitCode: 0 });
  });
});
