/**
 * The run_code skill: one python / javascript / bash program in a fresh process under islet-jail with
 * the mode's kernel profile, an empty environment (PATH and HOME only), no network, a non-root uid where
 * possible and a per-run scratch directory under the OS temp dir that is removed afterwards.
 * Answers `{ success, output, error, exitCode, language }` exactly as the skill document says; never throws.
 */
import { spawn } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import { access, chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { constants as osConstants, tmpdir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import {
  type SandboxMode,
  SKILL_DEFAULT_TIMEOUT_MS,
  SKILL_MAX_TIMEOUT_MS,
  type SkillLanguage,
  type SkillRequest,
  type SkillResult,
} from '@islet/protocol';
import { JAIL_EXEC_FAILED_EXIT_CODE, JAIL_UNAVAILABLE_EXIT_CODE, jailArgs } from './jail.ts';
import { jailPath } from './paths.ts';
import { type SandboxRuntime, sandboxRuntime } from './runtime.ts';
import { DEFAULT_WORKSPACE_LIMITS } from './workspace-store.ts';

/** stdout (and, separately, stderr) is captured up to this many bytes. */
export const SKILL_OUTPUT_CAP_BYTES = 1024 * 1024;
/** The programs' PATH: system directories only. */
const SKILL_PATH = '/usr/local/bin:/usr/bin:/bin';
/** Exit code reported when the program was killed at its timeout (as GNU timeout does). */
export const SKILL_TIMEOUT_EXIT_CODE = 124;

interface Interpreter {
  bin: string;
  args: (file: string) => string[];
  file: string;
  install: string;
}

const INTERPRETERS: Record<SkillLanguage, Interpreter> = {
  python: {
    bin: 'python3',
    args: (f) => ['-I', '-B', f],
    file: 'main.py',
    install: 'python3 is not installed; install it with: apt-get install python3',
  },
  javascript: {
    bin: process.execPath,
    args: (f) => ['--max-old-space-size=512', f],
    file: 'main.js',
    install: 'node is not installed; install Node.js 24 (scripts/toolchain.sh fetches it)',
  },
  bash: {
    bin: 'bash',
    args: (f) => ['--noprofile', '--norc', f],
    file: 'main.sh',
    install: 'bash is not installed; install it with: apt-get install bash',
  },
};

export interface RunSkillOptions extends SkillRequest {
  mode: SandboxMode;
  /** The session workspace; the program's working directory (scratch when absent). */
  workspaceDir?: string;
  /** Root of every tenant's workspaces, kept out of reach in danger-full-access. */
  workspaceRoot?: string;
  /** Refuse to run (exit 78, `sandbox-unavailable`) unless every kernel layer applies. Default false. */
  requireFull?: boolean;
  /** Where per-run scratch directories go. Default the OS temp dir. */
  tmpDir?: string;
  /**
   * uid/gid to run as when the runner is root. Default: a fresh uid per run from
   * SKILL_RUN_UID_BASE.. (so RLIMIT_NPROC counts this run only, and every process it leaves behind,
   * even one that escaped the process group with setsid, is killed by uid afterwards).
   */
  uid?: number;
  gid?: number;
  rlimitAsBytes?: number;
  rlimitNproc?: number;
  rlimitFsizeBytes?: number;
  rlimitNofile?: number;
  /**
   * The workspace's byte and file limits, held while the program runs (islet-jail stops the whole
   * tree once the workspace passes them). Default: the workspace store's defaults, whenever
   * `workspaceDir` is given.
   */
  workspaceMaxBytes?: number;
  workspaceMaxFiles?: number;
  /** Where javascript's Node comes from (reachable by the per-run uid). Default `sandboxRuntime()`. */
  runtime?: SandboxRuntime;
  /** Test hook: interpreter binary per language (a name looked up on SKILL_PATH, or absolute). */
  interpreters?: Partial<Record<SkillLanguage, string>>;
  /** Test hook: pretend a kernel layer is missing. */
  testSkipLayer?: 'seccomp' | 'landlock';
}

/** First uid of the per-run range used when the runner is root (no passwd entries needed). */
export const SKILL_RUN_UID_BASE = 200_000;
const SKILL_RUN_UID_COUNT = 60_000;

function allocateRunUid(): number {
  return SKILL_RUN_UID_BASE + Math.floor(Math.random() * SKILL_RUN_UID_COUNT);
}

/** Kills every live process whose real uid is `uid` (a per-run uid nothing else uses). */
async function sweepUid(uid: number): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const pids: number[] = [];
    for (const name of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(name)) continue;
      const status = await readFile(`/proc/${name}/status`, 'utf8').catch(() => '');
      const m = /^Uid:\s+(\d+)/m.exec(status);
      if (m && Number(m[1]) === uid && !/^State:\s+Z/m.test(status)) pids.push(Number(name));
    }
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

const SKILL_DEFAULT_RLIMITS = {
  rlimitAsBytes: 4 * 1024 * 1024 * 1024,
  rlimitNproc: 256,
  rlimitFsizeBytes: 64 * 1024 * 1024,
  rlimitNofile: 256,
} as const;

async function findOnPath(bin: string): Promise<string | undefined> {
  const candidates = isAbsolute(bin) ? [bin] : SKILL_PATH.split(delimiter).map((d) => join(d, bin));
  for (const c of candidates) {
    try {
      await access(c, constants.X_OK);
      return c;
    } catch {}
  }
  return undefined;
}

/** Collects a stream up to `cap` bytes; calls `onOverflow` once when more arrives. */
function capture(stream: NodeJS.ReadableStream | null, cap: number, onOverflow: () => void) {
  const chunks: Buffer[] = [];
  let size = 0;
  let overflowed = false;
  stream?.on('data', (d: Buffer) => {
    if (size + d.length <= cap) {
      chunks.push(d);
      size += d.length;
      return;
    }
    if (size < cap) chunks.push(d.subarray(0, cap - size));
    size = cap;
    if (!overflowed) {
      overflowed = true;
      onOverflow();
    }
  });
  return { text: () => Buffer.concat(chunks).toString('utf8'), overflowed: () => overflowed };
}

export async function runSkill(opts: RunSkillOptions): Promise<SkillResult> {
  try {
    return await runSkillUnchecked(opts);
  } catch (err) {
    // Host-side trouble (temp dir not writable, …) is an answer too, never a throw.
    return {
      success: false,
      output: '',
      error: `the program could not be started: ${(err as Error).message}`,
      exitCode: JAIL_EXEC_FAILED_EXIT_CODE,
      language: opts.language,
    };
  }
}

async function runSkillUnchecked(opts: RunSkillOptions): Promise<SkillResult> {
  const { language } = opts;
  const interp = INTERPRETERS[language];
  const fail = (error: string, exitCode: number): SkillResult => ({
    success: false,
    output: '',
    error,
    exitCode,
    language,
  });
  const timeoutMs = opts.timeout ?? SKILL_DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0 && timeoutMs <= SKILL_MAX_TIMEOUT_MS)) {
    return fail(
      `invalid timeout: expected a positive number of milliseconds up to ${SKILL_MAX_TIMEOUT_MS}`,
      2,
    );
  }
  // javascript runs the sandbox runtime's Node: the toolchain's may sit where the run's uid cannot go.
  const runtimeNode =
    language === 'javascript' && !opts.interpreters?.javascript
      ? (opts.runtime ?? sandboxRuntime()).node
      : undefined;
  const bin = await findOnPath(opts.interpreters?.[language] ?? runtimeNode ?? interp.bin);
  if (!bin) return fail(interp.install, JAIL_EXEC_FAILED_EXIT_CODE);
  const jail = jailPath();
  if (!existsSync(jail)) {
    return fail(
      `code run failed (sandbox-unavailable): ${jail} is not built (run scripts/build.sh)`,
      JAIL_UNAVAILABLE_EXIT_CODE,
    );
  }

  const scratch = await mkdtemp(join(opts.tmpDir ?? tmpdir(), 'islet-skill-'));
  const runUid = opts.uid === undefined && process.getuid?.() === 0 ? allocateRunUid() : undefined;
  try {
    const source = join(scratch, interp.file);
    await writeFile(source, opts.code, { mode: 0o644 });
    await chmod(scratch, 0o755);
    const limits = { ...SKILL_DEFAULT_RLIMITS, ...definedOnly(opts) };
    const args = [
      ...jailArgs(opts.mode, {
        workspaceDir: opts.workspaceDir,
        workspaceRoot: opts.workspaceRoot,
        scratchDir: scratch,
        // Node lives outside the system paths when it comes from .toolchain; python3 and bash do not.
        readPaths: language === 'javascript' ? [resolve(dirname(bin), '..')] : [],
        chdir: opts.workspaceDir ?? scratch,
        require: opts.requireFull ? 'full' : 'none',
        closeFds: true,
        supervise: true,
        timeoutMs: timeoutMs + SUPERVISOR_MARGIN_MS,
        uid: opts.uid ?? runUid,
        gid: opts.gid ?? runUid,
        ...(opts.workspaceDir
          ? {
              workspaceMaxBytes: opts.workspaceMaxBytes ?? DEFAULT_WORKSPACE_LIMITS.maxWorkspaceBytes,
              workspaceMaxFiles: opts.workspaceMaxFiles ?? DEFAULT_WORKSPACE_LIMITS.maxFiles,
            }
          : {}),
        testSkipLayer: opts.testSkipLayer,
        ...limits,
      }),
      bin,
      ...interp.args(source),
    ];
    return await execute(jail, args, { scratch, timeoutMs, language });
  } finally {
    if (runUid !== undefined) await sweepUid(runUid);
    await rm(scratch, { recursive: true, force: true }).catch(() => {});
  }
}

