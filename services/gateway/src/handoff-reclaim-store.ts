/**
 * The gateway's watch on the jobs its adds handed to idle workers (handoff-add-store.ts): a worker
 * killed while registered idle (SIGKILL, an OOM kill) leaves its registration standing until its
 * expiry (~6 s), and the next add may hand it a job. Before round 45 (`crash-handoff`) that job
 * stayed active under the dead worker's token until BullMQ's stalled check took it back: its 30 s
 * lock, then up to two 15 s checks, its run `Running` meanwhile. A live worker blocked in its pop
 * takes a handed job in the add's own Redis turn, so the answer is still on the worker's hand-off
 * key `HAND_OFF_RECLAIM_MS` later only when no one took it: the watch then takes it back
 * (`@islet/runs` reclaimHandedScript: the answer off the key and the job to the head of the wait
 * list, in one script), and a live worker fetches it. Whoever removes the answer (the worker's pop,
 * its take-back, its close, or this) owns the job, so it never runs twice.
 *
 * The add reports where it handed (the worker's key) and under which token; the watch keeps the
 * latest hand-off of each key (a worker registers again only once it took the previous one), and
 * one timer looks at those `HAND_OFF_RECLAIM_MS` old: under a steady stream of hand-offs a key's
 * entry keeps being renewed, so a look costs one script call a worker after its last hand-off, not
 * one a run. Nothing stored: a gateway that restarts forgets its entries (the stalled check remains).
 */
import { reclaimHandedScript } from '@islet/runs';
import type { Queue } from 'bullmq';
import { moveJobFromActiveToWait } from 'bullmq/dist/esm/scripts/moveJobFromActiveToWait-9.js';
import type { Redis } from 'ioredis';

const RECLAIM_HANDED = reclaimHandedScript(moveJobFromActiveToWait.content);

/**
 * How long an answer may wait on a worker's hand-off key before the add's gateway takes its job
 * back, ms: far above a live worker's pick-up (the same Redis turn as the add; a worker between a
 * pop that brought none and its take-back sends that at once), and the whole cost of a crash to the
 * run handed to the dead worker (with the live worker's fetch behind it). Kept at 1 s in round 47
 * (`live-check-on`, test/bench/README.md): with the liveness check on (the default) a SIGKILLed
 * runner's registration took no submit in 16 of 16 tries (6b60376a: 15 of 16 handed to it, then
 * taken back), so the delay prices only what the check cannot see (a runner lost without its
 * connections closing, or its blocking one alone); and a live worker's answer did wait on its key
 * for its take-back's round trip, up to 216 ms at load 16–21 (takeback-window.ts): a shorter delay
 * would take jobs back from live workers under load (no loss, but a false count and warning).
 */
export const HAND_OFF_RECLAIM_MS = 1_000;

/** What a look found for one hand-off. */
export interface Reclaimed {
  handOff: string;
  token: string;
  /** The job taken back (its BullMQ answer `moved`: 0 or more when it went to the wait list). */
  jobId?: string;
  moved?: number;
}

export class HandedWatch {
  /** Hand-offs taken back (tests and the log read it). */
  reclaimed = 0;
  /** The latest hand-off of each worker's key: its token and when it was made (ms). */
  private readonly handed = new Map<string, { token: string; at: number }>();
  private timer: NodeJS.Timeout | undefined;
  private readonly queue: Queue;
  private readonly afterMs: number;
  private readonly onReclaimed: (r: Reclaimed) => void;

  constructor(queue: Queue, afterMs = HAND_OFF_RECLAIM_MS, onReclaimed: (r: Reclaimed) => void = () => {}) {
    this.queue = queue;
    this.afterMs = afterMs;
    this.onReclaimed = onReclaimed;
  }

  /** An add handed its job to the worker of `handOff` under `token` (on the submit's path: a Map set). */
  note(handOff: string, token: string): void {
    this.handed.set(handOff, { token, at: Date.now() });
    if (this.timer === undefined) this.arm(this.afterMs);
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.look().catch((err) => this.queue.emit('error', err as Error));
    }, ms);
    // A gateway's exit never waits for it: its entries die with it (the stalled check remains).
    this.timer.unref();
  }

  /** Takes back every hand-off `afterMs` old still on its key; the timer again for the younger ones. */
  async look(now = Date.now()): Promise<Reclaimed[]> {
    const due: [string, string][] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const [handOff, h] of this.handed) {
      if (now - h.at >= this.afterMs) {
        due.push([handOff, h.token]);
        this.handed.delete(handOff);
      } else next = Math.min(next, h.at + this.afterMs - now);
    }
    if (next !== Number.POSITIVE_INFINITY && this.timer === undefined) this.arm(next);
    const out: Reclaimed[] = [];
    if (due.length === 0 || (this.queue as unknown as { closing?: unknown }).closing) return out;
    const client = (await this.queue.client) as unknown as Redis;
    const k = this.queue.keys;
    const keys = [
      k.active,
      k.wait,
      k.stalled,
      k.paused,
      k.meta,
      k.limiter,
      k.prioritized,
      k.marker,
      k.events,
    ];
    for (const [handOff, token] of due) {
      const reply = await RECLAIM_HANDED.run(client, [handOff, ...(keys as string[])], [token, k[''] ?? '']);
      if (!Array.isArray(reply)) continue;
      const r: Reclaimed = { handOff, token };
      if (typeof reply[1] === 'string') r.jobId = reply[1];
      r.moved = Number(reply[2]);
      this.reclaimed++;
      this.onReclaimed(r);
      out.push(r);
    }
    return out;
  }

  /** Entries not looked at yet (tests read it). */
  get size(): number {
    return this.handed.size;
  }

  /** Stops the timer (the queue closes): the entries are dropped. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.handed.clear();
  }
}
