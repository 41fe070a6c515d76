/**
 * Starting processes under islet-jail: the command-line builder, the engine's `wrapCommand`
 * adapter and the enforcement probe. The launcher does the work; this module only says what to ask for.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { SandboxMode } from '@islet/protocol';
import type { Enforcement } from './facts.ts';
import { jailPath, PACKAGE_DIR } from './paths.ts';
import { type SandboxRuntime, sandboxRuntime } from './runtime.ts';

/** islet-jail's exit code when `--require full` cannot be met: the run fails with `sandbox-unavailable`. */
export const JAIL_UNAVAILABLE_EXIT_CODE = 78;
/** islet-jail's exit code when the supervisor stopped the tree because the workspace passed its limits (128 + SIGXFSZ). */
export const JAIL_WORKSPACE_FULL_EXIT_CODE = 153;
/** islet-jail's exit code when the command itself cannot be executed. */
export const JAIL_EXEC_FAILED_EXIT_CODE = 127;

type JailLayer = 'no_new_privs' | 'seccomp' | 'landlock' | 'rlimits';

/** The launcher's one-line JSON report of what it applied. */
export interface EnforcementReport {
  enforcement: Enforcement;
  mode: SandboxMode;
  layers: Record<JailLayer, boolean>;
  /** Layers that could not be applied (`launcher` when islet-jail itself is missing). */
  missing: string[];
  landlockAbi: number;
  landlockNet: boolean;
  landlockScoped: boolean;
  /** Whether the command got an IPC namespace of its own (needs root; not a layer `full` requires). */
  ipcNamespace?: boolean;
  /** The uid the command runs as. */
  uid: number;
  notes: string;
}

export interface JailOptions {
  /** The session workspace: readable in every mode, writable in workspace-write and danger-full-access. */
  workspaceDir?: string;
  /**
   * The directory holding every tenant's workspaces; danger-full-access reaches everything but this.
   * Default: `$ISLET_WORKSPACE_ROOT` when set (without either, danger-full-access is not walled off
   * from other workspaces).
   */
  workspaceRoot?: string;
  /** A per-run scratch directory, writable in every mode. */
  scratchDir?: string;
  /** Extra read+execute paths (the runtime). Default: Node's install prefix and this repository/app root. */
  readPaths?: string[];
  /**
   * Never reachable, not even in danger-full-access (`--deny`): the service's secret files. Default:
   * what `protectPaths` registered. islet-jail refuses to start anything (exit 78, whatever
   * `require` says) when one lies under a path it grants (system paths such as /etc, the runtime,
   * the workspace): the grants contradict each other, and dropping Landlock would expose everything.
   */
  denyPaths?: string[];
  /** `full`: refuse to start (exit 78) unless every layer applies. Default `none` (report `partial`). */
  require?: 'full' | 'none';
  /** Working directory for the command. */
  chdir?: string;
  rlimitAsBytes?: number;
  rlimitNproc?: number;
  rlimitFsizeBytes?: number;
  rlimitNofile?: number;
  /**
   * The writable workspace's limits, held while the command runs (with `supervise`): RLIMIT_FSIZE
   * is lowered to what the byte budget leaves plus the largest file there, and the supervisor ends
   * the tree once the workspace is over either limit (exit `JAIL_WORKSPACE_FULL_EXIT_CODE`).
   */
  workspaceMaxBytes?: number;
  workspaceMaxFiles?: number;
  /** The uid/gid to drop to when started as root. Default 65534 (nobody). */
  uid?: number;
  gid?: number;
  /** Write the JSON report on this fd (the caller must provide it in `stdio`). */
  reportFd?: number;
  /** Close every inherited fd above 2 (except none) before exec. */
  closeFds?: boolean;
  /** Tests only: pretend a layer is unavailable, to exercise `partial` and `sandbox-unavailable`. */
  testSkipLayer?: 'seccomp' | 'landlock';
  /**
   * Stay as the command's subreaper and kill its whole process tree (setsid and double forks
   * included) when it exits, on SIGTERM, or at `timeoutMs` (then exit 124). See native/supervise.h.
   */
  supervise?: boolean;
  /** The supervisor's own deadline, ms (implies `supervise`). */
  timeoutMs?: number;
}

const protectedPaths = new Set<string>();
/**
 * Registers paths no sandbox may reach (the runner calls it with the directories of its secret
 * files, e.g. a mounted Secret at /var/run/secrets/islet): every later launch gets them as `--deny`.
 * In a pod the sandbox shares the runner's uid, so file permissions alone would not keep them out.
 */
export function protectPaths(paths: string[]): void {
  for (const p of paths) protectedPaths.add(p);
}

