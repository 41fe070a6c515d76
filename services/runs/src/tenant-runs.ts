/**
 * The tenant's side of its runs, all in the tenant's slot: its session indexes read and pruned,
 * the in-flight count and the skills counted in it, and Idempotency-Keys. Composed into the run
 * store (run-store.ts).
 */

import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { IDEM_RELEASE, IDEM_TAKE_OVER, IN_FLIGHT_COUNT, RESERVE_SKILL } from './run-store-scripts.ts';

export function createTenantRuns(redis: Redis) {
  /**
   * Takes an Idempotency-Key (`key`, its Redis key) over from a first request that stored no run,
   * for the retry that read `expected` from it (IDEM_TAKE_OVER says when it may). True: the key now
   * holds `replacement`, and the first request can no longer be admitted.
   */
  async function takeOverIdempotency(
    tenant: string,
    key: string,
    expected: string,
    replacement: string,
    ttlSeconds: number,
    firstRunId: string,
  ): Promise<boolean> {
    const taken = await IDEM_TAKE_OVER.run(
      redis,
      [key, keys.inFlight(tenant)],
      [expected, replacement, ttlSeconds, firstRunId],
    );
    return taken === 1;
  }

  /** Drops an Idempotency-Key whose request failed, while it still holds `value` (that request's). */
  async function releaseIdempotency(key: string, value: string): Promise<void> {
    await IDEM_RELEASE.run(redis, [key], [value]);
  }

  /** Runs not yet ended plus skills queued or running: what the in-flight quota counts. */
  async function inFlightCount(tenant: string): Promise<number> {
    const res = await IN_FLIGHT_COUNT.run(
      redis,
      [keys.inFlight(tenant), keys.skillsInFlight(tenant)],
      [Date.now()],
    );
    return Number(res ?? 0);
  }

  return {
    /** Run ids of a session, oldest first, from `cursor` (exclusive createdAt:id). */
    /**
     * Run ids of a session, oldest first. The cursor is `<createdAt>:<id>` of the last item seen, so
     * pages stay stable while runs are added or pruned.
     */
    async listSession(tenant: string, session: string, cursor: string | undefined, limit: number) {
      const key = keys.sessionRuns(tenant, session);
      const m = cursor ? /^(\d+):(.+)$/.exec(cursor) : null;
      const min = m ? m[1]! : '-inf';
      const rows = await redis.zrangebyscore(key, min, '+inf', 'WITHSCORES', 'LIMIT', 0, limit + 100);
      const items: Array<{ id: string; score: string }> = [];
      for (let i = 0; i + 1 < rows.length; i += 2) {
        const id = rows[i]!;
        const score = rows[i + 1]!;
        // Same-score members come in id order: skip up to and including the cursor's id.
        if (m && score === m[1] && id <= m[2]!) continue;
        items.push({ id, score });
      }
      const page = items.slice(0, limit);
      const last = page.at(-1);
      return {
        ids: page.map((x) => x.id),
        next: items.length > limit && last ? `${last.score}:${last.id}` : null,
      };
    },

    /**
     * The session's index from `since` (a score, exclusive of nothing: `-inf` for all) on, oldest
     * first, or with `latest` its newest `latest` entries, oldest first.
     */
    async sessionEntries(
      tenant: string,
      session: string,
      from: { since: string } | { latest: number },
    ): Promise<Array<{ id: string; score: string }>> {
      const key = keys.sessionRuns(tenant, session);
      const rows =
        'latest' in from
          ? await redis.zrevrange(key, 0, from.latest - 1, 'WITHSCORES')
          : await redis.zrangebyscore(key, from.since, '+inf', 'WITHSCORES');
      const out: Array<{ id: string; score: string }> = [];
      for (let i = 0; i + 1 < rows.length; i += 2) out.push({ id: rows[i]!, score: rows[i + 1]! });
      return 'latest' in from ? out.reverse() : out;
    },

    /** Drops a run from its session's index (its record is past retention). */
    async forgetSessionRun(tenant: string, session: string, id: string): Promise<void> {
      await redis.zrem(keys.sessionRuns(tenant, session), id);
    },

    inFlightCount,

    /**
     * Stores `value` under an Idempotency-Key (`key`, its Redis key) unless it holds one: true when
     * this request took it; false with what the key holds.
     */
    async claimIdempotency(
      key: string,
      value: string,
      ttlSeconds: number,
    ): Promise<{ taken: true } | { taken: false; held: string | null }> {
      if ((await redis.set(key, value, 'EX', ttlSeconds, 'NX')) === 'OK') return { taken: true };
      return { taken: false, held: await redis.get(key) };
    },

    takeOverIdempotency,

    releaseIdempotency,

    /**
     * Counts a skill in the tenant's in-flight quota until `releaseSkill` (or `ttlMs`, if its
     * gateway dies). One script on the tenant's slot counts runs and skills and reserves, so a
     * parallel burst of skills lets exactly the free places through. False, and nothing kept, when
     * the tenant is at `limit`.
     */
    async reserveSkill(tenant: string, skillId: string, ttlMs: number, limit: number): Promise<boolean> {
      const res = await RESERVE_SKILL.run(
        redis,
        [keys.skillsInFlight(tenant), keys.inFlight(tenant)],
        [skillId, Date.now(), ttlMs, limit, Math.max(ttlMs * 2, 3_600_000)],
      );
      return res === 1;
    },

    async releaseSkill(tenant: string, skillId: string): Promise<void> {
      await redis.zrem(keys.skillsInFlight(tenant), skillId);
    },
  };
}
