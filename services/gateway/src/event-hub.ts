/**
 * One subscriber connection per gateway on `islet:run-events`: wakes SSE readers and
 * `Prefer: wait` requests of this replica when any process appends to a run's event stream.
 * The message carries only the run id; listeners read the state from Redis, so a lost message
 * costs at most a poll interval, never correctness. It also listens on `islet:session-runs`, whose
 * messages are a session's index key (a new run there), for the session event stream.
 */
import { channels } from '@islet/core';
import type { Redis } from 'ioredis';

export function createEventHub(subscriber: Redis) {
  const listeners = new Map<string, Set<() => void>>();
  let started: Promise<unknown> | undefined;
  subscriber.on('message', (_channel: string, runId: string) => {
    for (const fn of listeners.get(runId) ?? []) fn();
  });
  return {
    start() {
      started ??= subscriber.subscribe(channels.runEvents, channels.sessionRuns);
      return started;
    },
    /** Calls `fn` whenever the run's events change (or, for a session index key, a run is added); returns the unsubscribe function. */
    listen(runId: string, fn: () => void): () => void {
      const set = listeners.get(runId) ?? new Set<() => void>();
      listeners.set(runId, set);
      set.add(fn);
      return () => {
        set.delete(fn);
        if (set.size === 0) listeners.delete(runId);
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
