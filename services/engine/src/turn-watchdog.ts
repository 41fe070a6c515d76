/**
 * The deadline of a turn on the sandbox host's own thread, kept by one watchdog thread per host
 * instead of isolated-vm's `timeout` option. isolated-vm 7 keeps every `applySync` timeout's record
 * (`timer_data_t`, ~0.2 KiB) in its timer thread's queue until the timeout would have fired
 * (`src/lib/timer.cc`: `~timer_t` only sets `is_alive = false`), and its thread wakes as each comes
 * due: a run's first turn and every delivered call's turn left one for the run's whole budget (120 s
 * by default), ~30 KiB of a 100-call run's private growth (bench/README, round 35 `timer-bound`).
 *
 * The watchdog is a small isolate of our own whose function runs on one of isolated-vm's pool
 * threads for the host's life, asleep in `Atomics.wait` on memory shared with this thread. A turn
 * writes its deadline and a token there (no syscall, no thread woken); past the deadline the
 * watchdog takes the token and disposes the isolate — isolated-vm's `dispose()` may be called from
 * any isolate holding the handle (`IsolateHolder::Dispose` → `Terminate`: V8's `TerminateExecution`,
 * thread-safe), and the running `applySync` then throws "Isolate was disposed during execution".
 * Whoever takes the token decides: the turn returned in time, or the watchdog ended it (then the
 * host reports `timeout`, as isolated-vm's timeout did).
 *
 * The watched isolate's handle waits in a third isolate, the mailbox, set from this thread when an
 * isolate is made (`adopt`, while the host idles; a synchronous set into an idle isolate, no thread
 * woken); the watchdog reads it from there only when a deadline passes. The watchdog sleeps until
 * the earliest deadline it knows of and is woken (`Atomics.notify`) only when a turn's deadline is
 * sooner than that, and when the process exits: it must return before, since isolated-vm joins its
 * pool threads in a static destructor and a thread asleep here would hold the exit forever (`close`,
 * on the process's `exit`).
 */
import ivm from 'isolated-vm';

/** Int32 slots. */
const KICK = 0; // bumped to wake the watchdog
const EPOCH = 1; // the mailbox's number; -1: closed
const ARMED = 2; // the epoch whose watch is running
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
/** How long the closing thread waits for the watchdog to let go of an isolate it is stopping, ms. */
const STOP_WAIT_MS = 1000;
/**
 * Adoptions after which the mailbox isolate is replaced by a fresh one. Each adoption leaves the
 * handle before it (a JS wrapper with a native part) in the mailbox's heap, freed only by a full
 * GC, which an isolate that allocates almost nothing never runs (~0.3 KiB a run kept, round 35).
 * A fresh mailbox (~1 ms, while the host idles) frees all of it at once.
 */
const RENEW_EVERY_ADOPTIONS = 1024;

/** Runs in the watchdog isolate once: the shared memory's views, kept there for every watch. */
const INIT_SOURCE = `(function init(sab) {
  globalThis.st = new Int32Array(sab, 0, ${INT32_SLOTS});
  globalThis.big = new BigInt64Array(sab, ${INT32_SLOTS * 4}, ${BIGINT_SLOTS});
})`;
/**
 * Runs in the watchdog isolate, on isolated-vm's thread, until the mailbox changes (`epoch`). A
 * synchronous read of another isolate is refused there, so the handle is awaited when needed.
 */
const WATCH_SOURCE = `(async function watch(mailbox, epoch) {
  const st = globalThis.st;
  const big = globalThis.big;
  for (;;) {
    const kick = Atomics.load(st, ${KICK});
    if (Atomics.load(st, ${EPOCH}) !== epoch) return;
    Atomics.store(st, ${ARMED}, epoch);
    const token = Atomics.load(st, ${TURN});
    const now = Date.now();
    let planned;
    if ((token & 1) === 1) {
      const deadline = Number(Atomics.load(big, ${DEADLINE}));
      if (now >= deadline) {
        if (Atomics.compareExchange(st, ${TURN}, token, ${FIRED}) === token) {
          Atomics.store(big, ${CPU_NS}, -1n);
          try {
            const isolate = await mailbox.get('current');
            try { Atomics.store(big, ${CPU_NS}, isolate.cpuTime); } catch {}
            isolate.dispose();
          } catch {}
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
    if (Atomics.load(st, ${TURN}) !== token || Atomics.load(st, ${EPOCH}) !== epoch) continue;
    Atomics.wait(st, ${KICK}, kick, planned === Infinity ? undefined : planned - now);
  }
})`;

