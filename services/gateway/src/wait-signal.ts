/**
 * What ends a `Prefer: wait` early besides the run's end: its client gone before the response was
 * finished, or the app closing. `clientGone` (problem-reply.ts) gives that as an AbortSignal: an
 * AbortController a request, a listener added to and removed from the app's closing signal (Node's
 * EventTarget, with its weak-listener bookkeeping) and another on the request's own signal for
 * each wait, 21–32 µs of the gateway's main thread on CPU a waited run (test/bench/README.md,
 * round 24).
 * A waiter needs only `aborted` and one wake-up: here the closing signal has one listener for all
 * requests (a Set of the requests still open), and a request's state is two plain fields.
 */
import type { FastifyReply } from 'fastify';

export interface WaitSignal {
  readonly aborted: boolean;
  /**
   * `fn` is called once when the signal aborts (not for an abort before this call, as an
   * AbortSignal's listener); the returned function removes it.
   */
  onAbort(fn: () => void): () => void;
}

/** An AbortSignal seen as a WaitSignal (the MCP host's waits). */
export function waitSignalOf(signal: AbortSignal): WaitSignal {
  return {
    get aborted() {
      return signal.aborted;
    },
    onAbort(fn) {
      signal.addEventListener('abort', fn, { once: true });
      return () => signal.removeEventListener('abort', fn);
    },
  };
}

/** Either kind, as a WaitSignal. */
export const asWaitSignal = (signal: AbortSignal | WaitSignal): WaitSignal =>
  'onAbort' in signal ? signal : waitSignalOf(signal);

class RequestGone implements WaitSignal {
  aborted = false;
  #wakes: (() => void)[] = [];
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const wakes = this.#wakes;
    this.#wakes = [];
    for (const fn of wakes) fn();
  }
  onAbort(fn: () => void): () => void {
    this.#wakes.push(fn);
    return () => {
      const at = this.#wakes.indexOf(fn);
      if (at >= 0) this.#wakes.splice(at, 1);
    };
  }
}

/**
 * One per app (its `closing` signal): `gone(reply)` is the WaitSignal of a request, aborted when its
 * client goes away before the response is finished or when `closing` aborts while the request is
 * open — as `clientGone(reply, closing)`'s signal is (an app already closing when the request
 * came does not abort it: an AbortSignal's listener added after its abort is never called).
 */
export function createRequestGone(closing: AbortSignal) {
  const open = new Set<RequestGone>();
  closing.addEventListener(
    'abort',
    () => {
      const all = [...open];
      open.clear();
      for (const r of all) r.abort();
    },
    { once: true },
  );
  return {
    gone(reply: FastifyReply): WaitSignal {
      const request = new RequestGone();
      if (!closing.aborted) open.add(request);
      reply.raw.once('close', () => {
        open.delete(request);
        if (!reply.raw.writableFinished) request.abort();
      });
      return request;
    },
    /** Requests whose signal `closing` would still abort (what a test reads: none left behind). */
    get open(): number {
      return open.size;
    },
  };
}

/** What `createRecheckClock` arms (the global timers unless a test counts them). */
export interface ClockTimers {
  set(fn: () => void, ms: number): { unref(): unknown };
  clear(timer: { unref(): unknown }): void;
}
const globalTimers: ClockTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/**
 * One timer for the re-checks of every wait (`Prefer: wait`'s 1 s re-read, its deadline), instead
 * of a timer made and cleared by each: a waited run ends by its pushed end long before its
 * re-check, so each run paid a timer's insertion and its removal (~20 µs each on CPU cold, the
 * removal on the path from the end's message to the response; test/bench/README.md, round 31
 * `gw-steps`) for a timer that never fired. Here `after(ms, fn)` files `fn` under its due time
 * (monotonic, as a timer's: a step of the wall clock moves nothing), rounded up to `slotMs` (so a
 * wait ends at most that much after its due time, never before); the one timer is
 * armed for the earliest slot and is not disarmed when a wait leaves: it fires, wakes what is due,
 * and arms itself for the earliest slot left, if any. One client's runs, each waiting a few ms,
 * cost a timer about once a second, not twice a run. Unref'd: a wait is held by its request.
 */
export function createRecheckClock(slotMs = 16, timers: ClockTimers = globalTimers) {
  const slots = new Map<number, Set<() => void>>();
  let armedFor = Number.POSITIVE_INFINITY;
  let timer: { unref(): unknown } | undefined;
  const arm = (slot: number) => {
    if (slot >= armedFor) return;
    if (timer) timers.clear(timer);
    armedFor = slot;
    timer = timers.set(fire, Math.max(0, slot - performance.now()));
    timer.unref();
  };
  function fire() {
    timer = undefined;
    armedFor = Number.POSITIVE_INFINITY;
    const now = performance.now();
    const due: (() => void)[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const [slot, fns] of slots) {
      if (slot <= now) {
        slots.delete(slot);
        due.push(...fns);
      } else if (slot < next) next = slot;
    }
    if (next !== Number.POSITIVE_INFINITY) arm(next);
    for (const fn of due) fn();
  }
  return {
    /** Calls `fn` once, `ms` or a little more from now; the returned function takes it back. */
    after(ms: number, fn: () => void): () => void {
      const slot = Math.ceil((performance.now() + Math.max(0, ms)) / slotMs) * slotMs;
      let fns = slots.get(slot);
      if (!fns) {
        fns = new Set();
        slots.set(slot, fns);
      }
      fns.add(fn);
      arm(slot);
      const filed = fns;
      return () => {
        filed.delete(fn);
        if (filed.size === 0 && slots.get(slot) === filed) slots.delete(slot);
      };
    },
    /** Waits filed (a test reads it: none left behind). */
    get pending(): number {
      let n = 0;
      for (const fns of slots.values()) n += fns.size;
      return n;
    },
  };
}

export type RecheckClock = ReturnType<typeof createRecheckClock>;