/** Paths the runtime needs to read: Node's install prefix and the application root (sources, node_modules). */
function defaultReadPaths(): string[] {
  const paths = [resolve(dirname(process.execPath), '..'), resolve(PACKAGE_DIR, '..', '..')];
  return [...new Set(paths)].filter((p) => existsSync(p));
}

/** islet-jail's arguments up to and including `--`. */
export function jailArgs(mode: SandboxMode, opts: JailOptions = {}): string[] {
  const args = ['--mode', mode];
  const add = (flag: string, value: string | number | undefined) => {
    if (value !== undefined) args.push(flag, String(value));
  };
  add('--workspace', opts.workspaceDir);
  add('--workspace-root', opts.workspaceRoot ?? process.env.ISLET_WORKSPACE_ROOT);
  add('--scratch', opts.scratchDir);
  for (const p of opts.readPaths ?? defaultReadPaths()) add('--read', p);
  for (const p of opts.denyPaths ?? [...protectedPaths]) add('--deny', p);
  add('--chdir', opts.chdir);
  add('--rlimit-as', opts.rlimitAsBytes);
  add('--rlimit-nproc', opts.rlimitNproc);
  add('--rlimit-fsize', opts.rlimitFsizeBytes);
  add('--rlimit-nofile', opts.rlimitNofile);
  add('--workspace-max-bytes', opts.workspaceMaxBytes);
  add('--workspace-max-files', opts.workspaceMaxFiles);
  add('--uid', opts.uid);
  add('--gid', opts.gid);
  add('--report-fd', opts.reportFd);
  add('--require', opts.require);
  add('--test-skip-layer', opts.testSkipLayer);
  if (opts.closeFds) args.push('--close-fds');
  if (opts.supervise) args.push('--supervise');
  add('--timeout-ms', opts.timeoutMs === undefined ? undefined : Math.ceil(opts.timeoutMs));
  args.push('--');
  return args;
}

type WrapCommand = (command: string, args: string[]) => { command: string; args: string[] };

/**
 * An `EngineOptions.wrapCommand` that starts the sandbox host under the mode's kernel profile.
 * With `require: 'full'` the host exits 78 before it starts when a layer is missing; the engine
 * reports that as `sandbox-unavailable`. Node and the host script are taken from the sandbox
 * runtime (runtime.ts: installed where the per-run uid can execute them when the app directory is
 * not reachable); resolving it here makes a host where runs cannot start fail at start-up.
 */
export function wrapCommandForMode(
  mode: SandboxMode,
  opts: JailOptions & { runtime?: SandboxRuntime } = {},
): WrapCommand {
  const runtime = opts.runtime ?? sandboxRuntime();
  const jail = jailPath();
  return (command, args) => {
    const mappedCommand = runtime.map(command);
    const mappedArgs = args.map((a) => runtime.map(a));
    const moved = mappedCommand !== command || mappedArgs.some((a, i) => a !== args[i]);
    const readPaths = opts.readPaths
      ? [...opts.readPaths, ...(moved ? runtime.readPaths : [])]
      : runtime.readPaths;
    const prefix = jailArgs(mode, { ...opts, readPaths });
    return { command: jail, args: [...prefix, mappedCommand, ...mappedArgs] };
  };
}

const REPORT_FD = 3;

function launcherMissing(mode: SandboxMode, why: string): EnforcementReport {
  return {
    enforcement: 'none',
    mode,
    layers: { no_new_privs: false, seccomp: false, landlock: false, rlimits: false },
    missing: ['launcher'],
    landlockAbi: 0,
    landlockNet: false,
    landlockScoped: false,
    uid: process.getuid?.() ?? -1,
    notes: why,
  };
}

/**
 * Runs `true` under the mode's profile and returns the launcher's report: what this host can enforce.
 * Never throws; a missing launcher reports enforcement `none`.
 */
export async function probeEnforcement(
  mode: SandboxMode,
  opts: Omit<JailOptions, 'reportFd' | 'require'> = {},
): Promise<EnforcementReport> {
  const jail = jailPath();
  if (!existsSync(jail)) return launcherMissing(mode, `${jail} is not built (run scripts/build.sh)`);
  return new Promise((resolvePromise) => {
    const child = spawn(jail, [...jailArgs(mode, { ...opts, reportFd: REPORT_FD }), 'true'], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
    });
    let report = '';
    let stderr = '';
    child.stdio[3]?.on('data', (d: Buffer) => {
      report += d.toString('utf8');
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    child.on('error', (err) => resolvePromise(launcherMissing(mode, err.message)));
    child.on('close', () => {
      const line = report.split('\n').find((l) => l.trim().startsWith('{'));
      if (!line) return resolvePromise(launcherMissing(mode, stderr.trim() || 'no report'));
      try {
        resolvePromise(JSON.parse(line) as EnforcementReport);
      } catch {
        resolvePromise(launcherMissing(mode, `unreadable report: ${line}`));
      }
    });
  });
}