export class TurnWatchdog {
  private readonly sab = new SharedArrayBuffer(INT32_SLOTS * 4 + BIGINT_SLOTS * 8);
  private readonly st = new Int32Array(this.sab, 0, INT32_SLOTS);
  private readonly big = new BigInt64Array(this.sab, INT32_SLOTS * 4, BIGINT_SLOTS);
  private readonly watchRef: ivm.Reference;
  private mailbox: ivm.Isolate;
  private mailboxGlobal: ivm.Reference;
  private epoch = 1;
  private gen = 0;
  private seq = 0;
  /** The token of the turn in progress (0: none). */
  private token = 0;
  private closed = false;

  constructor() {
    const isolate = new ivm.Isolate({ memoryLimit: 8 });
    const context = isolate.createContextSync();
    // The shared memory goes in once (the same memory, not a copy: ExternalCopy's rule for it).
    const init = context.evalSync(INIT_SOURCE, { reference: true }) as ivm.Reference;
    init.applySync(undefined, [new ivm.ExternalCopy(this.sab).copyInto({ release: true })]);
    init.release();
    this.watchRef = context.evalSync(WATCH_SOURCE, { reference: true }) as ivm.Reference;
    Atomics.store(this.big, PLANNED, NO_WAKE);
    Atomics.store(this.st, EPOCH, this.epoch);
    [this.mailbox, this.mailboxGlobal] = TurnWatchdog.makeMailbox();
    this.watchRef.applyIgnored(undefined, [this.mailboxGlobal, this.epoch]);
  }

  private static makeMailbox(): [ivm.Isolate, ivm.Reference] {
    const isolate = new ivm.Isolate({ memoryLimit: 8 });
    return [isolate, isolate.createContextSync().global];
  }

  /**
   * Watches `isolate` from now on (the one watched before is let go: one run at a time). Called
   * when an isolate is made, while the host idles. Returns its number, for `begin`.
   */
  adopt(isolate: ivm.Isolate): number {
    if (this.closed) return 0;
    if (this.gen > 0 && this.gen % RENEW_EVERY_ADOPTIONS === 0) this.renewMailbox();
    this.mailboxGlobal.setSync('current', isolate);
    this.gen = this.gen >= 0x3fffffff ? 1 : this.gen + 1;
    return this.gen;
  }

  /** A fresh mailbox, and a watch that reads it (the one before returns when kicked). */
  private renewMailbox(): void {
    const old = this.mailbox;
    [this.mailbox, this.mailboxGlobal] = TurnWatchdog.makeMailbox();
    this.epoch = this.epoch >= 0x3fffffff ? 1 : this.epoch + 1;
    Atomics.store(this.st, EPOCH, this.epoch);
    // Queued first: isolated-vm's thread runs it as soon as the watch before returns, same entry.
    this.watchRef.applyIgnored(undefined, [this.mailboxGlobal, this.epoch]);
    this.kick();
    old.dispose();
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
    // Asleep past this deadline, or its watch not yet running: wake it to look again.
    if (Atomics.load(this.st, ARMED) !== this.epoch || deadline < Atomics.load(this.big, PLANNED))
      this.kick();
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
    Atomics.store(this.st, EPOCH, -1);
    this.kick();
  }

  /** Wakes the watchdog whether or not it sleeps (a kick it has not yet waited on is not lost). */
  private kick(): void {
    Atomics.add(this.st, KICK, 1);
    Atomics.notify(this.st, KICK);
  }
}
