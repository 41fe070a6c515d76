/**
 * One subscriber connection per gateway on `islet:run-events`: wakes SSE readers and
 * `Prefer: wait` requests of this replica when any process appends to a run's event stream
 * something a waiter acts on. The message carries the run id (and optionally, after a space, a
 * tag saying what changed: `end2` followed by the ended run's record — the fields its execution and
 * end wrote — and journal when its submit's caller waits, or `end` and the whole record from a
 * runner of a release before round 41, see run-store's TRANSITION); listeners read the state from
 * Redis (or take the pushed end), so a lost message costs at most a poll interval, never correctness. A run's
 * progress (`<id> running`, `<id> call`, `<id> log`: GOING_ON_TAGS, which no waiter acts on) is
 * published on `islet:run-progress` instead, and reaches the same listeners while an SSE stream
 * of this replica follows it (`followProgress`). It also listens on `islet:session-runs`, whose
 * messages are a session's index key (a new run there), for the session event stream, and on
 * `islet:tenant-feed` (a tenant id: its feed grew), whose listeners are keyed `feed:<tenant>`
 * (the tenant event stream). A run's start publishes on the progress channel whether or not a
 * stream listens; a create or end publishes on the other two only while a stream's marker says one
 * listens (`@islet/runs` stream-listeners-store.ts). Each is subscribed only while a listener of its
 * own is there (`followProgress`, `listenSession`, `listenFeed`, which resolve once the SUBSCRIBE has
 * landed): an idle channel costs Redis no write and this process no wake-up.
 */
import { channels } from '@islet/core';
import type { Redis } from 'ioredis';

/** `payload`: with tag `end2` (or `end`), the ended run's `[record, journal]` (JSON, see run-store's TRANSITION). */
type Listener = (tag?: string, payload?: string) => void;

/**
 * Tags of messages that say a run goes on (a binding call's event, an attempt starting or a run
 * resuming, a printed line): nothing a `Prefer: wait` answers changes, so waiters ignore them.
 */
export const GOING_ON_TAGS: ReadonlySet<string> = new Set(['call', 'running', 'log']);

/** Runs whose last message a waiter acts on are remembered for (`quietSince`): at least this many. */
export const RECENT_RUNS = 10_000;

/** A channel subscribed while it has listeners: `count` of them, `ready` its SUBSCRIBE's answer. */
interface OnDemand {
  channel: string;
  count: number;
  ready: Promise<void>;
  /** SUBSCRIBE commands sent so far (the tests read it). */
  subscribes: number;
}

/**
 * A copy of `slice` that holds none of the string it was cut from. V8 cuts a slice of 13 or more
 * characters as a view into its whole string, which it then keeps alive: a run id remembered as
 * cut from its end message held that message (the pushed end: record and journal, up to
 * END_PUSH_MAX_BYTES) for as long as the id was remembered, 20,000 runs at most (15,000 ends of
 * 8 KB: 123 MB; test/bench/README.md, round 29). Joined to one character and cut again, the text is
 * copied once into a string of its own length plus one, which alone the new view holds.
 */
export function ownCopy(slice: string): string {
  return ` ${slice}`.slice(1);
}

