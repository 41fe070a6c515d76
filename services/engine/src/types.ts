/**
 * The engine's public contract. Every other service codes against these types; the
 * engine's implementation may change behind them. Values cross every boundary as JSON text.
 */
import type {
  AppErrorName,
  BindingCall,
  BindingContext,
  BindingHandler,
  BindingOutcome,
  FailureKind,
  LogLevel,
  StopCode,
  TimeBudget,
} from '@islet/protocol';
import type { RunCancel } from './run-cancel.ts';

export type {
  AppErrorName,
  BindingCall,
  BindingContext,
  BindingHandler,
  BindingOutcome,
  FailureKind,
  LogLevel,
  StopCode,
  TimeBudget,
};

export interface LogLine {
  level: LogLevel;
  text: string;
}

interface RunLimits {
  /** Time budget in ms. Default and ceiling: protocol's RUN_CODE_LIMITS. `null` = no deadline (workflows only). */
  timeoutMs?: number | null;
  /** Whether time spent waiting for binding calls counts. Default `elapsed` (run_code). */
  timeBudget?: TimeBudget;
  /**
   * Of `timeoutMs`, what earlier executions of the same run already spent (a run released while it
   * waited and replayed from its journal keeps its deadline): this execution gets the rest, and a
   * timeout still names the whole budget. Default 0.
   */
  spentMs?: number;
  /** Isolate heap ceiling in MiB. Default RUN_CODE_LIMITS.memoryMb. */
  memoryMb?: number;
  /**
   * Output cap in bytes (UTF-8 of the log lines' text, JSON text of the value). Default and most
   * 67108864 (64 MiB); a larger value is capped.
   */
  outputBytes?: number;
  /**
   * How the cap applies. `shared` (run_code, default): log lines and the returned value share it, and
   * passing it fails the run with `output-limit`, keeping the fitting part. `separate` (Code Mode
   * `outputBytes`: "the largest return value, and the most log text that it keeps"): the log keeps
   * the fitting part and the program goes on (`outputTruncated: true`); only a returned value over
   * the cap fails the run with `output-limit`.
   */
  outputCap?: 'shared' | 'separate';
  /**
   * Most binding calls in progress (handed to `onCall`, not settled) at once; further calls wait in a
   * queue, in order. Queued calls are dropped, never started, when the program ends. Default 128: a
   * `Promise.all` over a page of 100 items goes out in one wave (at 64 the last 36 waited for the
   * first answers, and three requests to the gateway went instead of one).
   */
  maxConcurrentCalls?: number;
}

export interface ExecuteOptions {
  /**
   * Binding names the program may call: `connection.capability` become `apps.connection.capability`
   * (and `apps.call("connection.capability", args)`); a name with no dot is a flat global.
   * Names are validated before the run starts (see `validateBindingNames`).
   */
  bindings?: readonly string[];
  /** Receives every binding call. Never called for a binding the program was not given. */
  onCall?: BindingHandler;
  limits?: RunLimits;
  /** Fixed `Date.now()` for the whole run (ms since epoch). Default: the wall clock at start, fixed. */
  clockMs?: number;
  /** Seed for `Math.random()`. Same seed, same sequence. Default: random. */
  randomSeed?: string;
  /** Aborting ends the run with kind `abort`; output printed so far is kept. */
  signal?: AbortSignal;
  /**
   * The same as `signal` (either ends the run), for a caller that owns its cancel: aborting it
   * costs the run no EventTarget listener (run-cancel.ts). One run at a time may be given a handle.
   */
  cancel?: RunCancel;
  /**
   * Receives log lines as the program prints them (what the outcome keeps, already cut to the
   * output cap), in batches as they arrive from the sandbox host. Must not throw; it is not awaited.
   */
  onLog?: (lines: LogLine[]) => void;
  /**
   * Sandbox host processes are never shared between partitions (tenants). Default `default`.
   */
  partition?: string;
  /**
   * The file-sandbox facts the run executes under (the runner knows them). They are carried to the
   * outcome and the result text. With `requireFullEnforcement`, a run on a host where enforcement is
   * only partial does not start and fails with `sandbox-unavailable`.
   */
  sandbox?: SandboxFacts & { requireFullEnforcement?: boolean };
}

