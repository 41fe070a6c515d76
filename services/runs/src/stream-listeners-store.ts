/**
 * Markers that say an events stream listens: to a tenant's feed (`GET /v1/events`) or to a
 * session's runs (`GET /v1/sessions/:id/events`). A create reads both inside its admission's MGET
 * (includes/admit-tenant.lua) and publishes on `islet:tenant-feed` / `islet:session-runs` only
 * when one is set, so runs nobody watches cost Redis no PUBLISH and no gateway a wake-up.
 *
 * Why no stream misses a run: a stream sets its marker, then subscribes, then reads (the feed's
 * backlog, the session's runs). A create that ran before that read is in it; one that ran after
 * saw the marker and published, with the channel already subscribed. The feed's end entry is left
 * unannounced for a run created while no tenant stream listened (its record's `quiet`,
 * includes/create-run.lua); `markFeed` answers the runs in flight, which a starting tenant stream
 * follows on their own channel (the end is always published there) before it reads anything, and
 * a run created after the marker announces its end as before.
 *
 * A marker expires unless refreshed (`REFRESH_MS` before its `TTL_MS` runs out), so a gateway
 * that dies leaves none behind; a marker that lapses while a stream still listens (the gateway
 * stalled past the expiry) costs that stream's runs their announcement only, which its re-check
 * every 2 s reads all the same.
 *
 * A run's starts publish their progress (`islet:run-progress`) only when a stream may follow it
 * (includes/begin-attempt.lua): its create saw a feed or session marker, or a stream marked its
 * record `followed` (`followRuns`) before subscribing and reading. The runs a tenant stream finds
 * in flight are marked by `markFeed`; a run's own stream and a session stream mark theirs.
 */

import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { loadScript } from './lua-scripts.ts';

const FOLLOW_RUN = loadScript('follow-run-1');

/** How long a marker lives without a refresh. */
const TTL_MS = 60_000;

/** How often a listening stream refreshes its marker. */
export const STREAM_LISTENER_REFRESH_MS = 20_000;

export function createStreamListenersStore(redis: Redis) {
  /** Marks runs' records `followed` (a missing record stays missing): their starts publish. */
  async function followRuns(ids: readonly string[]): Promise<void> {
    await Promise.all(ids.map((id) => FOLLOW_RUN.run(redis, [keys.run(id)], [])));
  }
  return {
    /**
     * Marks the tenant's feed as listened to; answers the tenant's runs in flight (not yet ended)
     * as the marker was set, in the same transaction.
     */
    async markFeed(tenant: string): Promise<string[]> {
      const replies = await redis
        .multi()
        .set(keys.tenantFeedListeners(tenant), '1', 'PX', TTL_MS)
        .zrange(keys.inFlight(tenant), 0, -1)
        .exec();
      const ids = replies?.[1]?.[1];
      if (replies?.some(([err]) => err) || !Array.isArray(ids)) throw new Error('feed listener mark failed');
      const runs = ids.map(String);
      await followRuns(runs);
      return runs;
    },
    followRuns,
    /** Refreshes the tenant feed's marker (a stream that marked it still listens). */
    async refreshFeed(tenant: string): Promise<void> {
      await redis.set(keys.tenantFeedListeners(tenant), '1', 'PX', TTL_MS);
    },
    /** Marks (or refreshes) a session's runs as listened to. */
    async markSession(tenant: string, session: string): Promise<void> {
      await redis.set(keys.sessionRunsListeners(tenant, session), '1', 'PX', TTL_MS);
    },
  };
}

export type StreamListenersStore = ReturnType<typeof createStreamListenersStore>;
