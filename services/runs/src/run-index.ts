/**
 * The tenant's index of runs and sessions, what `GET /v1/runs` and `GET /v1/sessions` list from.
 * Written by the run store in the same script calls that create and end a run (its tenant half,
 * run-index-scripts.ts); an end is appended to the tenant's pending list there and applied with
 * many others by a fold (includes/index-fold.lua), which every read below runs first, so a read
 * never lags the records; every key is in the tenant's `{t:<tenant>}` slot. A summary holds what a list shows and filters on — no code, no logs; the description is
 * sealed like the record's — so a page costs one script call and no record read, except for the
 * live status of runs not yet ended (their records change without the tenant's slot). What the
 * create and end scripts are called with (the index's keys, the usage day) is in run-index-writes.ts.
 *
 * Retention: an ended run's summary leaves the index once its record has expired
 * (ISLET_RUN_RETENTION_SECONDS after its end), a few at a time by each later create.
 */

import { keys, type Sealer } from '@islet/core';
import { isFinalStatus, type RunStatus } from '@islet/protocol';
import type { Redis } from 'ioredis';
import {
  FINISH_TENANT,
  FOLD_AT,
  FOLD_INDEX,
  FOLD_MAX,
  INDEX_CREATE,
  LIST_RUNS,
  LIST_SESSIONS,
} from './run-index-scripts.ts';
import {
  finishTenantCall,
  indexCreateArgs,
  type RunUsage,
  runIndexKeys,
  usageDay,
} from './run-index-writes.ts';
import { DEFAULT_WRITE_FORMAT, type WriteFormat } from './run-store-types.ts';

export type RunListStyle = 'run_code' | 'code-mode' | 'skill';

/** A run as the index keeps it (JSON in the summaries hash; `description` sealed there). */
export interface RunSummary {
  id: string;
  status: RunStatus;
  description: string;
  sessionId: string;
  principal?: string;
  style: RunListStyle;
  mode: string;
  createdAt: number;
  /** When it ended (absent while it runs). */
  endedAt?: number;
  /** The run_code failure kind of an ended run (`none` when it completed). */
  kind?: string;
}

interface SessionSummary {
  sessionId: string;
  principal?: string;
  createdAt: number;
  lastActivity: number;
  /** `active`: not yet ended; the rest by final status. Runs past retention are not counted. */
  runs: { total: number; active: number; Completed: number; Failed: number; Cancelled: number };
}

interface RunListQuery {
  limit: number;
  cursor?: string;
  statuses?: RunStatus[];
  sessionId?: string;
  principal?: string;
  /** createdAt ≥ since, ms */
  since?: number;
  /** createdAt < until, ms */
  until?: number;
  /** Substring of the description (case-insensitive). */
  q?: string;
  style?: RunListStyle;
}

/**
 * Applies the tenant's pending run ends (includes/index-fold.lua) before a read of its index,
 * usage or health, so the read sees every end written before it: what each reader does first.
 * `atLeast`: only while the list holds that many (an end's caller, `foldAfterEnd`).
 * Returns how many it applied (0: nothing was pending).
 */
export async function foldPendingEnds(redis: Redis, tenant: string, atLeast?: number): Promise<number> {
  const k = runIndexKeys(tenant);
  const args = atLeast === undefined ? [] : [atLeast];
  let total = 0;
  for (;;) {
    const n = Number(
      await FOLD_INDEX.run(redis, [k.pending, k.summaries, k.ended, k.sessions, k.sessionStats], args),
    );
    total += n;
    if (n < FOLD_MAX) return total;
  }
}

/**
 * The fold an end's answer said is due (includes/finish-tenant.lua: the list reached FOLD_AT),
 * sent by the end's caller once it has that answer, so the fold's ~1 ms of Redis CPU and its
 * ~14 KB AOF write are not in the end's script, ahead of the waiter's wake-up (test/bench/README.md,
 * round 39 `fold-off`). Not awaited, and a failure is dropped: the entries stay in the list, whose
 * next end says the fold is due again, and every reader folds first. Two such folds (two ends
 * past FOLD_AT before either was sent) are safe: the second finds the list shorter than FOLD_AT
 * (fold-index-5's ARGV[1]) and writes nothing.
 */
export function foldAfterEnd(redis: Redis, tenant: string): void {
  foldPendingEnds(redis, tenant, FOLD_AT).catch(() => undefined);
}

/** A cursor is opaque to clients: `<createdAt>:<id>` of the last item, base64url. */
function encodeCursor(score: number | string, id: string): string {
  return Buffer.from(`${score}:${id}`).toString('base64url');
}

/** The position a cursor names, or null when it is not one this index made. */
export function decodeCursor(cursor: string): { score: string; id: string } | null {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return null;
  const m = /^(\d{1,16}):([\s\S]{1,200})$/.exec(Buffer.from(cursor, 'base64url').toString());
  return m ? { score: m[1]!, id: m[2]! } : null;
}

