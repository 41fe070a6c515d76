/**
 * One sandbox host child process as the engine sees it: spawn (optionally wrapped by the kernel
 * sandbox launcher), the `ready` handshake, framed messages both ways, exit and kill.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, writeSync, writevSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_FRAME_LIMITS, encodeMessage, encodeText, type FrameLimits, FrameReader } from './frame.ts';
import { HOST_ADDON_ARG, isolatedVmAddon } from './host-addon.ts';
import { builtHostScript } from './host-build.ts';
import { privateBytesOf, readStatusText, VM_RSS } from './host-status.ts';
import { readHostFrames } from './host-stdout.ts';
import { HOST_SEMI_SPACE_MB } from './limits.ts';
import { checkFromHost, type FromHost, type ToHost } from './wire.ts';

export { privateBytesOf, readResidentBytes } from './host-status.ts';

/** The host's plain-JavaScript build when current (host-build.ts: less memory per host), else its source. */
export const HOST_SCRIPT = builtHostScript() ?? fileURLToPath(new URL('./host.ts', import.meta.url));
const STDERR_KEEP_BYTES = 16 * 1024;

/** A child's pipe as `refHandles` sees it: a stream that may be absent or not ref-counted. */
type Refable = { ref?: () => void; unref?: () => void } | null | undefined;

interface HostEvents {
  onMessage(message: FromHost): void;
  /** A malformed or oversized message arrived; the host has been killed. */
  onProtocolError(reason: string): void;
  /** The process ended (after `kill` too). */
  onExit(info: { code: number | null; signal: NodeJS.Signals | null; stderr: string }): void;
}

interface SpawnOptions {
  partition: string;
  wrapCommand?: (command: string, args: string[]) => { command: string; args: string[] };
  startupTimeoutMs: number;
  frameLimits?: FrameLimits;
  /** Environment of the host, beside HOST_ENV (a name given here wins). */
  env?: Record<string, string>;
}

const MIB = 1024 * 1024;
/** The `prepare` frame (wire.ts), the same bytes every time: encoded once. */
const PREPARE_FRAME = encodeMessage({ t: 'prepare' } satisfies ToHost);
/**
 * What every host's environment holds: glibc malloc's heap top kept 1 MiB past what is in use, and
 * blocks under 4 MiB from the heap rather than each its own mmap. At glibc's defaults a host moved
 * its heap's top with `brk` 0.5–2.7 times a trivial run (grow, then trim: pages freed and faulted
 * in again, ~11 µs a page on this VM) and a run with a few large blocks mapped and unmapped each
 * (test/bench/README.md, round 31 `host-faults`). The trim threshold stays glibc's 128 KiB: a
 * larger one kept more freed memory resident and replaced hosts for resident growth twice as often.
 * Ignored where Node is not linked with glibc.
 */
export const HOST_ENV: Readonly<Record<string, string>> = {
  GLIBC_TUNABLES: [`glibc.malloc.top_pad=${MIB}`, `glibc.malloc.mmap_threshold=${4 * MIB}`].join(':'),
};

export class HostProcess {
  readonly partition: string;
  runs = 0;
  exited = false;
  private readonly child: ChildProcess;
  private readonly reader: FrameReader;
  private readonly frameLimits: FrameLimits;
  private events: HostEvents | undefined;
  private stderr = '';
  private readonly exitWaiters: (() => void)[] = [];
  /** The process exited and its output was read to the end (stdout closed). */
  private closed = false;
  private readonly closeWaiters: (() => void)[] = [];

  private constructor(child: ChildProcess, partition: string, frameLimits: FrameLimits) {
    this.child = child;
    this.partition = partition;
    this.frameLimits = frameLimits;
    this.reader = new FrameReader((event) => {
      if (event.type === 'error') return this.protocolError(event.message);
      const checked = checkFromHost(event.message);
      if (!checked.ok) return this.protocolError(checked.reason);
      this.events?.onMessage(checked.message);
    }, frameLimits);
  }

