/**
 * Replay sequencing for the runner. A run that starts again (after a decision, a crash, a stalled
 * job) re-executes from the top with the same clock and seed; this handler sits between the engine
 * and the runner's gateway client and makes the re-execution see exactly what the earlier ones saw:
 *
 * - a call the journal has `done` gets its saved outcome and is never sent;
 * - outcomes are released in journal delivery order (`deliverySeq`), so `Promise.all` /
 *   `Promise.race` continuations run in the same order and later calls get the same indexes;
 *   live outcomes that carry a `deliverySeq` (the gateway journaled them) join the same order;
 * - a call whose binding or arguments differ from its journal entry stops the run with
 *   `replay-mismatch`, and nothing is sent;
 * - every other call (new, or claimed/sent by an earlier attempt) goes to `live`, where the
 *   gateway's atomic claim decides between sending, a decision, and `unknown`.
 *
 * Why release order is enough: an outcome journaled with seq k was delivered after every outcome
 * with a lower seq, so the calls the program made before seeing k depend only on those; replaying
 * them in the same order makes the program issue the same calls at the same points. A missing
 * lower seq that never arrives means the program diverged (or a live outcome was lost): the stall
 * guard then ends the wait instead of hanging the run.
 */
import type { BindingCall, BindingHandler, BindingOutcome } from '@islet/protocol';
import type { JournalEntry } from './types.ts';

export interface LiveOutcome {
  outcome: BindingOutcome;
  /** The journal's delivery number when the gateway journaled the outcome; absent for transport-level answers. */
  deliverySeq?: number;
}

interface ReplayingHandlerOptions {
  /** The run's journal as loaded at the start of this execution (`journal.list(runId)`). */
  journal: readonly JournalEntry[];
  /** Sends a call that the journal cannot answer (the runner's gateway client). */
  live: (call: BindingCall) => Promise<LiveOutcome>;
  /**
   * How long held outcomes may wait for an earlier delivery with no progress (no call made, no
   * outcome arriving, no live call in flight) before the guard acts, ms. Default 30000. Use the
   * run's time budget: an honest program never idles longer than that between deliveries.
   */
  stallMs?: number;
  /** Counts for metrics (`islet_binding_calls_total{outcome="replayed"|"mismatch"}`). */
  onEvent?: (event: 'replayed' | 'mismatch' | 'live' | 'stall-skip') => void;
}

interface ReplayingHandler {
  handler: BindingHandler;
  /** Stops the stall guard's timer (call when the execution ended). */
  close(): void;
}

