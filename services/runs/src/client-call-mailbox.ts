/**
 * A `client` call's mailbox: the gateway holding the call opens it and waits; the caller's answer
 * may arrive at any replica, which delivers it. Both halves of the protocol live here.
 *
 * Keys (run slot): a pending marker (value: the attempt) that exactly one answer takes, and a list
 * the answer is pushed to. A delivery publishes `<runId> <index>` on `islet:client-call-answers`;
 * every waiter of a gateway is woken through that gateway's one subscriber connection and pops its
 * list on the shared command connection, so waiting calls hold no connection of their own. A lost
 * message costs at most one poll interval: each waiter also looks on its own every POLL_MS, and
 * then checks that its run has not ended.
 */
import { channels, keys, type Sealer } from '@islet/core';
import { type BindingOutcome, isFinalStatus } from '@islet/protocol';
import type { Redis } from 'ioredis';

/** How often a waiter looks without a wake-up (and checks its run), ms. */
const POLL_MS = 2000;
/** How long a delivered answer waits for its waiter, s. */
const ANSWER_TTL_SECONDS = 600;

interface ClientCallMailboxDeps {
  redis: Redis;
  /** A connection in subscriber mode, shared with the gateway's other channels. */
  subscriber: Redis;
  sealer: Pick<Sealer, 'seal' | 'open'>;
  /** How long a call waits for its answer, ms. */
  timeoutMs: number;
}

type Delivery = 'accepted' | 'not-pending';

const member = (runId: string, index: number) => `${runId} ${index}`;

export function createClientCallMailbox(deps: ClientCallMailboxDeps) {
  const { redis, subscriber, sealer, timeoutMs } = deps;
  const wakers = new Map<string, Set<() => void>>();
  let subscribed: Promise<unknown> | undefined;

  const onMessage = (channel: string, message: string) => {
    if (channel !== channels.clientCallAnswers) return;
    for (const wake of wakers.get(message) ?? []) wake();
  };

  function listen(): Promise<unknown> {
    if (!subscribed) {
      subscriber.on('message', onMessage);
      subscribed = subscriber.subscribe(channels.clientCallAnswers);
    }
    return subscribed;
  }

  async function take(runId: string, index: number): Promise<BindingOutcome | null> {
    const sealed = await redis.lpop(keys.clientCallResult(runId, index));
    return sealed === null ? null : (JSON.parse(sealer.open(sealed)) as BindingOutcome);
  }

  async function runEnded(runId: string): Promise<boolean> {
    const status = await redis.hget(keys.run(runId), 'status');
    return status === null || isFinalStatus(status);
  }

  return {
    /** The call now waits for an answer (`attempt`: the execution that asked). */
    async open(runId: string, index: number, attempt: number): Promise<void> {
      const ttl = Math.ceil(timeoutMs / 1000) + 60;
      await redis.set(keys.clientCallPending(runId, index), String(attempt), 'EX', ttl);
    },

    /**
     * The call's answer, or null when none came in time or the run ended meanwhile (the call is
     * then no longer pending). A runner that went away does not stop the wait: the answer still
     * gets journaled, and the run's next execution replays it instead of an unknown outcome.
     */
    async wait(runId: string, index: number): Promise<BindingOutcome | null> {
      await listen();
      const key = member(runId, index);
      const set = wakers.get(key) ?? new Set<() => void>();
      wakers.set(key, set);
      const deadline = Date.now() + timeoutMs;
      let wake: () => void = () => {};
      let timer: NodeJS.Timeout | undefined;
      try {
        while (Date.now() < deadline) {
          // Listen before looking, so an answer delivered in between still wakes this waiter.
          let woken = false;
          const woke = new Promise<void>((resolve) => {
            wake = () => {
              woken = true;
              resolve();
            };
            set.add(wake);
          });
          const got = await take(runId, index);
          if (got) return got;
          await Promise.race([
            woke,
            new Promise<void>((resolve) => {
              timer = setTimeout(resolve, Math.max(100, Math.min(POLL_MS, deadline - Date.now())));
            }),
          ]);
          clearTimeout(timer);
          set.delete(wake);
          if (!woken && (await runEnded(runId))) break;
        }
        const late = await take(runId, index);
        if (late) return late;
        await redis.del(keys.clientCallPending(runId, index));
        return null;
      } finally {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0) wakers.delete(key);
      }
    },

    /**
     * Delivers an answer, once: only the first answer to a pending call is accepted (checked in
     * full by the caller before this, so a refused answer leaves the call pending).
     */
    async deliver(runId: string, index: number, outcome: BindingOutcome): Promise<Delivery> {
      const pending = await redis.getdel(keys.clientCallPending(runId, index));
      if (pending === null) return 'not-pending';
      const key = keys.clientCallResult(runId, index);
      await redis
        .multi()
        .lpush(key, sealer.seal(JSON.stringify(outcome)))
        .expire(key, ANSWER_TTL_SECONDS)
        .exec();
      await redis.publish(channels.clientCallAnswers, member(runId, index));
      return 'accepted';
    },

    /** Stops listening (the subscriber connection is its owner's to close). */
    close(): void {
      subscriber.off('message', onMessage);
      if (subscribed) void subscriber.unsubscribe(channels.clientCallAnswers).catch(() => {});
      subscribed = undefined;
    },
  };
}

export type ClientCallMailbox = ReturnType<typeof createClientCallMailbox>;
