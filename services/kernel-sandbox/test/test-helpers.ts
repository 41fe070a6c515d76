/** Shared by this package's tests and test/kernel: run the probe (or any command) under islet-jail. */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { SandboxMode } from '@islet/protocol';
import { type EnforcementReport, type JailOptions, jailArgs } from '../src/jail.ts';
import { jailPath, PACKAGE_DIR } from '../src/paths.ts';
import { sandboxRuntime } from '../src/runtime.ts';

/** The test probe that tries denied and allowed operations from inside a sandbox. */
export function probePath(): string {
  return resolve(PACKAGE_DIR, 'build', 'islet-probe');
}

/** The mode's seccomp profile (OCI / Kubernetes Localhost JSON). The chart copies exactly these files. */
export function profilePath(mode: SandboxMode): string {
  return resolve(PACKAGE_DIR, 'profiles', `${mode}.json`);
}

/** The machine-readable file-system rules for every mode. */
export function fsRulesPath(): string {
  return resolve(PACKAGE_DIR, 'profiles', 'fs-rules.json');
}

/** islet-probe ops every mode's seccomp profile must answer with EPERM (under islet-jail and under runc). */
export const DENIED_PROBE_OPS = [
  'socket-inet',
  'socket-inet6',
  'socket-netlink',
  'socket-packet',
  'socket-vsock',
  'unshare-user',
  'unshare-net',
  'unshare-mount',
  'clone-newnet',
  'ptrace-traceme',
  'io-uring-setup',
  'mount',
  'bpf',
  'keyctl',
  'userfaultfd',
  'perf-event-open',
  'process-vm-readv',
  'open-by-handle',
  // Kernel objects shared by the IPC namespace and outliving the process (SysV, POSIX mqueue).
  'shmget',
  'msgget',
  'semget',
  'mq-open',
  // An anonymous file executable through /proc/self/fd; per-user inotify instances.
  'memfd-create',
  'inotify-init',
  // No sockets at all: a pathname unix socket of the host is outside Landlock's file rules.
  'socket-unix',
  'socketpair-dgram',
];

export interface JailedResult {
  status: number | null;
  stdout: string;
  stderr: string;
  report?: EnforcementReport;
}

/**
 * Runs `command` under islet-jail with the report on fd 3. Node is taken from the sandbox runtime
 * (runtime.ts), so the tests also pass from a clone the jailed uid cannot traverse.
 */
export function runJailed(
  mode: SandboxMode,
  opts: JailOptions,
  command: string[],
  env = { PATH: '/usr/bin:/bin' },
) {
  const runtime = sandboxRuntime();
  const mapped = command.map((c) => runtime.map(c));
  const moved = mapped.some((c, i) => c !== command[i]);
  const readPaths = moved ? [...(opts.readPaths ?? []), ...runtime.readPaths] : opts.readPaths;
  const args = [...jailArgs(mode, { ...opts, readPaths, reportFd: 3 }), ...mapped];
  const res = spawnSync(jailPath(), args, {
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    env,
    encoding: 'utf8',
    timeout: 30_000,
  });
  const reportLine = String(res.output[3] ?? '').trim();
  const result: JailedResult = { status: res.status, stdout: res.stdout, stderr: res.stderr };
  if (reportLine) result.report = JSON.parse(reportLine) as EnforcementReport;
  return result;
}

let probeCopy: string | undefined;
/** islet-probe where any uid can execute it (the build dir may sit in a 0700 clone). */
export function reachableProbePath(): string {
  if (process.getuid?.() !== 0) return probePath();
  if (!probeCopy) {
    const dir = mkdtempSync(join(tmpdir(), 'islet-probe-'));
    chmodSync(dir, 0o755);
    probeCopy = join(dir, 'islet-probe');
    copyFileSync(probePath(), probeCopy);
    chmodSync(probeCopy, 0o755);
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return probeCopy;
}

/** Runs islet-probe with the given ops under the mode and parses its JSON answer. */
export function probeUnder(mode: SandboxMode, opts: JailOptions, ops: string[]) {
  const probe = reachableProbePath();
  const readPaths = [...(opts.readPaths ?? []), dirname(probe)];
  const res = runJailed(mode, { ...opts, readPaths }, [probe, ...ops]);
  if (res.status !== 0) throw new Error(`probe failed (${res.status}): ${res.stderr}`);
  return { results: JSON.parse(res.stdout) as Record<string, string>, report: res.report };
}

/** A temp layout: a workspace root with two tenants, a scratch dir and a directory outside both. */
export function makeLayout(prefix = 'islet-kt-') {
  const base = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(base, 0o755); // mkdtemp makes it 0700; the jailed uid must be able to traverse it
  const root = join(base, 'workspaces');
  const ws = join(root, 'tenant-a', 'session-1');
  const other = join(root, 'tenant-b', 'session-9');
  const scratch = join(base, 'scratch');
  const outside = join(base, 'outside');
  for (const d of [ws, other, scratch, outside]) mkdirSync(d, { recursive: true, mode: 0o755 });
  chmodSync(outside, 0o1777); // like /tmp: DAC lets anyone write, so only the sandbox can say no
  writeFileSync(join(other, 'secret.txt'), 'tenant-b secret\n', { mode: 0o644 });
  writeFileSync(join(ws, 'mine.txt'), 'tenant-a data\n', { mode: 0o644 });
  writeFileSync(join(outside, 'host.txt'), 'host file\n', { mode: 0o644 });
  return {
    base,
    root,
    ws,
    other,
    scratch,
    outside,
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
}

/** Only for tests that need the real uid semantics (fork bomb, drop to nobody). */
export function requireRoot(what: string): void {
  if (process.getuid?.() !== 0) {
    throw new Error(`${what} requires root (CI runs as root): run the suite as root`);
  }
}
