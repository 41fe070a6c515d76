/**
 * Readers of both forms of what `ISLET_WRITE_FORMAT=2` writes leaner (run-store-types.ts
 * `WriteFormat`; test/bench/README.md, round 40 `format-two`), on real Redis, whatever this
 * process writes: the pending list's fold (includes/index-fold.lua) reads a create entry whose `m`
 * is an object without the fields the entry carries and without `n`, and an end entry without
 * `u`, `x`, `h`; the record's reader (run-reads.ts `fromHash`, `fromFields`) reads an absent
 * `clockMs` as `createdAt`. Entries and records of each form are written here as the bytes each
 * writer stores, the old ones as afaaca7 writes them, and every read compared.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { healthHour } from './health-buckets.ts';
import { createRunIndex, foldPendingEnds } from './run-index.ts';
import { USAGE_RETENTION_SECONDS, usageDay } from './run-index-writes.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const DAY_MS = 86_400_000;
const RETENTION_MS = 7 * DAY_MS;

interface Run {
  id: string;
  createdAt: number;
  endedAt: number;
  session: string;
  principal?: string;
  kind?: string;
  status?: string;
}

const sealed = new Map<string, string>();
/** The run's sealed description, one text a run (both tenants' entries carry the same bytes). */
function description(id: string): string {
  let d = sealed.get(id);
  if (d === undefined) {
    d = sealer.seal(`Return "${id}" é`);
    sealed.set(id, d);
  }
  return d;
}

function summary(r: Run) {
  return {
    id: r.id,
    status: 'Running',
    description: description(r.id),
    sessionId: r.session,
    ...(r.principal ? { principal: r.principal } : {}),
    style: 'run_code',
    mode: 'read-only',
    createdAt: r.createdAt,
  };
}

/** A create entry as afaaca7's includes/index-create.lua writes it. */
function oldCreate(_tenant: string, r: Run): string {
  const s = summary(r);
  return JSON.stringify({
    t: 'c',
    i: r.id,
    a: String(r.createdAt),
    m: JSON.stringify(s),
    s: r.session,
    p: r.principal ?? '',
    o: 0,
    n: String(r.createdAt),
    r: String(RETENTION_MS),
  });
}

/**
 * The same create as format 2 writes it: `m` an object without id, session, principal, createdAt;
 * no `n`; no `o` for a session not found owned (round 43 `format-43`: the fold reads only `o == 1`).
 */
function newCreate(_tenant: string, r: Run): string {
  const { id: _i, sessionId: _s, principal: _p, createdAt: _a, ...m } = summary(r);
  return JSON.stringify({
    t: 'c',
    i: r.id,
    a: String(r.createdAt),
    s: r.session,
    p: r.principal ?? '',
    r: String(RETENTION_MS),
    m,
  });
}

/** An end entry as afaaca7's includes/finish-tenant.lua writes it (usage day, its expiry, health hour named). */
function oldEnd(tenant: string, r: Run): string {
  return JSON.stringify({
    i: r.id,
    s: r.status ?? 'Completed',
    e: String(r.endedAt),
    k: r.kind ?? 'none',
    o: 2,
    u: keys.usageDay(tenant, usageDay(r.endedAt)),
    x: String((Math.floor(r.endedAt / DAY_MS) + 1) * 86_400 + USAGE_RETENTION_SECONDS),
    h: keys.healthHour(tenant, healthHour(r.endedAt)),
  });
}

/** The same end as format 2 writes it: no `u`, `x`, `h`. */
function newEnd(_tenant: string, r: Run): string {
  return JSON.stringify({
    i: r.id,
    s: r.status ?? 'Completed',
    e: String(r.endedAt),
    k: r.kind ?? 'none',
    o: 2,
  });
}

