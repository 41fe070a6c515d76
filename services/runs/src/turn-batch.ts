/**
 * Gathers the writes made for one key (a run's journal) during one turn of the event loop and
 * hands them to `send` together, at the turn's check phase (`setImmediate`): the calls of a
 * program's `Promise.all` are claimed, and the outcomes the Apps answered in one turn are
 * journaled, in one script call each instead of one per call. A lone write waits only for the
 * rest of its turn; a loaded process gathers more per turn, which is when it matters.
 *
 * `send` answers one result per item, in order; when it throws, every item of the group gets the
 * error (each caller sees it as its own write's failure, as before).
 */
interface TurnBatchOptions {
  /** Most items in one group; a full group is sent at once. */
  maxItems: number;
  /** Most bytes (as the caller counts them) in one group; an item that would pass it starts a new group. */
  maxBytes: number;
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
      } else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flushAll());
      }
    });
  }

  #flushAll(): void {
    this.#scheduled = false;
    const groups = this.#groups;
    this.#groups = new Map();
    for (const [key, group] of groups) this.#flush(key, group);
  }

  #flush(key: string, group: Group<T, R>): void {
    const { items, waiters } = group;
    let sent: Promise<R[]>;
    try {
      sent = this.#send(key, items);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (results) => {
        for (const [i, w] of waiters.entries()) {
          if (i < results.length) w.resolve(results[i] as R);
          else w.reject(new Error(`turn batch: ${results.length} results for ${items.length} items`));
        }
      },
      (error: unknown) => {
        for (const w of waiters) w.reject(error);
      },
    );
  }
}
