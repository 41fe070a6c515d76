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
import type { BindingCall, BindingHandler, BindingOutcome } from '@islet/engine';
import type { JournalEntry } from './types.ts';

export interface LiveOutcome {
  outcome: BindingOutcome;
  /** The journal's delivery number when the gateway journaled the outcome; absent for transport-level answers. */
  deliverySeq?: number;
}

export interface ReplayingHandlerOptions {
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

export interface ReplayingHandler {
  handler: BindingHandler;
  stats(): { replayed: number; live: number; mismatches: number; stallSkips: number };
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
  const counts = { replayed: 0, live: 0, mismatches: 0, stallSkips: 0 };
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

  const deliver = (seq: number, outcome: BindingOutcome): Promise<BindingOutcome> => {
    lastProgress = Date.now();
    if (stop) return Promise.resolve(outcome);
    if (released.has(seq) || held.has(seq)) return Promise.resolve(outcome); // a duplicate seq: never wait on it
    return new Promise((resolve) => {
      held.set(seq, { outcome, resolve });
      drain();
    });
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
        counts.mismatches++;
        emit('mismatch');
        stopWith({
          type: 'stop',
          code: 'replay-mismatch',
          message: `the program did not make call ${missingIndex} (${byIndex.get(missingIndex)?.binding ?? '?'}) that it made last time`,
        });
        return;
      }
      // A live outcome's seq never reached this execution (its answer was lost): skip the gap.
      counts.stallSkips++;
      emit('stall-skip');
      const lowest = Math.min(...held.keys());
      for (let s = nextSeq; s < lowest; s++) released.add(s);
      drain();
    },
    Math.max(10, Math.min(1000, Math.floor(stallMs / 4))),
  );
  timer.unref();

  const handler: BindingHandler = async (call) => {
    lastProgress = Date.now();
    calledIndexes.add(call.index);
    if (stop) return stop;
    const entry = byIndex.get(call.index);
    if (entry && (entry.binding !== call.binding || entry.argsJson !== call.argsJson)) {
      counts.mismatches++;
      emit('mismatch');
      const what =
        entry.binding !== call.binding
          ? `calls ${call.binding}`
          : `passes other arguments to ${call.binding}`;
      return stopWith({
        type: 'stop',
        code: 'replay-mismatch',
        message: `call ${call.index} ${what}; last time it was ${entry.binding} with the journaled arguments`,
      });
    }
    if (entry?.state === 'done' && entry.outcome && entry.deliverySeq !== undefined) {
      counts.replayed++;
      emit('replayed');
      return deliver(entry.deliverySeq, entry.outcome);
    }
    counts.live++;
    emit('live');
    liveInFlight++;
    let answer: LiveOutcome;
    try {
      answer = await options.live(call);
    } finally {
      liveInFlight--;
      lastProgress = Date.now();
    }
    if (answer.outcome.type === 'stop') return stopWith(answer.outcome);
    if (answer.deliverySeq === undefined) return answer.outcome;
    return deliver(answer.deliverySeq, answer.outcome);
  };

  return {
    handler,
    stats: () => ({ ...counts }),
    close: () => clearInterval(timer),
  };
}
