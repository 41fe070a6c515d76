/**
 * Hostile run_code programs against the kernel layer, through the real skill path (runSkill →
 * islet-jail → interpreter). Each attempt is stopped with a clear error and nothing else changes.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { processesOf } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFilesBinding,
  type RunSkillOptions,
  runSkill,
} from '../../services/kernel-sandbox/src/index.ts';
import { makeLayout, requireRoot } from '../../services/kernel-sandbox/test/test-helpers.ts';

const layout = makeLayout('islet-adv-');
const secretPath = join(layout.other, 'secret.txt');
const hostFile = join(layout.outside, 'host.txt');
let server: Server;
let port = 0;
let connections = 0;

beforeAll(async () => {
  server = createServer((s) => {
    connections++;
    s.end('hello');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  layout.cleanup();
});

const base: Omit<RunSkillOptions, 'language' | 'code'> = {
  mode: 'workspace-write',
  workspaceDir: layout.ws,
  workspaceRoot: layout.root,
  timeout: 10_000,
};
const py = (code: string, extra: Partial<RunSkillOptions> = {}) =>
  runSkill({ ...base, language: 'python', code, ...extra });
const sh = (code: string, extra: Partial<RunSkillOptions> = {}) =>
  runSkill({ ...base, language: 'bash', code, ...extra });

/** The fork bombs' budget: on a loaded machine forks are slow, and the bomb must meet its limit before the timeout. */
const BOMB_TIMEOUT_MS = 4000;
const BOMB_NPROC = 24;

