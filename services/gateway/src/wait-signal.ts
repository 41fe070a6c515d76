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
