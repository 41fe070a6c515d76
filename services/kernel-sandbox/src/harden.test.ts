/**
 * islet-harden.node: a non-dumpable process keeps a same-uid neighbour (a sandbox in a non-root
 * pod) out of its /proc/<pid>/environ; no_new_privs is held. Shown with processes of uid 65534,
 * since root reads everything anyway.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requireRoot } from '../test/test-helpers.ts';
import { hardenAddonPath } from './harden.ts';
import { sandboxRuntime } from './runtime.ts';

const NOBODY = 65534;
const dir = mkdtempSync(join(tmpdir(), 'islet-harden-'));
chmodSync(dir, 0o755);
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A Node process of uid 65534 holding a secret in its environment; hardened or not. */
async function neighbour(harden: boolean): Promise<{ pid: number; report: string }> {
  const addon = join(dir, 'islet-harden.node');
  copyFileSync(hardenAddonPath(), addon);
  chmodSync(addon, 0o755);
  const code = harden
    ? `const h=require(${JSON.stringify(addon)});h.setNonDumpable();h.setNoNewPrivs();console.log(JSON.stringify({dumpable:h.getDumpable(),nnp:h.getNoNewPrivs()}));setInterval(()=>{},1000)`
    : `console.log('{}');setInterval(()=>{},1000)`;
  const child = spawn(sandboxRuntime().node, ['-e', code], {
    uid: NOBODY,
    gid: NOBODY,
    env: { SECRET: 'do-not-read-me-0123456789' },
    // Not the checkout: uid 65534 may not traverse it (a clone under a 0700 directory).
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const report = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString()));
    child.once('exit', (code) => reject(new Error(`the uid ${NOBODY} node exited early (${code})`)));
  });
  return { pid: child.pid!, report: report.trim() };
}

/** A second uid-65534 process reads the first one's environment. */
const readAsNobody = (pid: number) =>
  spawnSync('cat', [`/proc/${pid}/environ`], { uid: NOBODY, gid: NOBODY, encoding: 'utf8' });

describe('islet-harden.node', () => {
  it('non-dumpable: /proc/<pid>/environ turns root-owned and a same-uid neighbour cannot read the environment', async () => {
    requireRoot('switching to uid 65534');
    const plain = await neighbour(false);
    const hardened = await neighbour(true);
    expect(JSON.parse(hardened.report)).toEqual({ dumpable: 0, nnp: 1 });
    // The control: same uid, dumpable, readable by its neighbour.
    expect(statSync(`/proc/${plain.pid}/environ`).uid).toBe(NOBODY);
    expect(readAsNobody(plain.pid).stdout).toContain('do-not-read-me-0123456789');
    // Hardened: the kernel hands /proc/<pid> to root and refuses the neighbour.
    expect(statSync(`/proc/${hardened.pid}/environ`).uid).toBe(0);
    const denied = readAsNobody(hardened.pid);
    expect(denied.status).not.toBe(0);
    expect(denied.stdout).toBe('');
    expect(denied.stderr).toMatch(/Permission denied/);
  });
});
