/**
 * createEngine: the public entry. Keeps sandbox host processes per partition (tenants never share
 * one), runs one program per host at a time in a fresh isolate, replaces a host after any failure
 * after `maxRunsPerProcess` runs, or once its private resident memory grew by `maxHostResidentGrowthBytes`.
 * `execute` never throws.
 * Over ~400 lines on purpose: every function here reads the pools' shared mutable state (`closed`,
 * `starting`, `wakers`, the idle, spare and aside pools); moved out, each would reach it through a
 * shared object, an indirection on a run's acquire and release path.
 */
import { BusyHosts } from './busy-hosts.ts';
import { DeadlineWheel } from './deadline-wheel.ts';
import { engineSettings } from './engine-settings.ts';
import { HostProcess } from './host-process.ts';
import {
  growthAtRelease,
  isDue,
  type RetirementBounds,
  type RetirementReason,
  retirementOf,
} from './host-retirement.ts';
import { trimIdle } from './idle-pool.ts';
import { ResidentTicker } from './resident-guard.ts';
import { Run } from './run.ts';
import { checkRequest, runParams, sandboxFacts } from './run-request.ts';
import type { Engine, EngineOptions, ExecuteOptions, ProcessEvent, RunFailure, RunOutcome } from './types.ts';

/**
 * A run that takes a host idle for less than this follows its last run back to back: it waits for
 * that host's next isolate, which a second host would have ready.
 */
const BACK_TO_BACK_MS = 2;

