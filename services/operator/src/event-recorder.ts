/**
 * Events about RunnerPools, recorded the way client-go's EventRecorder does: a repeat of the same
 * (object, type, reason, message) increments `count` and `lastTimestamp` of the Event already
 * written (a PATCH) instead of creating another; more than AGGREGATE_MAX_DISTINCT different messages
 * of one (object, type, reason) within AGGREGATE_WINDOW_MS collapse into one
 * "(combined from similar events): …" Event, as client-go's EventAggregator does. Best effort: an
 * Event that cannot be written never fails a reconcile.
 */
import { randomBytes } from 'node:crypto';
import { BoundedMap } from '@islet/core';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { KubeClient } from './kube.ts';
import { MANAGED_BY, type RunnerPool } from './runner-pool.ts';

/** client-go's defaults (tools/record/events_cache.go). */
export const AGGREGATE_MAX_DISTINCT = 10;
const AGGREGATE_WINDOW_MS = 10 * 60_000;
const CACHE_MAX = 4096;

interface RecordedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

interface EventRecorderDeps {
  kube: Pick<KubeClient, 'createEvent' | 'patchEventCount'>;
  namespace: string;
  identity: string;
  now: () => number;
  warn: (obj: object, msg: string) => void;
}

interface Written {
  name: string;
  count: number;
  firstTimestamp: Date;
}

interface Similar {
  messages: Set<string>;
  sinceMs: number;
}

export class EventRecorder {
  private readonly written = new BoundedMap<string, Written>(CACHE_MAX);
  private readonly similar = new Map<string, Similar>();

  private readonly d: EventRecorderDeps;

  constructor(deps: EventRecorderDeps) {
    this.d = deps;
  }

  async record(pool: RunnerPool, e: RecordedEvent): Promise<void> {
    const nowMs = this.d.now();
    const name = pool.metadata.name ?? '';
    const objectKey = `${pool.metadata.uid ?? name}\u0000${e.type}\u0000${e.reason}`;
    const { message, combined } = this.aggregate(objectKey, e.message.slice(0, 1024), nowMs);
    // All combined messages of one (object, type, reason) share one Event, as in client-go.
    const key = combined ? `${objectKey}\u0000(combined)` : `${objectKey}\u0000${message}`;
    const now = new Date(nowMs);
    const seen = this.written.get(key);
    try {
      if (seen) {
        const count = seen.count + 1;
        await this.d.kube.patchEventCount(this.d.namespace, seen.name, {
          count,
          lastTimestamp: now,
          message,
        });
        seen.count = count;
        return;
      }
    } catch (err) {
      // Gone (TTL, someone deleted it): write a new one below.
      this.written.delete(key);
      this.d.warn({ pool: name, reason: e.reason, err: String(err) }, 'event not updated');
    }
    const event: CoreV1Event = {
      metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace: this.d.namespace },
      involvedObject: {
        apiVersion: pool.apiVersion,
        kind: pool.kind,
        name,
        namespace: this.d.namespace,
        uid: pool.metadata.uid,
        resourceVersion: pool.metadata.resourceVersion,
      },
      type: e.type,
      reason: e.reason,
      message,
      source: { component: MANAGED_BY },
      reportingComponent: MANAGED_BY,
      reportingInstance: this.d.identity,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    try {
      await this.d.kube.createEvent(this.d.namespace, event);
      this.written.set(key, { name: event.metadata.name ?? '', count: 1, firstTimestamp: now });
    } catch (err) {
      this.d.warn({ pool: name, reason: e.reason, err: String(err) }, 'event not recorded');
    }
  }

  /** Forgets a deleted pool's Events (its Events go with it). */
  forget(uid: string | undefined): void {
    if (!uid) return;
    for (const k of [...this.written.keys()]) if (k.startsWith(`${uid}\u0000`)) this.written.delete(k);
    for (const k of this.similar.keys()) if (k.startsWith(`${uid}\u0000`)) this.similar.delete(k);
  }

  private aggregate(
    objectKey: string,
    message: string,
    nowMs: number,
  ): { message: string; combined: boolean } {
    let s = this.similar.get(objectKey);
    if (!s || nowMs - s.sinceMs > AGGREGATE_WINDOW_MS) {
      s = { messages: new Set(), sinceMs: nowMs };
      this.similar.set(objectKey, s);
    }
    s.messages.add(message);
    return s.messages.size > AGGREGATE_MAX_DISTINCT
      ? { message: `(combined from similar events): ${message}`, combined: true }
      : { message, combined: false };
  }
}