export interface CallLogEntry {
  index: number;
  binding: string;
  argsJson: string;
  /** Absent while a call never settled (dropped or the run ended first). */
  outcome?: BindingOutcome;
  /** True for a call the program made that was never started (never reached `onCall`). */
  dropped?: boolean;
  startedAtMs: number;
  settledAtMs?: number;
}

export interface RunFailure {
  kind: FailureKind;
  message: string;
  /** A finer cause where the kind alone is too coarse, e.g. `memory` for an out-of-memory worker-exit. */
  cause?: 'memory';
  /**
   * Where a value failed the lossless-JSON check and how to send it instead, e.g.
   * `result.when is a Date: return date.toISOString()` (never part of `message`).
   */
  detail?: string;
  /** Line and column in the program (1-based) where an uncaught error was thrown. */
  line?: number;
  column?: number;
  /** The error's stack, trimmed to the program's own frames (`at f (program:3:9)`). */
  stack?: string;
}

/** The file-sandbox facts a run ran under (set by the runner, which applies the kernel sandbox). */
export interface SandboxFacts {
  mode: string;
  enforcement: 'full' | 'partial';
  /** The sandbox denied an operation during the run. */
  denied?: boolean;
}

export interface RunOutcome {
  status: 'completed' | 'failed' | 'stopped';
  /** The returned value as JSON text; absent when the program returned nothing (undefined). */
  valueJson?: string;
  failure?: RunFailure;
  stop?: { code: StopCode; message: string; atCall: number };
  /** Log lines in the order printed, already cut to the output cap. */
  logs: LogLine[];
  /** True when output past the cap was dropped. */
  outputTruncated: boolean;
  calls: CallLogEntry[];
  /** Wall-clock duration of the run, ms. */
  durationMs: number;
  /** The file-sandbox facts of the run, copied from `ExecuteOptions.sandbox`. */
  sandbox?: SandboxFacts;
  /** Pid of the sandbox host process that ran the program (diagnostics; absent when none started). */
  hostPid?: number;
  /** Of `durationMs`, the time spent waiting for a sandbox host process (diagnostics, the bench's stage breakdown). */
  hostWaitMs?: number;
  /**
   * CPU time the run's isolate used from the run's start, ms (isolated-vm's count for the
   * isolate; preparing it while the host idled is not counted). Absent when the host died before
   * it reported the run done.
   */
  cpuMs?: number;
  /** Time counted against the budget, `spentMs` included (with `excluding-binding-waits`, less than elapsed). */
  budgetSpentMs?: number;
}

export interface Engine {
  /** Runs one program in a fresh isolate. Never throws: every failure is in the outcome. */
  execute(code: string, options?: ExecuteOptions): Promise<RunOutcome>;
  /** Ends every sandbox host process. */
  close(): Promise<void>;
  /** Sandbox host processes now (for metrics). Optional so test doubles need not implement it. */
  stats?(): EngineStats;
}

interface EngineStats {
  /** Sandbox host processes alive (busy, idle or prewarmed). */
  processes: number;
  /** Of those, running a program now. */
  busy: number;
}

/**
 * Lifecycle of sandbox host processes, for metrics: `started` (ready for runs), `start-failed` (a
 * start that never became ready, whether a run or a spare asked for it), `exited` (gone, for
 * any reason), `retired` (the engine replaced it: `crashed` when it died under a run (worker-exit),
 * `killed` after a run that left it unusable (the watchdog ended a runaway program, an abort or a
 * stop ended one inside its first turn, it passed its resident bound), `max-runs`
 * after `maxRunsPerProcess` runs). A process retired for being one idle host too many is
 * only `exited`.
 */
export type ProcessEvent =
  | { type: 'started' | 'exited'; partition: string; pid: number | undefined }
  /** A host that never became ready (its spawn, jail or start-up failed): no process to count. */
  | { type: 'start-failed'; partition: string; pid: undefined; message: string }
  | {
      type: 'retired';
      partition: string;
      pid: number | undefined;
      reason: 'crashed' | 'killed' | 'max-runs' | 'max-memory';
    };