export function createEventHub(subscriber: Redis) {
  const listeners = new Map<string, Set<Listener>>();
  const onDemand = (channel: string): OnDemand => ({
    channel,
    count: 0,
    ready: Promise.resolve(),
    subscribes: 0,
  });
  const sessionChannel = onDemand(channels.sessionRuns);
  const feedChannel = onDemand(channels.tenantFeed);
  const progressChannel = onDemand(channels.runProgress);
  // Commands on one connection run in order, so an UNSUBSCRIBE followed by a SUBSCRIBE leaves the
  // channel subscribed; a failed SUBSCRIBE (the connection closing) leaves the listener to its
  // stream's polling, as a lost message would.
  const join = (c: OnDemand): Promise<void> => {
    if (c.count++ === 0) {
      c.subscribes++;
      c.ready = subscriber.subscribe(c.channel).then(
        () => undefined,
        () => undefined,
      );
    }
    return c.ready;
  };
  const leave = (c: OnDemand) => {
    if (--c.count === 0) void subscriber.unsubscribe(c.channel).catch(() => {});
  };
  let started: Promise<unknown> | undefined;
  // Runs a message arrived for lately (id → ms, GOING_ON_TAGS aside), so a waiter that starts
  // listening just after it wrote a run can tell whether it ended or waits without reading it.
  // Two generations of RECENT_RUNS each: the last RECENT_RUNS runs' messages at least are
  // remembered, and forgetting costs one swap per RECENT_RUNS. (Forgetting the oldest entry one
  // message at a time cost every message past the first RECENT_RUNS a walk over the deleted
  // entries a Map keeps at its front: ~12 µs a message at 10,000, test/bench/README.md round 28.)
  let recent = new Map<string, number>();
  let older = new Map<string, number>();
  // Since when the subscription has been up without a break (0: it is not).
  let upSince = 0;
  subscriber.on('message', (channel: string, message: string) => {
    if (channel === channels.tenantFeed) {
      for (const fn of listeners.get(`feed:${message}`) ?? []) fn();
      return;
    }
    if (channel === channels.sessionRuns) {
      for (const fn of listeners.get(message) ?? []) fn();
      return;
    }
    const progress = channel === channels.runProgress;
    if (!progress && channel !== channels.runEvents) return;
    // `<runId>`, `<runId> <tag>` or `<runId> <tag> <payload>`: a tag says what changed (`call`: a
    // binding call's event); only `end2` and `end` have a payload. The progress channel carries the same
    // format (a runner or gateway of an older version sends its progress on `islet:run-events`).
    const space = message.indexOf(' ');
    const id = space < 0 ? message : message.slice(0, space);
    const rest = space < 0 ? undefined : message.slice(space + 1);
    const cut = rest?.indexOf(' ') ?? -1;
    const tag = cut < 0 ? rest : rest?.slice(0, cut);
    const payload = cut < 0 ? undefined : rest?.slice(cut + 1);
    // A run's start (or a call) arriving before its submit's waiter listens must not cost that
    // waiter a read of the run: only messages a waiter acts on are remembered.
    if (!progress && (tag === undefined || !GOING_ON_TAGS.has(tag))) {
      if (recent.size >= RECENT_RUNS) {
        older = recent;
        recent = new Map();
      }
      recent.set(space < 0 ? id : ownCopy(id), Date.now());
    }
    for (const fn of listeners.get(id) ?? []) fn(tag, payload);
  });
  const down = () => {
    upSince = 0;
  };
  subscriber.on('close', down);
  subscriber.on('reconnecting', down);
  function listen(key: string, fn: Listener): () => void {
    const set = listeners.get(key) ?? new Set<Listener>();
    listeners.set(key, set);
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) listeners.delete(key);
    };
  }
  /** Holds `c` subscribed (with `key`'s listener, if any) until the returned function is called. */
  async function holdOnDemand(c: OnDemand, key?: string, fn?: () => void): Promise<() => void> {
    const ready = join(c);
    const off = key !== undefined && fn ? listen(key, () => fn()) : undefined;
    let left = false;
    const stop = () => {
      if (left) return;
      left = true;
      off?.();
      leave(c);
    };
    await ready;
    return stop;
  }
  let subscribed = false;
  subscriber.on('ready', () => {
    // ioredis resubscribes by itself after a reconnect; give its SUBSCRIBE time to land.
    if (subscribed) upSince = Date.now() + 1000;
  });
  return {
    start() {
      started ??= subscriber.subscribe(channels.runEvents).then((n) => {
        subscribed = true;
        upSince = Date.now();
        return n;
      });
      return started;
    },
    /**
     * Whether no message about `runId` that a waiter acts on (any but GOING_ON_TAGS) can have
     * arrived or been missed since `sinceMs` (this replica wrote the run then): subscribed without
     * a break since before, and none arrived.
     */
    quietSince(runId: string, sinceMs: number): boolean {
      return upSince > 0 && upSince <= sinceMs && (recent.get(runId) ?? older.get(runId) ?? 0) < sinceMs;
    },
    /** Calls `fn` whenever the run's events change; returns the unsubscribe function. */
    listen,
    /**
     * Calls `fn` whenever a run is added to the session index `indexKey` (`keys.sessionRuns`);
     * resolves to the unsubscribe function once `islet:session-runs` is subscribed, so a read made
     * after it misses no message.
     */
    async listenSession(indexKey: string, fn: () => void): Promise<() => void> {
      return holdOnDemand(sessionChannel, indexKey, fn);
    },
    /** As `listenSession`, for the tenant's feed (`islet:tenant-feed`). */
    async listenFeed(tenant: string, fn: () => void): Promise<() => void> {
      return holdOnDemand(feedChannel, `feed:${tenant}`, fn);
    },
    /**
     * Until the returned function is called, runs' progress (`islet:run-progress`) reaches the
     * `listen`ers too: an SSE stream holds it for its life. Resolves once the channel is
     * subscribed, so a read made after it misses no message.
     */
    async followProgress(): Promise<() => void> {
      return holdOnDemand(progressChannel);
    },
    /** How many listeners each on-demand channel has and how many SUBSCRIBEs it sent (tests). */
    onDemandState() {
      return {
        session: { listeners: sessionChannel.count, subscribes: sessionChannel.subscribes },
        feed: { listeners: feedChannel.count, subscribes: feedChannel.subscribes },
        progress: { listeners: progressChannel.count, subscribes: progressChannel.subscribes },
      };
    },
    /** Resolves after the next change or `timeoutMs`, whichever comes first. */
    nextChange(runId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          off();
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        const off = this.listen(runId, done);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
    close() {
      listeners.clear();
    },
  };
}

export type EventHub = ReturnType<typeof createEventHub>;