/** What a tenant's index, usage and health hold after its pending list is folded, tenant names left out. */
async function indexOf(redis: Redis, tenant: string, ends: number[]) {
  await foldPendingEnds(redis, tenant);
  const index = createRunIndex(redis, sealer);
  const sums = await redis.hgetall(keys.indexRunSummaries(tenant));
  const parsed = Object.fromEntries(Object.entries(sums).map(([id, raw]) => [id, JSON.parse(raw)]));
  const usage: Record<string, unknown> = {};
  const health: Record<string, unknown> = {};
  for (const at of ends) {
    const day = keys.usageDay(tenant, usageDay(at));
    usage[usageDay(at)] = { fields: await redis.hgetall(day), expireAt: await redis.call('EXPIRETIME', day) };
    const hour = keys.healthHour(tenant, healthHour(at));
    health[healthHour(at)] = { fields: await redis.hgetall(hour), ttlSet: Number(await redis.ttl(hour)) > 0 };
  }
  return {
    summaries: parsed,
    runs: await redis.zrange(keys.indexRuns(tenant), 0, -1, 'WITHSCORES'),
    ended: await redis.zrange(keys.indexRunsEnded(tenant), 0, -1, 'WITHSCORES'),
    sessions: await redis.zrange(keys.indexSessions(tenant), 0, -1, 'WITHSCORES'),
    stats: await redis.hgetall(keys.indexSessionStats(tenant)),
    listed: (await index.listRuns(tenant, { limit: 50 })).items,
    usage,
    health,
    pending: await redis.llen(keys.indexPending(tenant)),
  };
}

const now = Date.now();
// Ends on days whose dates the fold's Lua must name right: a leap day, a year's last ms, a
// century's March 1st (2100 is no leap year), and today.
const RUNS: Run[] = [
  { id: 'r1', createdAt: now - 5000, endedAt: now, session: 's/1', principal: 'key-a' },
  {
    id: 'r2',
    createdAt: Date.UTC(2028, 1, 29, 12),
    endedAt: Date.UTC(2028, 1, 29, 23, 59, 59, 999),
    session: 's1',
  },
  {
    id: 'r3',
    createdAt: Date.UTC(2027, 11, 31, 23),
    endedAt: Date.UTC(2027, 11, 31, 23, 59, 59, 999),
    session: '',
  },
  {
    id: 'r4',
    createdAt: Date.UTC(2100, 1, 28, 23),
    endedAt: Date.UTC(2100, 2, 1, 0, 0, 0, 1),
    session: 's2',
    principal: 'key-b',
    status: 'Failed',
    kind: 'timeout',
  },
  // created, never ended
  { id: 'r5', createdAt: now - 10, endedAt: 0, session: 's2', principal: 'key-b' },
  // A later run of a session whose first had no principal, not found owned (`o` 0, or absent in
  // format 2): the fold gives the session its principal.
  { id: 'r6', createdAt: Date.UTC(2028, 1, 29, 13), endedAt: 0, session: 's1', principal: 'key-c' },
];

async function writeAll(redis: Redis, tenant: string, create: typeof oldCreate, end: typeof oldEnd) {
  for (const r of RUNS) await redis.rpush(keys.indexPending(tenant), create(tenant, r));
  for (const r of RUNS) if (r.endedAt) await redis.rpush(keys.indexPending(tenant), end(tenant, r));
}

function withoutTenant<T>(x: T, tenant: string): T {
  return JSON.parse(JSON.stringify(x).replaceAll(`{t:${tenant}}`, '{t}')) as T;
}