export function createReplayingHandler(options: ReplayingHandlerOptions): ReplayingHandler {
  const byIndex = new Map<number, JournalEntry>();
  const journaledSeqs = new Map<number, number>(); // deliverySeq → index
  for (const entry of options.journal) {
    byIndex.set(entry.index, entry);
    if (entry.state === 'done' && entry.deliverySeq !== undefined)
      journaledSeqs.set(entry.deliverySeq, entry.index);
  }
  const stallMs = options.stallMs ?? 30_000;
  const held = new Map<number, { outcome: BindingOutcome; resolve: (o: BindingOutcome) => void }>();
  const calledIndexes = new Set<number>();
  const released = new Set<number>();
  let nextSeq = 1;
  let liveInFlight = 0;
  let stop: BindingOutcome | undefined;
  let lastProgress = Date.now();
  const emit = (e: 'replayed' | 'mismatch' | 'live' | 'stall-skip') => options.onEvent?.(e);

  const drain = () => {
    for (;;) {
      while (released.has(nextSeq)) nextSeq++;
      const item = held.get(nextSeq);
      if (!item) return;
      held.delete(nextSeq);
      released.add(nextSeq);
      lastProgress = Date.now();
      item.resolve(item.outcome);
    }
  };

  /** Releases everything held, in seq order: the run is ending, order no longer feeds later calls. */
  const flush = (replaceWith?: BindingOutcome) => {
    for (const seq of [...held.keys()].sort((a, b) => a - b)) {
      const item = held.get(seq);
      held.delete(seq);
      released.add(seq);
      item?.resolve(replaceWith ?? item.outcome);
    }
  };

  // Releases run in a microtask, never inside the handler call that brought the outcome: the
  // engine attaches its continuation to the promise the handler returns right after the call, so
  // every held promise has its continuation attached before any is resolved, and continuations
  // then run exactly in resolve (= deliverySeq) order. Resolving the caller's own promise
  // synchronously would put its continuation behind the others released in the same pass.
  let drainQueued = false;
  const scheduleDrain = () => {
    if (drainQueued) return;
    drainQueued = true;
    queueMicrotask(() => {
      drainQueued = false;
      drain();
    });
  };

  const hold = (seq: number, outcome: BindingOutcome, resolve: (o: BindingOutcome) => void) => {
    lastProgress = Date.now();
    if (stop || released.has(seq) || held.has(seq)) {
      // The run is ending, or a duplicate seq: never wait on it.
      resolve(outcome);
      return;
    }
    held.set(seq, { outcome, resolve });
    scheduleDrain();
  };

  const stopWith = (outcome: BindingOutcome): BindingOutcome => {
    if (!stop) {
      stop = outcome;
      flush(outcome.type === 'stop' && outcome.code === 'replay-mismatch' ? outcome : undefined);
    }
    return outcome;
  };

  const timer = setInterval(
    () => {
      if (stop || held.size === 0 || liveInFlight > 0 || Date.now() - lastProgress < stallMs) return;
      const missingIndex = journaledSeqs.get(nextSeq);
      if (missingIndex !== undefined && !calledIndexes.has(missingIndex)) {
        // The journal says call `missingIndex` was delivered before the held ones, yet the program
        // never made it: it diverged.
        emit('mismatch');
        stopWith({
          type: 'stop',
          code: 'replay-mismatch',
          message: `the program did not make call ${missingIndex} (${byIndex.get(missingIndex)?.binding ?? '?'}) that it made last time`,
        });
        return;
      }
      // A live outcome's seq never reached this execution (its answer was lost): skip the gap.
      emit('stall-skip');
      const lowest = Math.min(...held.keys());
      for (let s = nextSeq; s < lowest; s++) released.add(s);
      drain();
    },
    Math.max(10, Math.min(1000, Math.floor(stallMs / 4))),
  );
  timer.unref();

  // Not `async`: the promise returned is the one resolved on release, with no adoption ticks in
  // between, so the engine sees outcomes in release order.
  const handler: BindingHandler = (call) => {
    lastProgress = Date.now();
    calledIndexes.add(call.index);
    if (stop) return Promise.resolve(stop);
    const entry = byIndex.get(call.index);
    if (entry && (entry.binding !== call.binding || entry.argsJson !== call.argsJson)) {
      emit('mismatch');
      const what =
        entry.binding !== call.binding
          ? `calls ${call.binding}`
          : `passes other arguments to ${call.binding}`;
      return Promise.resolve(
        stopWith({
          type: 'stop',
          code: 'replay-mismatch',
          message: `call ${call.index} ${what}; last time it was ${entry.binding} with the journaled arguments`,
        }),
      );
    }
    if (entry?.state === 'done' && entry.outcome && entry.deliverySeq !== undefined) {
      emit('replayed');
      const { deliverySeq, outcome } = entry;
      return new Promise((resolve) => hold(deliverySeq, outcome, resolve));
    }
    emit('live');
    liveInFlight++;
    return new Promise((resolve) => {
      options.live(call).then(
        (answer) => {
          liveInFlight--;
          lastProgress = Date.now();
          if (answer.outcome.type === 'stop') resolve(stopWith(answer.outcome));
          else if (answer.deliverySeq === undefined) resolve(answer.outcome);
          else hold(answer.deliverySeq, answer.outcome, resolve);
        },
        (error: unknown) => {
          liveInFlight--;
          lastProgress = Date.now();
          resolve({
            type: 'error',
            name: 'AppCallFailed',
            message: `${call.binding}: the call could not be delivered`,
            details: { reason: `runner error: ${error instanceof Error ? error.message : String(error)}` },
          });
        },
      );
    });
  };

  return {
    handler,
    close: () => clearInterval(timer),
  };
}
