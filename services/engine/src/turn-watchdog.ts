/**
 * The deadline of a turn on the sandbox host's own thread, kept by one watchdog thread per host
 * instead of isolated-vm's `timeout` option. isolated-vm 7 keeps every `applySync` timeout's record
 * (`timer_data_t`, ~0.2 KiB) in its timer thread's queue until the timeout would have fired
 * (`src/lib/timer.cc`: `~timer_t` only sets `is_alive = false`), and its thread wakes as each comes
 * due: a run's first turn and every delivered call's turn left one for the run's whole budget (120 s
 * by default), ~56,000 alive at ~470 runs/s, ~22 KiB a 100-call run (bench/README, round 35
 * `timer-bound`).
 *
 * The watchdog is a small isolate of our own whose function runs on one of isolated-vm's pool
 * threads for as long as an isolate is being watched, asleep in `Atomics.wait` on memory shared
 * with this thread. A turn writes its deadline and a token there (no syscall); past the deadline
 * the watchdog takes the token and disposes the isolate — isolated-vm's `dispose()` may be called
 * from any isolate holding the handle (`IsolateHolder::Dispose` → `Terminate`: V8's
 * `TerminateExecution`, thread-safe), and the running `applySync` then throws "Isolate was disposed
 * during execution". Whoever takes the token decides: the turn ended in time, or the watchdog ended
 * it (then the host reports `timeout`, as isolated-vm's timeout did).
 *
 * The function sleeps until the earliest deadline it knows of and is woken (`Atomics.notify`) only
 * when a turn's deadline is sooner than that, when a new isolate is adopted (one wake a run, while
 * the host idles), and when the process exits. It must return before the process exits: isolated-vm
 * joins its pool threads in a static destructor, and a thread still asleep here would hold the exit
 * forever (`close`, on the process's `exit`).
 */
import ivm from 'isolated-vm';

/** Int32 slots. */
const KICK = 0; // bumped to wake the watchdog
const GEN = 1; // the adopted isolate's number; -1: closed
const ARMED = 2; // the number whose watch is running
const TURN = 3; // odd: a turn's token; 0: no turn; FIRED, STOPPED: the watchdog's
const FIRED = -2;
const STOPPED = -4;
/** BigInt64 slots (after the Int32 ones). */
const DEADLINE = 0; // the turn's deadline, epoch ms
const PLANNED = 1; // when the watchdog will wake, epoch ms (NO_WAKE: when kicked)
const CPU_NS = 2; // the isolate's CPU time when the watchdog stopped it
const NO_WAKE = 2n ** 62n;
const INT32_SLOTS = 4;
const BIGINT_SLOTS = 3;
/**
 * Adoptions after which the watchdog isolate is replaced by a fresh one. Each watch leaves its
 * isolate's handle (a JS wrapper with a native part) in the watchdog's heap, freed only by a full
 * GC, which an isolate that allocates almost nothing never runs: measured ~0.3 KiB a run kept
 * (round 35). A fresh watchdog (~1 ms, while the host idles) frees all of it at once.
 */
const RENEW_EVERY_ADOPTIONS = 256;
/** How long the closing thread waits for the watchdog to let go of an isolate it is stopping, ms. */
const STOP_WAIT_MS = 1000;

/** Runs in the watchdog isolate once: the shared memory's views, kept there for every watch. */
const INIT_SOURCE = `(function init(sab) {
  globalThis.st = new Int32Array(sab, 0, ${INT32_SLOTS});
  globalThis.big = new BigInt64Array(sab, ${INT32_SLOTS * 4}, ${BIGINT_SLOTS});
})`;
/**
 * Runs in the watchdog isolate, on isolated-vm's thread: the watch over one adopted isolate. It
 * allocates nothing a wake-up but a few BigInts: the watchdog isolate collects garbage only when
 * its own heap fills, so each watch's handle waits for that.
 */
const WATCH_SOURCE = `(function watch(isolate, gen) {
  const st = globalThis.st;
  const big = globalThis.big;
  for (;;) {
    const kick = Atomics.load(st, ${KICK});
    if (Atomics.load(st, ${GEN}) !== gen) return;
    Atomics.store(st, ${ARMED}, gen);
    const token = Atomics.load(st, ${TURN});
    const now = Date.now();
    let planned;
    if ((token & 1) === 1) {
      const deadline = Number(Atomics.load(big, ${DEADLINE}));
      if (now >= deadline) {
        if (Atomics.compareExchange(st, ${TURN}, token, ${FIRED}) === token) {
          try { Atomics.store(big, ${CPU_NS}, isolate.cpuTime); } catch { Atomics.store(big, ${CPU_NS}, -1n); }
          try { isolate.dispose(); } catch {}
          Atomics.store(st, ${TURN}, ${STOPPED});
          Atomics.notify(st, ${TURN});
        }
        continue;
      }
      planned = deadline;
    } else {
      // No turn: sleep on until the last deadline known (a later turn's is rarely sooner: then it kicks).
      const last = Number(Atomics.load(big, ${PLANNED}));
      planned = last > now && last < ${Number(NO_WAKE)} ? last : Infinity;
    }
    Atomics.store(big, ${PLANNED}, planned === Infinity ? ${NO_WAKE}n : BigInt(planned));
    if (Atomics.load(st, ${TURN}) !== token || Atomics.load(st, ${GEN}) !== gen) continue;
    Atomics.wait(st, ${KICK}, kick, planned === Infinity ? undefined : planned - now);
  }
})`;