describe('format 2 readers: the pending list fold', () => {
  it("folds format 2's create and end entries into exactly what format 1's give (summaries, sessions, usage days and their expiry, health hours)", () =>
    withRedis(async (redis) => {
      await writeAll(redis, 'fa', oldCreate, oldEnd);
      await writeAll(redis, 'fb', newCreate, newEnd);
      const ends = RUNS.filter((r) => r.endedAt).map((r) => r.endedAt);
      const a = withoutTenant(await indexOf(redis, 'fa', ends), 'fa');
      const b = withoutTenant(await indexOf(redis, 'fb', ends), 'fb');
      expect(b).toEqual(a);
      // and it is what was meant, not two equal mistakes
      expect(a.pending).toBe(0);
      expect(a.stats['s1\nprincipal']).toBe('key-c');
      expect(a.stats['s1\ntotal']).toBe('2');
      expect(a.summaries.r4).toMatchObject({
        status: 'Failed',
        kind: 'timeout',
        principal: 'key-b',
        sessionId: 's2',
      });
      expect(a.summaries.r5).toEqual({
        id: 'r5',
        status: 'Running',
        description: description('r5'),
        sessionId: 's2',
        principal: 'key-b',
        style: 'run_code',
        mode: 'read-only',
        createdAt: RUNS[4]!.createdAt,
      });
      expect(Object.keys(b.usage).sort()).toEqual(
        [usageDay(now), '2028-02-29', '2027-12-31', '2100-03-01'].sort(),
      );
      for (const r of RUNS.filter((x) => x.endedAt)) {
        const day = (b.usage as Record<string, { fields: Record<string, string>; expireAt: number }>)[
          usageDay(r.endedAt)
        ]!;
        expect(day.fields[`runs:${r.status ?? 'Completed'}`]).toBe('1');
        expect(day.expireAt).toBe((Math.floor(r.endedAt / DAY_MS) + 1) * 86_400 + USAGE_RETENTION_SECONDS);
        const hour = (b.health as Record<string, { fields: Record<string, string>; ttlSet: boolean }>)[
          healthHour(r.endedAt)
        ]!;
        expect(Object.keys(hour.fields).length).toBeGreaterThan(0);
        expect(hour.ttlSet).toBe(true);
      }
    }));

  it('folds a list mixing both forms, each run created in one and ended in the other', () =>
    withRedis(async (redis) => {
      await writeAll(redis, 'ma', oldCreate, oldEnd);
      for (const r of RUNS)
        await redis.rpush(keys.indexPending('mb'), (r.id < 'r3' ? oldCreate : newCreate)('mb', r));
      for (const r of RUNS)
        if (r.endedAt) await redis.rpush(keys.indexPending('mb'), (r.id < 'r3' ? newEnd : oldEnd)('mb', r));
      const ends = RUNS.filter((r) => r.endedAt).map((r) => r.endedAt);
      expect(withoutTenant(await indexOf(redis, 'mb', ends), 'mb')).toEqual(
        withoutTenant(await indexOf(redis, 'ma', ends), 'ma'),
      );
    }));

  it('a create entry without `n` prunes from its `a` (runs ended more than the retention before it)', () =>
    withRedis(async (redis) => {
      const old: Run = { id: 'old', createdAt: now - 9 * DAY_MS, endedAt: now - 8 * DAY_MS, session: 'so' };
      await redis.rpush(keys.indexPending('pr'), oldCreate('pr', old), oldEnd('pr', old));
      await foldPendingEnds(redis, 'pr');
      expect(await redis.hexists(keys.indexRunSummaries('pr'), 'old')).toBe(1);
      const fresh: Run = { id: 'fresh', createdAt: now, endedAt: 0, session: 'so' };
      await redis.rpush(keys.indexPending('pr'), newCreate('pr', fresh));
      await foldPendingEnds(redis, 'pr');
      expect(await redis.hexists(keys.indexRunSummaries('pr'), 'old')).toBe(0);
      expect(await redis.zscore(keys.indexRunsEnded('pr'), 'old')).toBeNull();
      expect(await redis.hkeys(keys.indexRunSummaries('pr'))).toEqual(['fresh']);
    }));
});

describe("format 2 readers: the record's clock", () => {
  it("a record without `clockMs` reads its `createdAt` as the clock (get, the start answer's fields), one with it its own", () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const createdAt = now - 1234;
      await runs.create(runFixture('c1', { createdAt }));
      await runs.create(runFixture('c2', { createdAt, clockMs: createdAt + 7 }));
      await redis.hdel(keys.run('c1'), 'clockMs');
      expect((await runs.get('c1'))?.clockMs).toBe(createdAt);
      expect((await runs.get('c2'))?.clockMs).toBe(createdAt + 7);
      const flat = (await redis.call('HGETALL', keys.run('c1'))) as string[];
      expect(flat).not.toContain('clockMs');
      expect(runs.fromFields(flat)?.clockMs).toBe(createdAt);
    }));
});