function definedOnly(o: RunSkillOptions): Partial<typeof SKILL_DEFAULT_RLIMITS> {
  const out: Record<string, number> = {};
  for (const k of ['rlimitAsBytes', 'rlimitNproc', 'rlimitFsizeBytes', 'rlimitNofile'] as const) {
    if (typeof o[k] === 'number') out[k] = o[k];
  }
  return out;
}

/** The launcher's own deadline follows the runner's by this much: it ends the tree even if the runner is gone. */
const SUPERVISOR_MARGIN_MS = 1000;
/** After the launcher exits, output already in the pipes is read for at most this long. */
const DRAIN_MS = 100;
/** If the launcher has not exited this long after the deadline, the answer is given without it. */
const ANSWER_GRACE_MS = 2000;

/**
 * Runs the launcher (`--supervise`: it is the subreaper of the program's whole tree). At the
 * deadline or on too much output it is sent SIGTERM and kills every process the program started,
 * setsid'd and double-forked ones included, before it exits. The answer never waits on the pipes:
 * a grandchild that holds stdout cannot delay it past the launcher's exit plus DRAIN_MS, and the
 * answer comes at the deadline + ANSWER_GRACE_MS at the latest whatever happens.
 */
function execute(
  jail: string,
  args: string[],
  ctx: { scratch: string; timeoutMs: number; language: SkillLanguage },
): Promise<SkillResult> {
  return new Promise((done) => {
    const started = performance.now();
    const child = spawn(jail, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: SKILL_PATH, HOME: ctx.scratch },
      detached: true, // its own process group: a second net for anything the launcher could not end
    });
    let ending: 'timeout' | undefined;
    const timers: NodeJS.Timeout[] = [];
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {}
    };
    const stopTree = () => {
      try {
        child.kill('SIGTERM'); // the launcher kills the whole tree, then exits
      } catch {}
    };
    // "Output is captured up to 1 MB": the first 1 MB is kept and the rest read and dropped; the
    // program goes on (only the timeout ends it).
    const out = capture(child.stdout, SKILL_OUTPUT_CAP_BYTES, () => {});
    const err = capture(child.stderr, SKILL_OUTPUT_CAP_BYTES, () => {});
    timers.push(
      setTimeout(() => {
        ending ??= 'timeout';
        stopTree();
        timers.push(setTimeout(() => finish(null, 'SIGKILL'), ANSWER_GRACE_MS));
      }, ctx.timeoutMs),
    );
    let finished = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (finished) return;
      finished = true;
      for (const t of timers) clearTimeout(t);
      killGroup();
      child.stdout?.destroy();
      child.stderr?.destroy();
      // The launcher's own deadline (the runner's timer was late): a timeout too.
      if (!ending && code === SKILL_TIMEOUT_EXIT_CODE && performance.now() - started >= ctx.timeoutMs)
        ending = 'timeout';
      done(result(code, signal));
    };
    const result = (code: number | null, signal: NodeJS.Signals | null): SkillResult => {
      let error = err.text();
      let exitCode = code ?? 128 + (signal ? signalNumber(signal) : 9);
      const note = (line: string) => {
        error = error && !error.endsWith('\n') ? `${error}\n${line}` : `${error}${line}`;
      };
      if (ending === 'timeout') {
        exitCode = SKILL_TIMEOUT_EXIT_CODE;
        note(`timed out after ${ctx.timeoutMs} ms; the program was killed`);
      } else if (code === JAIL_UNAVAILABLE_EXIT_CODE && /sandbox-unavailable/.test(error)) {
        error = `code run failed (sandbox-unavailable): ${error.replace(/^islet-jail: sandbox-unavailable: /m, '').trim()}`;
      } else if (signal) {
        note(`the program was killed by ${signal}`);
      }
      if (out.overflowed()) note(`stdout was truncated: captured the first ${SKILL_OUTPUT_CAP_BYTES} bytes`);
      if (err.overflowed()) note('stderr was truncated at 1 MB');
      return {
        success: exitCode === 0 && !ending,
        output: out.text(),
        error,
        exitCode,
        language: ctx.language,
      };
    };
    child.on('error', (e) => {
      if (finished) return;
      finished = true;
      for (const t of timers) clearTimeout(t);
      done({
        success: false,
        output: '',
        error: e.message,
        exitCode: JAIL_EXEC_FAILED_EXIT_CODE,
        language: ctx.language,
      });
    });
    child.on('exit', (code, signal) => {
      timers.push(setTimeout(() => finish(code, signal), DRAIN_MS));
    });
    child.on('close', (code, signal) => finish(code, signal));
  });
}

function signalNumber(signal: NodeJS.Signals): number {
  return osConstants.signals[signal] ?? 9;
}
