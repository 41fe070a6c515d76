/**
 * BullMQ `QueueEvents` per mode for a waiter of jobs (the skills service): each blocks on its own
 * connection (XREAD), so each gets a duplicate of the gateway's, created on first use and closed
 * with the set.
 */
import { QUEUE_PREFIX, runQueueName, type SandboxMode } from '@islet/protocol';
import { QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';

export interface JobEvents {
  eventsFor(mode: SandboxMode): QueueEvents;
  /** Resolves once the mode's events are subscribed (a job added after it is seen ending). */
  ready(mode: SandboxMode): Promise<void>;
  close(): Promise<void>;
}

export function createJobEventsStore(redis: Redis, onError: (err: Error, mode: SandboxMode) => void) {
  return {
    /** A set of per-mode `QueueEvents`, owned by the caller (close it). */
    open(): JobEvents {
      const events = new Map<SandboxMode, QueueEvents>();
      const connections: Redis[] = [];
      const handle: JobEvents = {
        async ready(mode) {
          await handle.eventsFor(mode).waitUntilReady();
        },
        eventsFor(mode) {
          let qe = events.get(mode);
          if (!qe) {
            const connection = redis.duplicate();
            connections.push(connection);
            qe = new QueueEvents(runQueueName(mode), { connection, prefix: QUEUE_PREFIX });
            qe.on('error', (err) => onError(err, mode));
            events.set(mode, qe);
          }
          return qe;
        },
        async close() {
          await Promise.all([...events.values()].map((qe) => qe.close().catch(() => undefined)));
          events.clear();
          for (const c of connections.splice(0)) c.disconnect();
        },
      };
      return handle;
    },
  };
}

export type JobEventsStore = ReturnType<typeof createJobEventsStore>;
