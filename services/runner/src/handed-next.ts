/**
 * The pause of a fetch answered "later" (slot-gate.ts `whenFetchable`: no slot free, one reserved),
 * ended as soon as a completion's next job is handed to BullMQ's loop.
 *
 * BullMQ's loop fetches one job at a time and starts the jobs it holds only once that fetch
 * answers. A completion that started its worker's next job reserves the ended run's slot for it
 * (`SlotGate.keepFor`) and wakes the loop's waiting fetch, which answers "no job" so the loop
 * starts that job; but the job reaches the loop only when its run's processJob returns (~0.1 ms
 * later), so the fetch first pauses. The pause was one turn of the event loop (`setImmediate`),
 * and a turn of a loaded runner's loop holds every other slot's I/O: 1.0–1.4 ms a run at 16
 * clients, a third of a slot idle on average with its next run started in Redis and waiting
 * (test/bench/README.md, round 34 `slot-idle`). Now it ends when the next job is handed (the
 * processJob returns it), or at that turn at the latest: never longer than before, and never a
 * loop of promises only (a job already handed ends it at once only `QUICK_MAX` times in a row).
 */

/** Pauses in a row ended at once by a job already handed before one waits for a turn again. */
const QUICK_MAX = 8;

export class HandedNext {
  /** Tokens whose processJob returned its next job to BullMQ's loop, not yet begun there. */
  private readonly handed = new Set<string>();
  private waiters: (() => void)[] = [];
  private quickInRow = 0;
  /** Pauses ended by a handed job rather than the turn (tests read it: a count, never a time). */
  endedByHand = 0;

  /** `token`'s processJob returns a next job to BullMQ's loop (its completion's, already fetched). */
  hand(token: string): void {
    this.handed.add(token);
    const woken = this.waiters;
    this.waiters = [];
    for (const w of woken) w();
  }

  /** A processJob began under `token`: a job handed under it has reached the loop. */
  begun(token: string): void {
    this.handed.delete(token);
  }

  /** The "later" fetch's pause: until a next job is handed, one turn of the event loop at most. */
  pause(): Promise<void> {
    if (this.handed.size > 0 && this.quickInRow < QUICK_MAX) {
      this.quickInRow++;
      this.endedByHand++;
      return Promise.resolve();
    }
    this.quickInRow = 0;
    return new Promise<void>((resolve) => {
      let done = false;
      const end = (byHand: boolean) => {
        if (done) return;
        done = true;
        if (byHand) this.endedByHand++;
        else this.waiters = this.waiters.filter((w) => w !== wake);
        clearImmediate(turn);
        resolve();
      };
      const wake = () => end(true);
      const turn = setImmediate(() => end(false));
      this.waiters.push(wake);
    });
  }
}
