/**
 * The chart's seccomp profiles under a real OCI runtime: runc (as root) runs the probe, Python, Node and
 * islet-jail inside a bundle whose linux.seccomp is the profile file itself and whose root is read-only.
 * From inside: inet sockets, writes outside the allowed paths, unshare, ptrace and io_uring_setup fail;
 * AF_UNIX, reading the interpreter and writing the workspace / tmpfs work.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createEngine } from '@islet/engine';
import { SANDBOX_MODES, type SandboxMode } from '@islet/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  jailArgs,
  jailPath,
  PACKAGE_DIR,
  sandboxRuntime,
  wrapCommandForMode,
} from '../../services/kernel-sandbox/src/index.ts';
import {
  DENIED_PROBE_OPS,
  probePath,
  profilePath,
  requireRoot,
} from '../../services/kernel-sandbox/test/test-helpers.ts';
import { RuncBundle } from './runc-bundle.ts';

const BUILD_DIR = dirname(probePath());
const NODE_PREFIX = resolve(dirname(process.execPath), '..');
const APP_ROOT = resolve(PACKAGE_DIR, '..', '..');
function parseProbe(out: { status: number | null; stdout: string; stderr: string }): Record<string, string> {
  if (out.status !== 0) throw new Error(`container failed (${out.status}): ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').pop()!);
}

const workspaces: string[] = [];
function bundleFor(mode: SandboxMode, profile = profilePath(mode)) {
  const ws = mkdtempSync(join(tmpdir(), 'islet-runc-ws-'));
  workspaces.push(ws);
  const binds = [BUILD_DIR];
  if (!NODE_PREFIX.startsWith('/usr/')) binds.push(NODE_PREFIX);
  return new RuncBundle({ seccompProfile: profile, readOnlyBinds: binds, workspace: ws });
}

beforeAll(() => {
  requireRoot('the runc test (runc needs root on this machine)');
  if (!existsSync(jailPath()))
    throw new Error('islet-jail is not built: run services/kernel-sandbox/scripts/build.sh');
});
afterAll(() => {
  for (const ws of workspaces) rmSync(ws, { recursive: true, force: true });
});

describe.each(SANDBOX_MODES)('under runc with the chart profile %s.json and a read-only root', (mode) => {
  let bundle: RuncBundle;
  beforeAll(() => {
    bundle = bundleFor(mode);
  });
  afterAll(() => bundle?.cleanup());

  it('denies the dangerous syscalls and writes outside /workspace and /tmp; allows the rest', () => {
    const results = parseProbe(
      bundle.run([
        probePath(),
        'uid',
        ...DENIED_PROBE_OPS,
        'socketpair-stream',
        'read:/usr/bin/python3',
        'exec:/usr/bin/true',
        'write:/etc/islet.txt',
        'write:/islet.txt',
        'write:/usr/islet.txt',
        'write:/workspace/out.txt',
        'write:/tmp/scratch.txt',
        'write:/dev/null',
      ]),
    );
    expect(results.uid).toBe('65534');
    for (const op of DENIED_PROBE_OPS) expect({ op, result: results[op] }).toEqual({ op, result: 'EPERM' });
    expect(results['socketpair-stream']).toBe('ok');
    expect(results['read:/usr/bin/python3']).toBe('ok');
    expect(results['exec:/usr/bin/true']).toBe('ok');
    expect(results['write:/etc/islet.txt']).toBe('EROFS');
    expect(results['write:/islet.txt']).toBe('EROFS');
    expect(results['write:/usr/islet.txt']).toBe('EROFS');
    expect(results['write:/workspace/out.txt']).toBe('ok');
    expect(results['write:/tmp/scratch.txt']).toBe('ok');
    expect(results['write:/dev/null']).toBe('ok');
  });

  it('a Python program inside gets clear errors for a socket and a write to the root', () => {
    const out = bundle.run([
      '/usr/bin/python3',
      '-c',
      [
        'import socket, os',
        'try:\n  socket.socket(socket.AF_INET, socket.SOCK_STREAM)\nexcept OSError as e: print("socket", e.errno, e.strerror)',
        'try:\n  open("/usr/lib/islet.txt", "w")\nexcept OSError as e: print("write", e.errno, e.strerror)',
        'import ctypes; libc = ctypes.CDLL(None, use_errno=True)',
        'print("unshare", libc.unshare(0x10000000), ctypes.get_errno())',
        'a, b = socket.socketpair(); a.send(b"ok"); print("unix", b.recv(2).decode())',
      ].join('\n'),
    ]);
    expect(out.stderr).toBe('');
    expect(out.stdout).toContain('socket 1 Operation not permitted');
    expect(out.stdout).toContain('write 30 Read-only file system');
    expect(out.stdout).toContain('unshare -1 1');
    expect(out.stdout).toContain('unix ok');
  });

  it('a Node process (the sandbox host runtime) inside starts, has no network and no writable root', () => {
    const out = bundle.run([
      process.execPath,
      '--no-node-snapshot',
      '-e',
      `const fs = require('node:fs');
       try { fs.writeFileSync('/etc/islet.txt', 'x') } catch (e) { console.log('write', e.code) }
       fs.writeFileSync('/workspace/node.txt', 'ok'); console.log('workspace', fs.readFileSync('/workspace/node.txt', 'utf8'));
       require('node:net').connect(80, '10.0.0.1').on('error', (e) => console.log('net', e.code));`,
    ]);
    expect(out.stdout).toContain('write EROFS');
    expect(out.stdout).toContain('workspace ok');
    expect(out.stdout).toContain('net EPERM');
  });

  it('islet-jail inside the container still gets full enforcement and narrows the workspace by mode', () => {
    const args = jailArgs(mode, {
      workspaceDir: '/workspace',
      scratchDir: '/tmp',
      readPaths: [BUILD_DIR],
      require: 'full',
      reportFd: 1,
    });
    const out = bundle.run([
      jailPath(),
      ...args,
      probePath(),
      'write:/workspace/jailed.txt',
      'socket-inet',
      'write:/tmp/s.txt',
    ]);
    expect(out.status).toBe(0);
    const [reportLine, probeLine] = out.stdout.trim().split('\n');
    expect(JSON.parse(reportLine!)).toMatchObject({ enforcement: 'full', mode, missing: [] });
    const results = JSON.parse(probeLine!);
    expect(results['write:/workspace/jailed.txt']).toBe(mode === 'read-only' ? 'EACCES' : 'ok');
    expect(results['socket-inet']).toBe('EPERM');
    expect(results['write:/tmp/s.txt']).toBe('ok');
  });
});

describe('under runc with runner.json (the runner container: broker + sandbox processes)', () => {
  let bundle: RuncBundle;
  beforeAll(() => {
    bundle = bundleFor('read-only', join(PACKAGE_DIR, 'profiles', 'runner.json'));
  });
  afterAll(() => bundle?.cleanup());

  it('lets the broker open inet sockets but still denies the rest', () => {
    const results = parseProbe(
      bundle.run([
        probePath(),
        'socket-inet',
        'socket-inet6',
        'socket-unix',
        'socket-netlink',
        'socket-netlink-audit',
        'socket-packet',
        'socket-vsock',
        'unshare-user',
        'ptrace-traceme',
        'io-uring-setup',
        'mount',
        'bpf',
        'shmget',
        'msgget',
        'semget',
        'mq-open',
        'write:/etc/islet.txt',
      ]),
    );
    expect(results).toEqual({
      'socket-inet': 'ok',
      'socket-inet6': 'ok',
      'socket-unix': 'ok',
      'socket-netlink': 'ok',
      'socket-netlink-audit': 'EPERM',
      'socket-packet': 'EPERM',
      'socket-vsock': 'EPERM',
      'unshare-user': 'EPERM',
      'ptrace-traceme': 'EPERM',
      'io-uring-setup': 'EPERM',
      mount: 'EPERM',
      bpf: 'EPERM',
      shmget: 'EPERM',
      msgget: 'EPERM',
      semget: 'EPERM',
      'mq-open': 'EPERM',
      'write:/etc/islet.txt': 'EROFS',
    });
  });

  it.each(SANDBOX_MODES)(
    'a sandbox process started by islet-jail --mode %s there has no network and no sockets again',
    (mode) => {
      const args = jailArgs(mode, {
        readPaths: [BUILD_DIR],
        require: 'full',
        reportFd: 1,
        scratchDir: '/tmp',
      });
      const out = bundle.run([
        jailPath(),
        ...args,
        probePath(),
        'socket-inet',
        'socket-inet6',
        'socket-unix',
        'memfd-create',
      ]);
      const [reportLine, probeLine] = out.stdout.trim().split('\n');
      expect(JSON.parse(reportLine!)).toMatchObject({ enforcement: 'full', mode });
      expect(JSON.parse(probeLine!)).toEqual({
        'socket-inet': 'EPERM',
        'socket-inet6': 'EPERM',
        'socket-unix': 'EPERM',
        'memfd-create': 'EPERM',
      });
    },
  );
});

describe('the engine sandbox host inside runc, under islet-jail, as in a runner pod', () => {
  it.each(SANDBOX_MODES)('mode %s: a program runs to completion', async (mode) => {
    const workspace = mkdtempSync(join(tmpdir(), 'islet-runc-ws-'));
    workspaces.push(workspace);
    const bundle = new RuncBundle({
      seccompProfile: profilePath(mode),
      readOnlyBinds: [
        APP_ROOT,
        ...(NODE_PREFIX.startsWith(APP_ROOT) || NODE_PREFIX.startsWith('/usr/') ? [] : [NODE_PREFIX]),
        // From a clone the sandbox uid cannot traverse, the host runs from the installed runtime.
        ...(sandboxRuntime().installed ? [sandboxRuntime().dir] : []),
      ],
      workspace,
    });
    const jail = wrapCommandForMode(mode, { require: 'full' });
    const engine = createEngine({
      wrapCommand: (command, args) => bundle.commandFor([...Object.values(jail(command, args)).flat()]),
    });
    try {
      const out = await engine.execute('console.log("inside"); return [1, 2, 3].reduce((a, b) => a + b, 0);');
      expect(out.failure).toBeUndefined();
      expect(out.status).toBe('completed');
      expect(out.valueJson).toBe('6');
      expect(out.logs).toEqual([{ level: 'log', text: 'inside' }]);
    } finally {
      await engine.close();
      bundle.cleanup();
    }
  });
});

describe('control: the same bundle without the profile', () => {
  it('lets the probe create inet sockets, unshare and io_uring, so the denials above are the profile', () => {
    const permissive = join(mkdtempSync(join(tmpdir(), 'islet-runc-allow-')), 'allow.json');
    const profile = JSON.parse(readFileSync(profilePath('read-only'), 'utf8'));
    profile.syscalls = [];
    writeFileSync(permissive, JSON.stringify(profile));
    const bundle = bundleFor('read-only', permissive);
    try {
      const results = parseProbe(
        bundle.run([
          probePath(),
          'socket-inet',
          'unshare-user',
          'io-uring-setup',
          'shmget',
          'mq-open',
          'memfd-create',
          'socket-unix',
          'write:/etc/x',
        ]),
      );
      expect(results['socket-inet']).toBe('ok');
      for (const op of ['shmget', 'mq-open', 'memfd-create', 'socket-unix']) expect(results[op]).toBe('ok');
      expect(results['unshare-user']).toBe('ok');
      expect(results['io-uring-setup']).toBe('ok');
      expect(results['write:/etc/x']).toBe('EROFS'); // the read-only root holds either way
    } finally {
      bundle.cleanup();
      rmSync(dirname(permissive), { recursive: true, force: true });
    }
  });
});
