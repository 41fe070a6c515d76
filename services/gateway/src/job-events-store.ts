/**
 * BullMQ `QueueEvents` per mode for a waiter of jobs (the skills service): each blocks on its own
 * connection (XREAD), so each gets a duplicate of the gateway's, created on first use and closed
 * with the set.
 *
 * `ready` starts a mode's events from the stream's last entry as read before it resolves, not from
 * BullMQ's default `$`: QueueEvents sends its first XREAD only after its connection is ready and a
 * CLIENT SETNAME has answered, so with `$` a job added once `ready` resolved and finished before
 * that XREAD reached Redis (after the waiter's own isFinished check) was never seen ending — its
 * request waited out its whole time and answered "unavailable" for a skill that had run (a Redis
 * Cluster e2e timed out on it under load, round 47).
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

/** BullMQ's events stream of a mode's queue (its QueueKeys' `events`). */
export function eventsKey(mode: SandboxMode): string {
  return `${QUEUE_PREFIX}:${runQueueName(mode)}:events`;
}

export function createJobEventsStore(redis: Redis, onError: (err: Error, mode: SandboxMode) => void) {
  return {
    /** A set of per-mode `QueueEvents`, owned by the caller (close it). */
    open(): JobEvents {
      const events = new Map<SandboxMode, QueueEvents>();
      const starting = new Map<SandboxMode, Promise<QueueEvents>>();
      const connections: Redis[] = [];
      let closed = false;
      /** `lastEventId`: where its XREAD starts (BullMQ's `$` when not given). */
      const make = (mode: SandboxMode, lastEventId?: string): QueueEvents => {
        const connection = redis.duplicate();
        connections.push(connection);
        const qe = new QueueEvents(runQueueName(mode), {
          connection,
          prefix: QUEUE_PREFIX,
          ...(lastEventId === undefined ? {} : { lastEventId }),
        });
        qe.on('error', (err) => onError(err, mode));
        events.set(mode, qe);
        return qe;
      };
      /** The mode's events from the stream's last entry now ('0-0': an empty stream, all of it). */
      const start = async (mode: SandboxMode): Promise<QueueEvents> => {
        const last = await redis.xrevrange(eventsKey(mode), '+', '-', 'COUNT', 1);
        // Closed meanwhile: no QueueEvents (and connection) made after close() that nothing closes.
        if (closed) throw new Error('the job events are closed');
        return events.get(mode) ?? make(mode, last[0]?.[0] ?? '0-0');
      };
      const handle: JobEvents = {
        async ready(mode) {
          let qe = events.get(mode);
          if (!qe) {
            let started = starting.get(mode);
            if (!started) {
              started = start(mode).finally(() => starting.delete(mode));
              starting.set(mode, started);
            }
            qe = await started;
          }
          await qe.waitUntilReady();
        },
        eventsFor(mode) {
          return events.get(mode) ?? make(mode);
        },
        async close() {
          closed = true;
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