export function createEngine(options: EngineOptions = {}): Engine {
  const {
    maxRunsPerProcess,
    watchdogGraceMs,
    startupTimeoutMs,
    maxIdle,
    maxIdleTotal,
    spareLeadRuns,
    maxGrowth,
    prewarm,
    maxStarting,
  } = engineSettings(options);
  const readResident = options.residentBytesOf;
  // One ticker reads every run's host's resident memory (resident-guard.ts), not a timer a run.
  const residentTicker = new ResidentTicker();
  // One timer at the earliest deadline of the runs in flight (deadline-wheel.ts), not a timer a run.
  const deadlines = new DeadlineWheel();
  const idle = new Map<string, HostProcess[]>();
  const busy = new BusyHosts();
  // A host started in the background for a partition (one at a time), for a run that finds its
  // pool empty: after a host retired with none coming, a second host for back-to-back runs, or a
  // retired host's own replacement still starting. Started with no run waiting, it joins the pool.
  const spares = new Map<string, Promise<HostProcess | undefined>>();
  /** Hosts' own replacements still starting, and those started and waiting aside for their host. */
  const replacements = new Set<Promise<HostProcess | undefined>>();
  const aside = new Set<HostProcess>();
  const spareOfRetired = new WeakSet<Promise<HostProcess | undefined>>();
  let starting = 0;
  /** Runs waiting for a start slot or a freed host; woken whenever either may have appeared. */
  let wakers: (() => void)[] = [];
  const wakeAll = () => {
    const woken = wakers;
    wakers = [];
    for (const w of woken) w();
  };
  const alive = new Set<HostProcess>();
  let closed = false;

  const emit = (event: ProcessEvent) => {
    try {
      options.onProcessEvent?.(event);
    } catch {
      // a metrics hook must never break a run
    }
  };

  async function spawnHost(partition: string): Promise<HostProcess> {
    let host: HostProcess;
    try {
      host = await HostProcess.start({
        partition,
        startupTimeoutMs,
        ...(options.wrapCommand ? { wrapCommand: options.wrapCommand } : {}),
        ...(options.hostEnv ? { env: options.hostEnv } : {}),
      });
    } catch (err) {
      // A spare's failure reaches no run: without the event it would be seen nowhere.
      if (!closed)
        emit({
          type: 'start-failed',
          partition,
          pid: undefined,
          message: String((err as Error)?.message ?? err),
        });
      throw err;
    }
    alive.add(host);
    emit({ type: 'started', partition, pid: host.pid });
    void host.whenExited().then(() => {
      alive.delete(host);
      emit({ type: 'exited', partition, pid: host.pid });
    });
    return host;
  }

  /**
   * The pool's host idle the shortest time but long enough to have made its next isolate (its
   * caches are the warmest: taking the one idle longest instead, runs rotated through every idle
   * host and a sequential run over HTTP took longer); when every host became idle just now
   * (back to back), the one idle longest, whose isolate is the furthest along. Exited hosts are dropped.
   */
  function takeIdle(pool: HostProcess[]): HostProcess | undefined {
    const now = performance.now();
    for (let i = pool.length - 1; i >= 0; i--) {
      const host = pool[i]!;
      if (host.exited) {
        pool.splice(i, 1);
        retire(host); // its replacement, if any, takes its place
      } else if (now - host.idleSince >= BACK_TO_BACK_MS) return pool.splice(i, 1)[0];
    }
    return pool.shift();
  }

  /** The partition's hosts idle, taken by a run (from acquire on) or starting as a spare. */
  function othersOf(partition: string): number {
    let n = (idle.get(partition)?.length ?? 0) + (spares.has(partition) ? 1 : 0);
    for (const host of busy) if (host.partition === partition) n++;
    return n;
  }

  /** An idle host of the partition taken for a run now, or undefined (none idle). */
  function acquireIdle(partition: string): HostProcess | undefined {
    const pool = idle.get(partition);
    const host = pool ? takeIdle(pool) : undefined;
    if (!host) return undefined;
    // Back to back: the run waits while its only host makes the isolate. With a second
    // host, consecutive runs alternate and each host prepares while the other runs
    // (sequential runs 0.72x -> ~1x raw isolated-vm's rate, engine bench).
    if (
      host.runs > 0 &&
      performance.now() - host.idleSince < BACK_TO_BACK_MS &&
      maxIdle >= 2 &&
      othersOf(partition) === 0 &&
      // its own replacement, starting, is to take its place, not to be a second host
      host.replacement === undefined
    )
      startSpare(partition, true);
    busy.add(host);
    // Taken before its `prepare` went (the same tick as its release): sent ahead of the run's frame,
    // so the host makes the isolate before it reads the run, as it did when it made it unasked.
    host.sendPrepare();
    return host;
  }

  async function acquire(partition: string): Promise<HostProcess> {
    for (;;) {
      const host = acquireIdle(partition);
      if (host) return host;
      const spare = spares.get(partition);
      if (spare) {
        spares.delete(partition);
        const host = await spare;
        if (host && !host.exited) {
          busy.add(host);
          return host;
        }
        continue;
      }
      if (closed) throw new Error('the engine is closed');
      if (starting < maxStarting) break;
      await new Promise<void>((resolve) => wakers.push(resolve));
    }
    starting++;
    try {
      const host = await spawnHost(partition);
      busy.add(host);
      return host;
    } finally {
      starting--;
      wakeAll();
    }
  }

  /**
   * Starts a host in the background, one at a time per partition (`evenWithIdle`: also when the
   * partition has an idle host). Started, it joins the idle pool (as its longest idle) if there is
   * room; else it waits aside for a run that finds the pool empty.
   */
  function startSpare(partition: string, evenWithIdle = false): void {
    if (!prewarm || closed || spares.has(partition)) return;
    if (!evenWithIdle && (idle.get(partition)?.length ?? 0) > 0) return;
    // Spawned after this turn: the spawn blocks this thread ~1.5-2 ms (fork of a large process),
    // and the run whose release asked for the spare has its result to hand on first.
    const spare = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => (closed ? Promise.reject(new Error('engine closed')) : spawnHost(partition)))
      .then(
        (host) => {
          if (closed) {
            void host.stop();
            return undefined;
          }
          host.becameIdle();
          // No run took it while it started: it joins the pool as its longest idle, so a host about
          // to retire still serves its last runs first, and back-to-back runs take it at once.
          if (spares.get(partition) === spare && (idle.get(partition)?.length ?? 0) < maxIdle) {
            spares.delete(partition);
            park(host, true);
          }
          return host;
        },
        () => undefined,
      );
    spares.set(partition, spare);
  }

  /**
   * An idle host joins its partition's pool (at the end, as the latest idle; `first`: at the
   * start); over the runner-wide cap, the host idle longest goes.
   */
  function park(host: HostProcess, first = false): void {
    const pool = idle.get(host.partition) ?? [];
    if (first) pool.unshift(host);
    else pool.push(host);
    idle.set(host.partition, pool);
    wakeAll();
    trimIdle(idle, maxIdleTotal);
  }

  const bounds: RetirementBounds = { maxRunsPerProcess, maxGrowth, prewarm };

  function retiredEvent(host: HostProcess, reason: RetirementReason) {
    emit({ type: 'retired', partition: host.partition, pid: host.pid, reason });
  }

  /** A started host joins its partition's pool if there is room (as the latest idle); else it goes. */
  function adopt(host: HostProcess): void {
    if (!closed && !host.exited && (idle.get(host.partition)?.length ?? 0) < maxIdle) {
      host.becameIdle();
      park(host);
    } else void host.stop();
  }

  /**
   * A host leaves service: its replacement takes its place if started, or when it is (true), so no
   * second start follows; false when it has none coming.
   */
  function retire(host: HostProcess): boolean {
    host.retired = true;
    void host.stop();
    const ready = host.replacementHost;
    host.replacementHost = undefined;
    if (ready) {
      aside.delete(ready);
      adopt(ready);
      return true;
    }
    if (!host.replacement || host.replacementFailed) return false;
    // Still starting: the partition's spare, so a run that finds the pool empty waits for it
    // rather than starting another.
    if (!spares.has(host.partition)) {
      spares.set(host.partition, host.replacement);
      spareOfRetired.add(host.replacement);
    }
    return true;
  }

  /**
   * Starts this host's own replacement in the background (once a host). Started, it waits aside;
   * the host retires at its first release (or at once, if idle) once it is due, and the replacement
   * takes its place. One per host, not one per partition: a runner's hosts, started together, come
   * due together (16 clients on 4 slots: several in one second), and with one spare a partition
   * the others retired with nothing ready, or a spare joined the pool as a fifth host and another
   * host was stopped as surplus; the next runs waited for whole host starts (sequential.ts
   * CLIENTS=16 TAIL=1).
   */
  function startReplacement(host: HostProcess): void {
    if (!prewarm || closed || host.replacement) return;
    const partition = host.partition;
    // Spawned after this turn, as a spare: the release asking for it has its result to hand on.
    const starting: Promise<HostProcess | undefined> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => (closed ? Promise.reject(new Error('engine closed')) : spawnHost(partition)))
      .then(
        (replacement) => {
          replacements.delete(starting);
          if (closed) {
            void replacement.stop();
            return undefined;
          }
          if (host.retired || host.exited) {
            // The partition's spare since its host retired: a run took it (and has it now), or none did.
            if (spareOfRetired.has(starting) && spares.get(partition) !== starting) return replacement;
            if (spares.get(partition) === starting) spares.delete(partition);
            adopt(replacement);
            return undefined;
          }
          replacement.becameIdle();
          host.replacementHost = replacement;
          aside.add(replacement);
          // Due and idle: the swap need not wait for its next run.
          const pool = idle.get(partition);
          const at = pool?.indexOf(host) ?? -1;
          if (pool && at >= 0 && isDue(host, bounds)) {
            pool.splice(at, 1);
            retiredEvent(host, host.overBoundAtRun !== undefined ? 'max-memory' : 'max-runs');
            retire(host);
          }
          return undefined;
        },
        () => {
          replacements.delete(starting);
          host.replacementFailed = true;
          return undefined;
        },
      );
    host.replacement = starting;
    replacements.add(starting);
  }

  /**
   * A host whose `done` said `held` makes its next isolate at this `prepare` (next-isolate.ts), sent
   * on the tick's queue, after the outcome was handed on; unless it left the pool (a run that took
   * it meanwhile sent it first, `acquireIdle`).
   */
  function prepareNext(host: HostProcess): void {
    if (host.prepareDue && !host.exited && idle.get(host.partition)?.includes(host)) host.sendPrepare();
  }

  function release(host: HostProcess, reusable: boolean, crashed = false, held = false): void {
    busy.delete(host);
    host.runs++;
    const pool = idle.get(host.partition) ?? [];
    const grown = growthAtRelease(host, reusable, maxGrowth, readResident);
    const reason = closed ? undefined : retirementOf(host, { reusable, crashed, grown }, bounds);
    if (closed || reason || pool.length >= maxIdle) {
      if (reason) retiredEvent(host, reason);
      // Its replacement (started or starting) takes its place; else a spare starts.
      if (!retire(host)) startSpare(host.partition);
      wakeAll(); // a run waiting for a start slot may take the replacement
      return;
    }
    host.becameIdle();
    park(host);
    if (held) {
      host.prepareDue = true;
      process.nextTick(prepareNext, host);
    }
    // Due, or its last quarter of runs begins: its replacement starts now, so it is ready (a start
    // takes as long as dozens of runs, more on a loaded core) when the host retires. Starting it
    // only before the last run left the next run waiting.
    if (isDue(host, bounds) || host.runs >= maxRunsPerProcess - spareLeadRuns) startReplacement(host);
  }

  async function execute(code: string, opts: ExecuteOptions = {}): Promise<RunOutcome> {
    const startedAt = Date.now();
    const failed = (failure: RunFailure): RunOutcome => ({
      status: 'failed',
      failure,
      logs: [],
      outputTruncated: false,
      calls: [],
      durationMs: Date.now() - startedAt,
      ...(opts.sandbox ? { sandbox: sandboxFacts(opts.sandbox) } : {}),
    });
    try {
      const checked = checkRequest(code, opts);
      if ('kind' in checked) return failed(checked);
      if (closed) return failed({ kind: 'sandbox-unavailable', message: 'the engine is closed' });
      if (opts.signal?.aborted || opts.cancel?.aborted)
        return failed({ kind: 'abort', message: 'the run was aborted' });

      let host: HostProcess;
      const acquiring = performance.now();
      const partition = opts.partition ?? 'default';
      try {
        // An idle host is taken in this turn: the run's program goes to it with no await before
        // (each one a turn of the microtask queue, where other work queued meanwhile runs first).
        host = acquireIdle(partition) ?? (await acquire(partition));
      } catch (e) {
        return failed({ kind: 'sandbox-unavailable', message: (e as Error).message });
      }
      if (closed) {
        // Closed while this run waited for its host: the host is stopped, not left behind.
        busy.delete(host);
        void host.stop();
        return failed({ kind: 'sandbox-unavailable', message: 'the engine is closed' });
      }
      const hostWaitMs = performance.now() - acquiring;
      const run = new Run(
        host,
        runParams(code, opts, checked, { watchdogGraceMs, readResident, residentTicker, deadlines }),
      );
      const { outcome, hostReusable, hostHeld } = await run.execute();
      release(
        host,
        hostReusable,
        // A worker-exit out of memory is the tenant's program (an array bomb), not a crash.
        outcome.status === 'failed' &&
          outcome.failure?.kind === 'worker-exit' &&
          outcome.failure?.cause !== 'memory',
        hostHeld,
      );
      return {
        ...outcome,
        durationMs: Date.now() - startedAt,
        hostWaitMs,
        ...(host.pid !== undefined ? { hostPid: host.pid } : {}),
        ...(opts.sandbox ? { sandbox: sandboxFacts(opts.sandbox) } : {}),
      };
    } catch (e) {
      // A bug of ours; still never throw.
      return failed({ kind: 'sandbox-unavailable', message: `the engine failed: ${(e as Error).message}` });
    }
  }

  async function close(): Promise<void> {
    closed = true;
    wakeAll();
    const starting = await Promise.all(spares.values());
    spares.clear();
    // Replacements still starting stop themselves once started (the engine is closed).
    await Promise.all(replacements);
    const all = [...busy, ...[...idle.values()].flat(), ...aside, ...starting.filter((h) => h !== undefined)];
    aside.clear();
    idle.clear();
    await Promise.all(all.map((h) => h.stop()));
    busy.close();
    residentTicker.close();
    deadlines.close();
  }

  function stats() {
    let processes = 0;
    for (const host of alive) if (!host.exited) processes++;
    return { processes, busy: busy.size };
  }

  return { execute, close, stats };
}