export class TurnWatchdog {
  private isolate: ivm.Isolate;
  private watchRef: ivm.Reference;
  private readonly sab = new SharedArrayBuffer(INT32_SLOTS * 4 + BIGINT_SLOTS * 8);
  private readonly st = new Int32Array(this.sab, 0, INT32_SLOTS);
  private readonly big = new BigInt64Array(this.sab, INT32_SLOTS * 4, BIGINT_SLOTS);
  private gen = 0;
  private seq = 0;
  /** The token of the turn in progress (0: none). */
  private token = 0;
  private closed = false;
  private adoptions = 0;

  constructor() {
    [this.isolate, this.watchRef] = this.make();
    Atomics.store(this.big, PLANNED, NO_WAKE);
  }

  /** A watchdog isolate with the shared memory in (the same memory, not a copy: ExternalCopy's rule). */
  private make(): [ivm.Isolate, ivm.Reference] {
    const isolate = new ivm.Isolate({ memoryLimit: 8 });
    const context = isolate.createContextSync();
    const init = context.evalSync(INIT_SOURCE, { reference: true }) as ivm.Reference;
    init.applySync(undefined, [new ivm.ExternalCopy(this.sab).copyInto({ release: true })]);
    init.release();
    return [isolate, context.evalSync(WATCH_SOURCE, { reference: true }) as ivm.Reference];
  }

  /**
   * Watches `isolate` from now on (the one watched before is let go: one run at a time). Called
   * when an isolate is made, while the host idles. Returns its number, for `begin`.
   */
  adopt(isolate: ivm.Isolate): number {
    if (this.closed) return 0;
    this.gen = this.gen >= 0x3fffffff ? 1 : this.gen + 1;
    Atomics.store(this.st, GEN, this.gen);
    if (++this.adoptions % RENEW_EVERY_ADOPTIONS === 0) {
      // The watch running there returns (kicked) or is ended by the disposal, whichever is first.
      this.kick();
      this.watchRef.release();
      this.isolate.dispose();
      [this.isolate, this.watchRef] = this.make();
    }
    // Queued first, then the watch before it is woken to return: isolated-vm's thread runs the new
    // one as soon as that returns, in the same entry (one wake-up a run, no main-thread wake).
    this.watchRef.applyIgnored(undefined, [isolate, this.gen]);
    this.kick();
    return this.gen;
  }

  /**
   * A turn on this thread starts, to be stopped `turnMs` from now. False when `gen` is not the
   * isolate watched now (the caller then falls back to isolated-vm's own timeout).
   */
  begin(gen: number, turnMs: number): boolean {
    if (this.closed || gen !== this.gen || gen === 0) return false;
    const deadline = BigInt(Date.now() + Math.max(1, turnMs));
    this.seq = (this.seq + 2) & 0x3ffffffe;
    this.token = this.seq | 1;
    Atomics.store(this.big, DEADLINE, deadline);
    Atomics.store(this.st, TURN, this.token);
    // Asleep past this deadline, or not yet watching this isolate: wake it to look again.
    if (Atomics.load(this.st, ARMED) !== gen || deadline < Atomics.load(this.big, PLANNED)) this.kick();
    return true;
  }

  /**
   * The turn begun last returned. True when the watchdog had stopped it (its isolate disposed, or
   * being disposed: this waits until that is done, so the caller sees it disposed).
   */
  end(): boolean {
    const token = this.token;
    this.token = 0;
    if (token === 0) return false;
    const was = Atomics.compareExchange(this.st, TURN, token, 0);
    if (was === token) return false;
    if (was === FIRED) Atomics.wait(this.st, TURN, FIRED, STOP_WAIT_MS);
    return true;
  }

  /** The watched isolate's CPU time when the watchdog stopped it, ns (undefined: unknown). */
  stoppedCpuNs(): bigint | undefined {
    const ns = Atomics.load(this.big, CPU_NS);
    return ns >= 0n ? ns : undefined;
  }

  /** The watch returns and lets isolated-vm's thread go (the process is exiting). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    Atomics.store(this.st, GEN, -1);
    this.kick();
  }

  /** Wakes the watchdog whether or not it sleeps (a kick it has not yet waited on is not lost). */
  private kick(): void {
    Atomics.add(this.st, KICK, 1);
    Atomics.notify(this.st, KICK);
  }
}