describe('hostile programs under islet-jail', () => {
  it('cannot open a network socket (python and bash), and the listener sees nothing', async () => {
    const p = await py(
      `import socket\ntry:\n  socket.create_connection(('127.0.0.1', ${port}), timeout=2)\n  print('connected')\nexcept OSError as e:\n  print('denied', e.errno, e.strerror)`,
    );
    expect(p.output).toBe('denied 1 Operation not permitted\n');
    const b = await sh(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`);
    expect(b.success).toBe(false);
    expect(b.output).toBe('');
    expect(b.error).toContain('Operation not permitted');
    expect(connections).toBe(0);
  });

  it('cannot ptrace, signal its parent, use io_uring or unshare (ctypes straight to the kernel)', async () => {
    const r = await py(
      [
        'import ctypes, os',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'def t(name, rc): print(name, rc, ctypes.get_errno())',
        't("ptrace", libc.ptrace(16, os.getppid(), 0, 0))',
        'p = (ctypes.c_char * 120)()',
        't("io_uring_setup", libc.syscall(425, 4, p))',
        't("unshare", libc.unshare(0x10000000))',
        'try:\n  os.kill(os.getppid(), 9)\nexcept OSError as e: print("kill", e.errno)',
      ].join('\n'),
    );
    expect(r.output).toBe('ptrace -1 1\nio_uring_setup -1 1\nunshare -1 1\nkill 1\n');
  });

  it('cannot read /proc/1/environ nor another tenant workspace, directly or via /proc/self/root', async () => {
    const r = await py(
      [
        'import os',
        'def t(name, fn):',
        '  try: fn(); print(name, "read")',
        '  except OSError as e: print(name, e.errno)',
        `t("environ", lambda: open("/proc/1/environ","rb").read())`,
        `t("other", lambda: open(${JSON.stringify(secretPath)}).read())`,
        `t("list-root", lambda: os.listdir(${JSON.stringify(layout.root)}))`,
        `t("proc-root", lambda: open("/proc/self/root" + ${JSON.stringify(secretPath)}).read())`,
        `t("cwd-dots", lambda: open("/proc/self/cwd/../../tenant-b/session-9/secret.txt").read())`,
        `t("own", lambda: open("mine.txt").read())`,
      ].join('\n'),
    );
    expect(r.output).toBe('environ 13\nother 13\nlist-root 13\nproc-root 13\ncwd-dots 13\nown read\n');
  });

  it("cannot read a process's environment of the same uid outside the sandbox (Landlock, not DAC)", async () => {
    requireRoot('the same-uid /proc test (it starts a helper as uid 65534)');
    const victim = spawn('/usr/bin/sleep', ['20'], {
      uid: 65534,
      gid: 65534,
      env: { ISLET_SECRET: 'hunter2' },
    });
    try {
      await new Promise((r) => setTimeout(r, 100));
      const environ = `/proc/${victim.pid}/environ`;
      // Control: an unsandboxed process of the same uid reads it.
      const control = spawn('/usr/bin/cat', [environ], { uid: 65534, gid: 65534 });
      let seen = '';
      control.stdout.on('data', (d) => {
        seen += d;
      });
      await new Promise((r) => control.on('close', r));
      expect(seen).toContain('ISLET_SECRET=hunter2');
      const r = await py(
        `try:\n  print(open(${JSON.stringify(environ)}).read())\nexcept OSError as e:\n  print('denied', e.errno)`,
      );
      expect(r.output).toBe('denied 13\n');
    } finally {
      victim.kill('SIGKILL');
    }
  });

  it('cannot write outside its workspace; symlinks it plants do not lead out, for it or for the files binding', async () => {
    const r = await sh(
      [
        `echo pwned > ${hostFile} || echo outside-denied`,
        'echo pwned > /etc/islet-pwned || echo etc-denied',
        `echo pwned > ${secretPath} || echo other-denied`,
        `ln -s ${secretPath} link.txt && (cat link.txt || echo link-denied)`,
        `ln -s ${layout.outside} dirlink && (echo x > dirlink/y || echo dirlink-denied)`,
        'echo ok > result.txt && echo own-ok',
      ].join('\n'),
    );
    expect(r.output).toBe('outside-denied\netc-denied\nother-denied\nlink-denied\ndirlink-denied\nown-ok\n');
    expect(r.error).toContain('Permission denied');
    const files = createFilesBinding({
      mode: 'workspace-write',
      workspaceDir: layout.ws,
      enforcement: 'full',
    });
    const viaBinding = await files({ binding: 'files.read', argsJson: JSON.stringify({ path: 'link.txt' }) });
    expect(viaBinding).toMatchObject({
      type: 'error',
      message: 'File sandbox: workspace-write; enforcement: full; operation denied',
      details: { reason: 'outside-workspace' },
    });
    expect(readFileSync(hostFile, 'utf8')).toBe('host file\n');
    expect(readFileSync(secretPath, 'utf8')).toBe('tenant-b secret\n');
    expect(existsSync('/etc/islet-pwned')).toBe(false);
    expect(readdirSync(layout.outside)).toEqual(['host.txt']);
  });

  it('cannot fill the disk: RLIMIT_FSIZE stops the write with a clear error', async () => {
    const limit = 4 * 1024 * 1024;
    const p = await py(
      `try:\n  with open('fill.bin', 'wb') as f:\n    while True: f.write(b'x' * 65536)\nexcept OSError as e:\n  print('stopped', e.errno, e.strerror)`,
      { rlimitFsizeBytes: limit },
    );
    expect(p.output).toBe('stopped 27 File too large\n');
    expect(statSync(join(layout.ws, 'fill.bin')).size).toBeLessThanOrEqual(limit);
    const b = await sh('head -c 100000000 /dev/zero > fill2.bin', { rlimitFsizeBytes: limit });
    expect(b.success).toBe(false);
    expect(b.error).toMatch(/File size limit exceeded|SIGXFSZ/);
    expect(statSync(join(layout.ws, 'fill2.bin')).size).toBeLessThanOrEqual(limit);
  });

  it('a fork bomb hits RLIMIT_NPROC, is killed at the timeout, and leaves no process behind', async () => {
    requireRoot('the fork-bomb test (RLIMIT_NPROC applies to a dedicated non-root uid)');
    const uid = 64_123;
    const bombs = Promise.all([
      py(
        'import os\nn = 0\ntry:\n  while True:\n    if os.fork() == 0:\n      import time; time.sleep(30); os._exit(0)\n    n += 1\nexcept OSError as e:\n  print("stopped after", n, "forks:", e.strerror, flush=True)\nimport time; time.sleep(30)',
        { uid, gid: uid, rlimitNproc: BOMB_NPROC, timeout: BOMB_TIMEOUT_MS },
      ),
      // The main shell stays (a busy loop, no fork) so the bomb meets the timeout, not the end of
      // the program (which kills the tree at once: islet-jail --supervise).
      sh(':(){ :|:& };:; while :; do :; done', {
        uid: uid + 1,
        gid: uid + 1,
        rlimitNproc: BOMB_NPROC,
        timeout: BOMB_TIMEOUT_MS,
      }),
    ]);
    // Meanwhile an ordinary run is unaffected.
    const normal = await py('print(sum(range(100)))');
    expect(normal.output).toBe('4950\n');
    const [pyBomb, shBomb] = await bombs;
    expect(pyBomb.output).toMatch(/^stopped after \d+ forks: Resource temporarily unavailable\n$/);
    expect(pyBomb.exitCode).toBe(124);
    expect(shBomb.exitCode).toBe(124);
    expect(shBomb.error).toContain(`timed out after ${BOMB_TIMEOUT_MS} ms; the program was killed`);
    // SIGKILL is delivered to the whole group at once; give the kernel a moment to tear them down.
    for (let i = 0; i < 50 && processesOf(uid).length + processesOf(uid + 1).length > 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(processesOf(uid)).toEqual([]);
    expect(processesOf(uid + 1)).toEqual([]);
  });
});

describe('processes a run leaves behind', () => {
  it('are killed when the run ends, even after setsid left the process group', async () => {
    requireRoot('the setsid sweep test (per-run uids need root)');
    const r = await sh(
      'id -u\nsetsid sleep 30 < /dev/null > /dev/null 2>&1 &\nsleep 30 < /dev/null > /dev/null 2>&1 &\nsleep 0.3\necho started',
      { timeout: 5000 },
    );
    expect(r.success).toBe(true);
    const uid = Number(r.output.split('\n')[0]);
    expect(uid).toBeGreaterThanOrEqual(200_000);
    expect(processesOf(uid)).toEqual([]);
  });
});

// Keeps the layout's writable outside dir honest for the write test.
writeFileSync(hostFile, 'host file\n');