export interface EngineOptions {
  /**
   * A sandbox host process is replaced after this many runs. Default 1000: a host start costs as
   * much CPU as many runs (`npm run bench:engine`), which 100 runs per host spread over every run; memory is bounded by
   * `maxHostResidentGrowthBytes`, which retires a host first under call-heavy programs or a leak.
   */
  maxRunsPerProcess?: number;
  /**
   * A sandbox host process whose private resident memory (RssAnon + RssShmem: not the node
   * binary's code pages, file-backed and shared, which V8's optimizing compiler maps in once in a
   * host's life, ~5 MiB, and which alone replaced a host every ~20 runs of 100 calls) grew by more
   * than this since its first run is replaced, bytes (read from /proc after the first and every
   * 16th run). Default 10 MiB (5 until round 36): a host is about 55 MiB after its first run
   * here and grows 5-7 MiB privately over its 1000 runs of trivial programs (flat after run ~530),
   * ~9.5 MiB with 10 calls a run (allocator fragmentation, V8 optimizing the host's own code; its
   * own young generation is capped, see `HOST_SEMI_SPACE_MB`): at 5 MiB every such host was
   * replaced halfway for no memory saved, each start ~85 ms of CPU beside the runs; at 10 MiB it
   * serves to its run bound (retired at ~62-63 MiB VmRSS trivial, ~70 with 10 calls a run; the
   * cluster bench's idle pooled hosts 58 MB). A host running call-heavy programs grows faster:
   * isolated-vm keeps each `applySync` timeout's record until that timeout would have fired (the
   * run's budget), ~0.2 KiB a call delivered (test/bench/README.md, round 34 `par-calls`). Growth, not a fixed size: a
   * machine whose fresh host is larger would otherwise replace every host after 16 runs. 0 turns
   * the check off.
   */
  maxHostResidentGrowthBytes?: number;
  /**
   * Reads a process's resident memory, bytes (tests): the run's guard and the growth bound both.
   * Default: VmRSS from /proc/<pid>/status for the guard, RssAnon + RssShmem for the growth bound.
   */
  residentBytesOf?: (pid: number) => number | undefined;
  /**
   * Wraps the sandbox host's command line, e.g. to start it under the kernel sandbox launcher
   * (`islet-jail --mode read-only -- node …`). Default: none.
   */
  wrapCommand?: (command: string, args: string[]) => { command: string; args: string[] };
  /** Extra slack past the time budget before the watchdog kills the host process, ms. Default 1000. */
  watchdogGraceMs?: number;
  /** How long a new sandbox host may take to start before the run fails `sandbox-unavailable`, ms. Default 15000. */
  startupTimeoutMs?: number;
  /** Idle sandbox host processes kept per partition for the next run. Default 2. */
  maxIdlePerPartition?: number;
  /**
   * Idle sandbox host processes kept across all partitions (tenants); past it the host idle the
   * longest is stopped. Bounds memory on a runner that serves many tenants (a pooled host is
   * about 80 MB RSS). Default 8.
   */
  maxIdleTotal?: number;
  /**
   * Start a replacement host in the background when one is retired (after a failure or
   * `maxRunsPerProcess` runs), so the partition's next run does not wait for a process start. Default true.
   */
  prewarm?: boolean;
  /**
   * Most sandbox hosts starting at once for runs. A run that finds no idle host waits for a start
   * slot or for a host of its partition to come free, whichever is first: a burst of concurrent
   * runs on a cold engine (16 slots) started 16 processes at once, and on a loaded 2-core machine
   * some passed their start-up timeout and their runs failed `sandbox-unavailable`. Default 4.
   * Background replacements (`prewarm`) are not counted.
   */
  maxStartingHosts?: number;
  /** Environment of the sandbox host process, beside host-process.ts' HOST_ENV (a name here wins). */
  hostEnv?: Record<string, string>;
  /** Told about every sandbox host process start, exit and replacement (metrics). Must not throw. */
  onProcessEvent?: (event: ProcessEvent) => void;
}