/** How many index entries one list request may look at (a filter matching little stops there). */
const LIST_SCAN_BUDGET = 20_000;
const SCAN_PER_CALL = 2_000;

export function createRunIndex(
  redis: Redis,
  sealer: Sealer,
  /** `writeFormat` (ISLET_WRITE_FORMAT): the form of a skill's end entry (run-index-writes.ts). */
  options: { retentionSeconds?: number; writeFormat?: WriteFormat } = {},
) {
  const retentionSeconds = options.retentionSeconds ?? 7 * 24 * 3600;
  const writeFormat = options.writeFormat ?? DEFAULT_WRITE_FORMAT;
  const open = (s: RunSummary): RunSummary => ({
    ...s,
    description: s.description ? sealer.open(s.description) : '',
  });

  /** The statuses of runs not yet ended, read from their records (each in its own slot). */
  async function liveStatuses(ids: string[]): Promise<Map<string, RunStatus>> {
    const rows = await Promise.all(ids.map((id) => redis.hget(keys.run(id), 'status')));
    const out = new Map<string, RunStatus>();
    ids.forEach((id, i) => {
      const status = rows[i];
      if (status) out.set(id, status as RunStatus);
    });
    return out;
  }

  const k0 = (tenant: string) => {
    const k = runIndexKeys(tenant);
    return [k.pending, k.summaries, k.ended, k.sessions, k.sessionStats, k.feed];
  };

  return {
    /** Lists a skill (style `skill`) from its start; it has no record, so its summary is all there is. */
    async skillStarted(tenant: string, entry: Omit<RunSummary, 'endedAt' | 'kind' | 'style' | 'status'>) {
      const args = indexCreateArgs(
        tenant,
        { ...entry, description: sealer.seal(entry.description), style: 'skill', status: 'Running' },
        retentionSeconds,
      );
      const session = entry.sessionId ? [keys.sessionRuns(tenant, entry.sessionId)] : [];
      await INDEX_CREATE.run(redis, [...k0(tenant), ...session], args);
    },

    /** Ends a skill's summary and counts it in the day's usage; its in-flight reservation goes too. */
    async skillEnded(
      tenant: string,
      id: string,
      end: { status: 'Completed' | 'Failed'; kind?: string; usage?: RunUsage },
    ) {
      const call = finishTenantCall(
        tenant,
        keys.skillsInFlight(tenant),
        { id, ...end, endedAt: Date.now() },
        writeFormat,
      );
      if ((await FINISH_TENANT.run(redis, call.keys, call.args)) === 2) foldAfterEnd(redis, tenant);
    },

    /** Feed entries after `afterId` (exclusive; stream ids), oldest first. */
    async readFeed(tenant: string, afterId: string, count = 200) {
      const rows = await redis.xrange(keys.tenantFeed(tenant), `(${afterId}`, '+', 'COUNT', count);
      return rows.map(([id, f]) => {
        const m: Record<string, string> = {};
        for (let i = 0; i + 1 < f.length; i += 2) m[f[i]!] = f[i + 1]!;
        return { id, type: m.type ?? '', ref: m.id ?? '' };
      });
    },

    /** The feed's newest entry id ('0-0' when empty): where a stream that resumes nothing starts. */
    async feedHead(tenant: string): Promise<string> {
      const last = await redis.xrevrange(keys.tenantFeed(tenant), '+', '-', 'COUNT', 1);
      return last[0]?.[0] ?? '0-0';
    },

    /** Summaries of these runs (unsealed; live status for runs not yet ended); missing ones left out. */
    async summaries(tenant: string, ids: string[]): Promise<RunSummary[]> {
      if (ids.length === 0) return [];
      await foldPendingEnds(redis, tenant);
      const raws = await redis.hmget(keys.indexRunSummaries(tenant), ...ids);
      const found = raws.flatMap((raw) => (raw ? [JSON.parse(raw) as RunSummary] : []));
      const unended = found.filter((s) => !isFinalStatus(s.status)).map((s) => s.id);
      const live = unended.length ? await liveStatuses(unended) : new Map<string, RunStatus>();
      return found.map((s) => open({ ...s, status: live.get(s.id) ?? s.status }));
    },

    /**
     * Usage per day from `from` to `to` (UTC days, inclusive): counters as the runs' ends added
     * them (`runs:<status>`, `wallMs`, `cpuMs`, `bindingCalls`, `outputBytes`, `skillRuns`).
     */
    async usage(tenant: string, from: string, to: string) {
      const days: string[] = [];
      for (let t = Date.parse(from); t <= Date.parse(to) && days.length < 400; t += 86_400_000)
        days.push(usageDay(t));
      await foldPendingEnds(redis, tenant);
      const rows = await Promise.all(days.map((day) => redis.hgetall(keys.usageDay(tenant, day))));
      return days.map((day, i) => {
        const h = rows[i] ?? {};
        const runs: Record<string, number> = {};
        for (const [f, v] of Object.entries(h)) if (f.startsWith('runs:')) runs[f.slice(5)] = Number(v);
        const n = (f: string) => Number(h[f] ?? 0);
        return {
          day,
          runs,
          wallMs: n('wallMs'),
          cpuMs: n('cpuMs'),
          bindingCalls: n('bindingCalls'),
          outputBytes: n('outputBytes'),
          skillRuns: n('skillRuns'),
        };
      });
    },

    /**
     * A page of the tenant's runs, newest first. `nextCursor` is null once nothing older matches;
     * a page may hold fewer than `limit` items and still have a cursor when the scan budget ran out.
     */
    async listRuns(tenant: string, query: RunListQuery) {
      const k = runIndexKeys(tenant);
      const wanted = query.statuses?.length ? new Set<string>(query.statuses) : undefined;
      const wantsLive = !wanted || [...wanted].some((s) => !isFinalStatus(s));
      const needle = query.q?.toLowerCase();
      let position = query.cursor ? decodeCursor(query.cursor) : null;
      const items: RunSummary[] = [];
      let scanned = 0;
      let next: string | null = null;
      await foldPendingEnds(redis, tenant);
      while (items.length < query.limit && scanned < LIST_SCAN_BUDGET) {
        const [rows, after, count] = (await LIST_RUNS.run(
          redis,
          // A session's runs have their own index (the session's run list): scan that instead.
          [query.sessionId ? keys.sessionRuns(tenant, query.sessionId) : k.runs, k.summaries],
          [
            position?.score ?? '',
            position?.id ?? '',
            query.since ?? '',
            query.until ?? '',
            // A text search filters here, after unsealing: ask for a whole scan's worth at once.
            needle ? SCAN_PER_CALL : query.limit - items.length,
            SCAN_PER_CALL,
            query.sessionId ?? '',
            query.principal ?? '',
            query.style ?? '',
            wanted ? [...wanted].filter((s) => isFinalStatus(s)).join(',') : '*',
            wantsLive ? '1' : '0',
          ],
        )) as [string[], string, number];
        scanned += Number(count);
        let candidates = rows.map((raw) => JSON.parse(raw) as RunSummary);
        const unended = candidates.filter((s) => !isFinalStatus(s.status)).map((s) => s.id);
        const live = unended.length ? await liveStatuses(unended) : new Map<string, RunStatus>();
        candidates = candidates.map((s) => {
          const status = live.get(s.id);
          return status && status !== s.status ? { ...s, status } : s;
        });
        let filledAt: RunSummary | undefined;
        for (const s of candidates) {
          if (wanted && !wanted.has(s.status)) continue;
          const summary = open(s);
          if (needle && !summary.description.toLowerCase().includes(needle)) continue;
          items.push(summary);
          if (items.length === query.limit) {
            filledAt = s;
            break;
          }
        }
        if (filledAt) {
          next = encodeCursor(filledAt.createdAt, filledAt.id);
          break;
        }
        if (!after) {
          next = null;
          break;
        }
        const cut = after.indexOf(':');
        position = { score: after.slice(0, cut), id: after.slice(cut + 1) };
        next = encodeCursor(position.score, position.id);
      }
      // A full page whose last item is the index's oldest match still gets a cursor: the next
      // page is then empty (finding out would cost another scan).
      return { items, nextCursor: next };
    },

    /** A page of the tenant's sessions, latest activity first. */
    async listSessions(
      tenant: string,
      query: { limit: number; cursor?: string; principal?: string; since?: number; until?: number },
    ) {
      const k = runIndexKeys(tenant);
      const position = query.cursor ? decodeCursor(query.cursor) : null;
      await foldPendingEnds(redis, tenant);
      const [rows, after] = (await LIST_SESSIONS.run(
        redis,
        [k.sessions, k.sessionStats],
        [
          position?.score ?? '',
          position?.id ?? '',
          query.since ?? '',
          query.until ?? '',
          query.limit,
          LIST_SCAN_BUDGET,
          query.principal ?? '',
        ],
      )) as [string[][], string];
      const items: SessionSummary[] = rows.map(([sessionId = '', last = '0', ...fields]) => {
        const f: Record<string, string> = {};
        for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
        const n = (name: string) => Math.max(0, Number(f[name] ?? 0));
        const total = n('total');
        const ended = n('Completed') + n('Failed') + n('Cancelled');
        return {
          sessionId,
          ...(f.principal ? { principal: f.principal } : {}),
          createdAt: Number(f.created ?? last),
          lastActivity: Number(last),
          runs: {
            total,
            active: Math.max(0, total - ended),
            Completed: n('Completed'),
            Failed: n('Failed'),
            Cancelled: n('Cancelled'),
          },
        };
      });
      const cut = after.indexOf(':');
      return {
        items,
        nextCursor: after ? encodeCursor(after.slice(0, cut), after.slice(cut + 1)) : null,
      };
    },
  };
}

export type RunIndex = ReturnType<typeof createRunIndex>;
