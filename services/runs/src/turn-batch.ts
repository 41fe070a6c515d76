/**
 * Gathers the writes made for one key (a run's journal) during one turn of the event loop and
 * hands them to `send` together, at the turn's check phase (`setImmediate`): the calls of a
 * program's `Promise.all` are claimed, and the outcomes the Apps answered in one turn are
 * journaled, in one script call each instead of one per call. A lone write waits only for the
 * rest of its turn; a loaded process gathers more per turn, which is when it matters.
 *
 * `send` answers one result per item, in order; when it throws, every item of the group gets the
 * error (each caller sees it as its own write's failure, as before).
 *
 * With `oneInFlight`, a key's next group is held while its last one is unanswered: the items that
 * come meanwhile (a run's outcomes the gateway finishes over several turns) go as one group at the
 * check phase of the turn its answer came in, one script and one fsync, not one each (round 44
 * `outcome-group`). A key with nothing in flight sends at its turn's end, as without it; a full
 * group is still sent at once. Groups are sent in the order their items came, so a key's writes
 * keep their order either way.
 */
interface TurnBatchOptions {
  /** Most items in one group; a full group is sent at once. */
  maxItems: number;
  /** Most bytes (as the caller counts them) in one group; an item that would pass it starts a new group. */
  maxBytes: number;
  /** Hold a key's next group while one of its groups is unanswered (see above). */
  oneInFlight?: boolean;
}

/** What a batch has done, for tests and probes: counts only. */
export interface TurnBatchCounts {
  /** Groups handed to `send`. */
  groups: number;
  /** Items handed to `send`. */
  items: number;
  /** Items that were held because their key had a group unanswered (`oneInFlight`). */
  held: number;
}

interface Waiter<R> {
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

interface Group<T, R> {
  items: T[];
  waiters: Waiter<R>[];
  bytes: number;
}

export class TurnBatch<T, R> {
  readonly #send: (key: string, items: T[]) => Promise<R[]>;
  readonly #options: TurnBatchOptions;
  #groups = new Map<string, Group<T, R>>();
  #scheduled = false;
  /** Unanswered groups by key (`oneInFlight` only). */
  readonly #inFlight = new Map<string, number>();
  readonly counts: TurnBatchCounts = { groups: 0, items: 0, held: 0 };

  constructor(send: (key: string, items: T[]) => Promise<R[]>, options: TurnBatchOptions) {
    this.#send = send;
    this.#options = options;
  }

  add(key: string, item: T, bytes: number): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let group = this.#groups.get(key);
      if (group && group.items.length > 0 && group.bytes + bytes > this.#options.maxBytes) {
        this.#groups.delete(key);
        this.#flush(key, group);
        group = undefined;
      }
      if (!group) {
        group = { items: [], waiters: [], bytes: 0 };
        this.#groups.set(key, group);
      }
      group.items.push(item);
      group.waiters.push({ resolve, reject });
      group.bytes += bytes;
      if (group.items.length >= this.#options.maxItems) {
        this.#groups.delete(key);
        this.#flush(key, group);
      } else if (this.#inFlight.has(key)) {
        // Sent when the key's unanswered group is answered (#answered schedules it).
        this.counts.held++;
      } else this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#flushAll());
  }

  #flushAll(): void {
    this.#scheduled = false;
    const groups = this.#groups;
    this.#groups = new Map();
    for (const [key, group] of groups) {
      // A held group stays open for more items until its key's group in flight is answered.
      if (this.#inFlight.has(key)) this.#groups.set(key, group);
      else this.#flush(key, group);
    }
  }

  /** A key's group was answered (or failed): its held group, if any, goes at this turn's end. */
  #answered(key: string): void {
    const left = (this.#inFlight.get(key) ?? 1) - 1;
    if (left > 0) {
      this.#inFlight.set(key, left);
      return;
    }
    this.#inFlight.delete(key);
    if (this.#groups.has(key)) this.#schedule();
  }

  #flush(key: string, group: Group<T, R>): void {
    const { items, waiters } = group;
    this.counts.groups++;
    this.counts.items += items.length;
    const tracked = this.#options.oneInFlight === true;
    if (tracked) this.#inFlight.set(key, (this.#inFlight.get(key) ?? 0) + 1);
    let sent: Promise<R[]>;
    try {
      sent = this.#send(key, items);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (results) => {
        if (tracked) this.#answered(key);
        for (const [i, w] of waiters.entries()) {
          if (i < results.length) w.resolve(results[i] as R);
          else w.reject(new Error(`turn batch: ${results.length} results for ${items.length} items`));
        }
      },
      (error: unknown) => {
        if (tracked) this.#answered(key);
        for (const w of waiters) w.reject(error);
      },
    );
  }
}