  /** Starts a host and waits for its `ready` message. Rejects with a reason when it cannot start. */
  static start(options: SpawnOptions): Promise<HostProcess> {
    let command = process.execPath;
    let args = [
      '--no-node-snapshot',
      // The host's own heap only: host.ts unsets it before any program's isolate is made.
      `--max-semi-space-size=${HOST_SEMI_SPACE_MB}`,
      '--disable-warning=ExperimentalWarning',
      HOST_SCRIPT,
    ];
    // isolated-vm's addon named to the host, which opens it itself (host-ivm.ts: a cheaper start).
    const addon = isolatedVmAddon();
    if (addon !== undefined) args.push(HOST_ADDON_ARG, addon);
    if (options.wrapCommand) ({ command, args } = options.wrapCommand(command, args));
    return new Promise((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = spawn(command, args, {
          env: { ...HOST_ENV, ...options.env },
          stdio: ['pipe', 'pipe', 'pipe'],
        });
      } catch (e) {
        reject(new Error(`cannot start the sandbox host: ${(e as Error).message}`));
        return;
      }
      const host = new HostProcess(child, options.partition, options.frameLimits ?? DEFAULT_FRAME_LIMITS);
      const timer = setTimeout(() => {
        host.kill();
        reject(new Error(`the sandbox host did not start within ${options.startupTimeoutMs}ms`));
      }, options.startupTimeoutMs);
      host.events = {
        onMessage(m) {
          clearTimeout(timer);
          host.events = undefined;
          if (m.t !== 'ready') {
            host.kill();
            reject(new Error('the sandbox host did not start: unexpected first message'));
            return;
          }
          resolve(host);
        },
        onProtocolError(reason) {
          clearTimeout(timer);
          reject(new Error(`the sandbox host did not start: ${reason}`));
        },
        onExit(info) {
          clearTimeout(timer);
          const how = info.signal ? `signal ${info.signal}` : `code ${info.code}`;
          const said = info.stderr.trim().split('\n').slice(-1)[0] ?? '';
          reject(new Error(`the sandbox host exited during start-up (${how})${said ? `: ${said}` : ''}`));
        },
      };
      child.on('error', (e) => {
        clearTimeout(timer);
        host.exited = true;
        for (const w of host.exitWaiters.splice(0)) w();
        reject(new Error(`cannot start the sandbox host: ${e.message}`));
      });
      // Through `onread`, not stdout's stream push, tick and 'data' event (host-stdout.ts).
      readHostFrames(child.stdout!, host.reader);
      child.stderr!.on('data', (chunk: Buffer) => {
        host.stderr = (host.stderr + chunk.toString('utf8')).slice(-STDERR_KEEP_BYTES);
      });
      // EPIPE when the host is gone: the exit event reports it.
      child.stdin!.on('error', () => {});
      child.on('exit', (code, signal) => {
        host.exited = true;
        host.closeStatus();
        for (const w of host.exitWaiters.splice(0)) w();
        host.events?.onExit({ code, signal, stderr: host.stderr });
      });
      // After `exit`, once what the process wrote has been read (its frames delivered).
      child.on('close', () => {
        host.closed = true;
        for (const w of host.closeWaiters.splice(0)) w();
      });
    });
  }

  attach(events: HostEvents | undefined): void {
    this.events = events;
  }

  /** Its own replacement, starting (the engine's; settles once that host is ready or failed). */
  replacement: Promise<HostProcess | undefined> | undefined;

  /** Its replacement, started and waiting aside (in no pool) to take this host's place. */
  replacementHost: HostProcess | undefined;

  /** Its replacement failed to start: it retires at its bound as if none were coming. */
  replacementFailed = false;

  /** The engine has taken it out of service for good (its replacement, if any, is handed on). */
  retired = false;

  /** Its run count, and its growth, when a check first found it past its resident growth bound. */
  overBoundAtRun: number | undefined;
  overBoundGrowth = 0;

  /** When the host last became idle (performance.now()); the engine retires the longest idle first. */
  idleSince = 0;

  /** The process's handles are unref'd (its first idle; `stop` refs them again). */
  private handlesUnrefd = false;

  /**
   * An idle host does not keep the caller's event loop alive: its handles are unref'd at its first
   * idle and stay so; while it is busy the engine's one keep-alive holds the loop (busy-hosts.ts).
   */
  becameIdle(): void {
    this.idleSince = performance.now();
    if (this.exited || this.handlesUnrefd) return;
    this.handlesUnrefd = true;
    this.refHandles(false);
  }

  /** The process and its three pipes ref'd (true) or unref'd. */
  private refHandles(ref: boolean): void {
    const { stdin, stdout, stderr } = this.child as unknown as Record<'stdin' | 'stdout' | 'stderr', Refable>;
    const handles = [this.child as Refable, stdin, stdout, stderr];
    for (let i = 0; i < handles.length; i++) (ref ? handles[i]?.ref : handles[i]?.unref)?.call(handles[i]);
  }

  /**
   * Writes to the host's pipe so far (a burst's gathered frames count as one): what a test reads
   * to see a burst of outcomes go out together.
   */
  pipeWrites = 0;
  /** A gathered send went out in this tick: later ones wait in `held` for the tick's end. */
  private burst = false;
  private held: Buffer[] = [];

  /**
   * Sends a message; false when the host is gone or the message is over the channel's size limit.
   * `gather` (a call's outcome): the first of a tick is written at once, so the host starts its turn;
   * the others of the same tick (a `Promise.all`'s outcomes, settled by one batch answer's chunk in
   * one drain of the promise jobs) go out together in one write when the tick ends, not a write and
   * a syscall each. Any message sent meanwhile keeps its place behind them. A string is the
   * message's JSON text already made (a call's outcome, run-frames.ts `outcomeFrame`).
   */
  send(message: ToHost | string, gather = false): boolean {
    if (this.exited) return false;
    let frames: Buffer[];
    try {
      frames =
        typeof message === 'string'
          ? encodeText(message, this.frameLimits)
          : encodeMessage(message, this.frameLimits);
    } catch {
      return false;
    }
    if (this.burst) {
      for (const buf of frames) this.held.push(buf);
      return true;
    }
    if (gather) {
      this.burst = true;
      process.nextTick(() => {
        this.burst = false;
        if (this.held.length === 0) return;
        const held = this.held;
        this.held = [];
        if (!this.exited) this.write(held);
      });
    }
    this.write(frames);
    return true;
  }

  /** Its last `done` said `held` and no `prepare` went yet (engine.ts `release`). */
  prepareDue = false;

  /** A host whose last `done` said `held`, told to make its next isolate now (once; wire.ts). */
  sendPrepare(): void {
    if (!this.prepareDue) return;
    this.prepareDue = false;
    if (this.exited) return;
    // After any frames this tick gathered (order kept), as `send` does.
    if (this.burst) this.held.push(...PREPARE_FRAME);
    else this.write(PREPARE_FRAME);
  }

  /**
   * One write of `frames` to the host's pipe, in order. Straight to the pipe's descriptor when
   * nothing waits in stdin's stream queue (the common case: the frames fit the pipe): one write(2)
   * and none of the stream's JavaScript (its write request, callbacks and ticks were ~a third of an
   * outcome frame's cost on a call's path; test/bench/README.md, round 36 `call-hops`), as the host
   * writes its own (host-output.ts). What the pipe does not take now (full: EAGAIN, or a part)
   * goes through the stream, as does every write while something queued there is unwritten, so
   * the order of bytes is kept. The descriptor is non-blocking (libuv's), so this never waits.
   */
  private write(frames: Buffer[]): void {
    this.pipeWrites++;
    const stdin = this.child.stdin!;
    let rest = frames;
    const fd = (stdin as unknown as { _handle?: { fd?: number } | null })._handle?.fd;
    if (fd !== undefined && fd >= 0 && stdin.writableLength === 0) {
      let written = 0;
      try {
        written = frames.length === 1 ? writeSync(fd, frames[0]!) : writevSync(fd, frames);
      } catch {
        // EAGAIN (the pipe is full), EPIPE (the host is gone) or anything else: the stream writes
        // it, or reports it (its `error` is ignored; the exit reports a gone host), as before.
      }
      rest = [];
      // Indexed: every frame written (a `for … of` the JIT has not optimized allocates an iterator
      // result a frame).
      for (let i = 0; i < frames.length; i++) {
        const buf = frames[i]!;
        if (written >= buf.length) written -= buf.length;
        else {
          rest.push(written > 0 ? buf.subarray(written) : buf);
          written = 0;
        }
      }
      if (rest.length === 0) return;
    }
    if (rest.length === 1) {
      stdin.write(rest[0]!);
      return;
    }
    stdin.cork();
    for (const buf of rest) stdin.write(buf);
    stdin.uncork();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Private resident memory after this host's first run, bytes (the engine's baseline for its growth). */
  baselineResidentBytes: number | undefined;

  /**
   * The process's resident memory, bytes, read by the engine from /proc (not reported by the host,
   * which runs tenant code); undefined when it cannot be read (gone, no /proc).
   */
  residentBytes(read?: (pid: number) => number | undefined): number | undefined {
    if (this.exited || this.child.pid === undefined) return undefined;
    if (read) return read(this.child.pid);
    const kb = VM_RSS.exec(this.status() ?? '')?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  }

  /**
   * The process's private resident memory, bytes: anonymous and shared-memory pages (RssAnon +
   * RssShmem), not file-backed ones (RssFile). What the growth bound reads: a leak is anonymous
   * memory, while the file-backed growth of a host is the node binary's code pages the first time
   * V8's optimizing compiler runs in it (~5 MiB of Turbofan at once, clean pages of one copy in the
   * page cache shared by every node process; test/bench/README.md, round 33 `host-rss`), which
   * alone retired a host every ~20 runs of 100 calls (round 34 `par-calls`). With an injected
   * reader (tests), that reader's figure.
   */
  privateBytes(read?: (pid: number) => number | undefined): number | undefined {
    if (this.exited || this.child.pid === undefined) return undefined;
    if (read) return read(this.child.pid);
    return privateBytesOf(this.status() ?? '');
  }

  /**
   * /proc/<pid>/status's text. The file kept open and read again from its start: an open and a
   * close fewer each of a run's reads (the resident guard's every RESIDENT_GUARD_MS, the release's),
   * ~25 against ~15 µs each (test/bench/README.md, round 30 `runner-cpu`). The descriptor names
   * this process, not its pid: once it is gone a read fails (undefined), it never reads a reused
   * pid's.
   */
  private status(): string | undefined {
    try {
      this.statusFd ??= openSync(`/proc/${this.child.pid}/status`, 'r');
      return readStatusText(this.statusFd);
    } catch {
      return undefined;
    }
  }

  /** The open /proc/<pid>/status (`residentBytes`), closed when the process exits. */
  private statusFd: number | undefined;

  private closeStatus(): void {
    if (this.statusFd === undefined) return;
    try {
      closeSync(this.statusFd);
    } catch {}
    this.statusFd = undefined;
  }

  kill(): void {
    if (this.exited) return;
    this.child.kill('SIGKILL');
  }

  /** Resolves when the process has exited (at once if it already has). */
  whenExited(): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise<void>((resolve) => this.exitWaiters.push(resolve));
  }

  /** Resolves when the process has exited and every frame it wrote was delivered. */
  whenClosed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => this.closeWaiters.push(resolve));
  }

  /** Kills the process and resolves when it has exited. */
  async stop(): Promise<void> {
    if (this.exited) return;
    const waited = this.whenExited();
    this.handlesUnrefd = false;
    this.refHandles(true); // an unref'd child would let the caller's process exit before this resolves
    this.kill();
    await waited;
  }

  private protocolError(reason: string): void {
    this.kill();
    this.events?.onProtocolError(reason);
  }
}
