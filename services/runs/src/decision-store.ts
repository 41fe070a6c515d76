/**
 * Pending decisions. Each run's decisions live in one hash (`<prefix>decisions:{<runId>}`, field
 * = call index, -1 for a wider-access request) and change state in one Lua script on that key,
 * so an answer is taken exactly once whichever gateway receives it. Per-tenant and expiry
 * indexes are sorted sets in other slots (the tenant's `{t:<tenant>}`, one global key; see
 * @islet/core keys.ts), each updated by its own command after the script:
 * - an index entry left behind by a crash (settled, entry not removed) is harmless: readers
 *   re-check the hash, and the expiry sweep drops an entry whose decision is no longer pending;
 * - an entry missing (recorded, crash before the index writes) is re-added when the run asks
 *   again (its next execution replays to the same call: `request` re-indexes a pending one).
 * The request's arguments and program text are sealed.
 */
import { keys } from '@islet/core/keys';
import { pausedRunsKey, type SandboxMode } from '@islet/protocol';
import type { Redis } from 'ioredis';
import type {
  AnswerResult,
  DecisionAnswer,
  DecisionRecord,
  DecisionRequest,
  DecisionState,
  NewDecision,
} from './decision-types.ts';
import { journalKeys } from './keys.ts';
import { loadScript } from './lua-scripts.ts';
import { FEED_APPEND } from './run-index-scripts.ts';
import type { Sealer } from './types.ts';

interface DecisionStoreDeps {
  redis: Redis;
  sealer: Sealer;
  /** Prefix of every key. Default `islet:`. */
  keyPrefix?: string;
  /** A decision not answered within this time expires and its run ends. Default 86400000 (24 h). */
  expireAfterMs?: number;
  /**
   * The run's retention, seconds (ISLET_RUN_RETENTION_SECONDS). Default 604800 (7 days). A request
   * keeps the run's decisions for the decision's wait (`expireAfterMs`) plus this, so a pending one
   * never expires before it is answered or expired, whatever the two settings; an answer never
   * shortens that; an expiry (which ends the run) keeps them this long from then; the run's end
   * (its store's finish, round 48) sets this from the end.
   */
  ttlSeconds?: number;
  now?: () => number;
}

interface Stored {
  tenant: string;
  mode: SandboxMode;
  state: DecisionState;
  req: string;
  ans?: string;
}

const REQUEST = loadScript('request-decision-1');

const SETTLE = loadScript('settle-decision-2');

export function createDecisionStore(deps: DecisionStoreDeps) {
  const { redis, sealer } = deps;
  const prefix = deps.keyPrefix ?? 'islet:';
  const expireAfterMs = deps.expireAfterMs ?? 86_400_000;
  const ttlSeconds = deps.ttlSeconds ?? 604_800;
  // The request's expiry covers the longest a pending decision lives (its wait, until the expiry
  // sweep ends the run) and one retention after. The run's end sets one retention from itself
  // (round 48, includes/transition.lua: exact for a run answered early and ended soon); an end by
  // f63d2625 or earlier does not touch the hash, which then keeps this expiry.
  const requestTtlSeconds = ttlSeconds + Math.ceil(expireAfterMs / 1000);
  const now = deps.now ?? Date.now;
  const k = journalKeys(prefix);
  const runKey = k.decisions;
  const wakeKey = k.decisionAnswered;
  const tenantKey = k.tenantDecisions;
  const dueKey = k.decisionsDue();
  const member = (runId: string, index: number) => `${runId}\n${index}`;
  const parseMember = (m: string) => {
    const cut = m.lastIndexOf('\n');
    return { runId: m.slice(0, cut), index: Number(m.slice(cut + 1)) };
  };

  const decode = (runId: string, index: number, raw: string): DecisionRecord => {
    const s = JSON.parse(raw) as Stored;
    const record: DecisionRecord = {
      tenant: s.tenant,
      mode: s.mode,
      runId,
      index,
      state: s.state,
      request: JSON.parse(sealer.open(s.req)) as DecisionRequest,
    };
    if (s.ans) record.answer = JSON.parse(sealer.open(s.ans)) as DecisionAnswer & { at: number };
    return record;
  };

  const get = async (runId: string, index: number): Promise<DecisionRecord | undefined> => {
    const raw = await redis.hget(runKey(runId), String(index));
    return raw ? decode(runId, index, raw) : undefined;
  };

  const settle = async (
    tenant: string,
    runId: string,
    index: number,
    state: DecisionState,
    answer: (DecisionAnswer & { at: number }) | undefined,
  ): Promise<AnswerResult> => {
    const reply = (await SETTLE.run(
      redis,
      [runKey(runId), wakeKey(runId, index)],
      [String(index), tenant, state, answer ? sealer.seal(JSON.stringify(answer)) : '', ttlSeconds],
    )) as [string, string?, number?];
    if (reply[0] === 'not-found') return { ok: false, error: 'not-found' };
    if (reply[0] === 'conflict') return { ok: false, error: 'conflict', state: reply[1] as DecisionState };
    const decision = decode(runId, index, reply[1] ?? '');
    // Two slots: two commands, sent together.
    await Promise.all([
      redis.zrem(tenantKey(decision.tenant), member(runId, index)),
      redis.zrem(dueKey, member(runId, index)),
      // The tenant's live inbox (GET /v1/events) drops it everywhere.
      FEED_APPEND.run(
        redis,
        [keys.tenantFeed(decision.tenant)],
        ['decision', `${runId}:${index}`, decision.tenant],
      ),
    ]);
    return { ok: true, decision, stillPending: Number(reply[2] ?? 0) };
  };

  return {
    /**
     * Records a pending decision, or returns the one already recorded for (run, index): a replay
     * or a retried call never asks twice, and an answered decision stays answered.
     */
    async request(input: NewDecision): Promise<{ decision: DecisionRecord; created: boolean }> {
      const at = now();
      const request: DecisionRequest = input.escalation
        ? {
            capability: { action: 'sandbox.escalate', target: input.escalation.mode },
            toolCallId: input.toolCallId,
            code: { run: input.runId, index: input.index, code: input.code },
            justification: input.escalation.justification,
            approval: input.approval,
            requestedAt: at,
            expiresAt: at + expireAfterMs,
          }
        : {
            capability: {
              action: 'apps.call',
              target: `${input.call?.connectionId ?? ''}/${input.call?.tool ?? ''}`,
            },
            toolCallId: input.toolCallId,
            app: {
              id: input.call?.appId ?? input.call?.connectionId ?? '',
              callId: `${input.toolCallId}:${input.index}`,
              arguments: input.call?.arguments ?? null,
            },
            code: { run: input.runId, index: input.index, code: input.code },
            approval: input.approval,
            requestedAt: at,
            expiresAt: at + expireAfterMs,
          };
      const stored: Stored = {
        tenant: input.tenant,
        mode: input.mode,
        state: 'pending',
        req: sealer.seal(JSON.stringify(request)),
      };
      const reply = (await REQUEST.run(
        redis,
        [runKey(input.runId)],
        [String(input.index), JSON.stringify(stored), requestTtlSeconds],
      )) as [number, string];
      const decision = decode(input.runId, input.index, reply[1]);
      // Indexes in three slots (tenant, global, the queue's): one command each, sent together.
      // A pending decision asked again is re-indexed (NX: no-op when its entries exist), which
      // heals a crash between the script and these writes.
      if (reply[0] === 1 || decision.state === 'pending') {
        const m = member(input.runId, input.index);
        const nx = reply[0] === 1 ? [] : (['NX'] as const);
        await Promise.all([
          redis.zadd(tenantKey(decision.tenant), ...nx, decision.request.requestedAt, m),
          redis.zadd(dueKey, ...nx, decision.request.expiresAt, m),
          // A stopped run holds no slot while it waits: the operator counts it in its mode's set.
          input.approval === 'stop'
            ? redis.zadd(pausedRunsKey(input.mode), 'NX', decision.request.requestedAt, input.runId)
            : undefined,
          reply[0] === 1
            ? FEED_APPEND.run(
                redis,
                [keys.tenantFeed(decision.tenant)],
                ['decision', `${input.runId}:${input.index}`, decision.tenant],
              )
            : undefined,
        ]);
      }
      return { decision, created: reply[0] === 1 };
    },

    get,

    /** Every decision of a run (any state), by index. */
    async listRun(runId: string): Promise<DecisionRecord[]> {
      const all = await redis.hgetall(runKey(runId));
      return Object.entries(all)
        .map(([field, raw]) => decode(runId, Number(field), raw))
        .sort((a, b) => a.index - b.index);
    },

    /** The tenant's pending decisions, oldest first. Another tenant's are never read. */
    async listPending(tenant: string, limit = 500): Promise<DecisionRecord[]> {
      const members = await redis.zrange(tenantKey(tenant), 0, limit - 1);
      const out: DecisionRecord[] = [];
      for (const m of members) {
        const { runId, index } = parseMember(m);
        const d = await get(runId, index);
        if (d && d.tenant === tenant && d.state === 'pending') out.push(d);
      }
      return out;
    },

    /** Pending decisions of every tenant (the expiry index), for `islet_decisions_pending`. */
    async countAllPending(): Promise<number> {
      return redis.zcard(dueKey);
    },

    /** Number of pending decisions of a tenant (index size; may briefly over-count after a crash). */
    async countPending(tenant: string): Promise<number> {
      return redis.zcard(tenantKey(tenant));
    },

    /**
     * Answers a pending decision once. Another tenant's or an unknown decision → `not-found`
     * (existence does not leak); an answered or expired one → `conflict`. `stillPending` counts
     * the run's other pending decisions: at 0 a stopped run may be replayed.
     */
    async answer(
      tenant: string,
      runId: string,
      index: number,
      answer: DecisionAnswer,
    ): Promise<AnswerResult> {
      const clean: DecisionAnswer & { at: number } = { allow: answer.allow, by: answer.by, at: now() };
      if (answer.input !== undefined) clean.input = answer.input;
      if (answer.reason !== undefined && !answer.allow) clean.reason = answer.reason;
      return settle(tenant, runId, index, answer.allow ? 'allowed' : 'denied', clean);
    },

    /**
     * Waits for a decision to leave `pending` (hold-in-place). Uses a blocking pop on the
     * decision's wake-up list on a dedicated connection, re-checking the hash, so any gateway's
     * answer wakes any gateway's waiter. Undefined when `timeoutMs` passes or `signal` aborts.
     */
    async waitForAnswer(
      runId: string,
      index: number,
      options: { timeoutMs: number; signal?: AbortSignal },
    ): Promise<DecisionRecord | undefined> {
      const deadline = Date.now() + options.timeoutMs;
      const blocking = redis.duplicate();
      const onAbort = () => blocking.disconnect();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        for (;;) {
          const current = await get(runId, index);
          if (current?.state !== 'pending') return current;
          const left = deadline - Date.now();
          if (left <= 0 || options.signal?.aborted) return undefined;
          // BLPOP takes seconds; re-check at least every second so a missed wake-up costs little.
          try {
            await blocking.blpop(wakeKey(runId, index), Math.min(1, Math.max(0.05, left / 1000)));
          } catch (error) {
            if (options.signal?.aborted) return undefined;
            throw error;
          }
        }
      } finally {
        options.signal?.removeEventListener('abort', onAbort);
        blocking.disconnect();
      }
    },

    /**
     * Expires decisions whose time passed. Each is taken by one caller only (the settle script),
     * so gateways may all run this; the caller ends each returned run (Cancelled).
     */
    async expireDue(limit = 100): Promise<DecisionRecord[]> {
      const due = await redis.zrangebyscore(dueKey, '-inf', now(), 'LIMIT', 0, limit);
      const expired: DecisionRecord[] = [];
      for (const m of due) {
        const { runId, index } = parseMember(m);
        const res = await settle('', runId, index, 'expired', undefined);
        if (res.ok) expired.push(res.decision);
        else await redis.zrem(dueKey, m);
      }
      return expired;
    },

    /** Closes a run's pending decisions (it ended: cancelled, expired, failed); returns how many. */
    async closeRun(runId: string): Promise<number> {
      let closed = 0;
      const all = await redis.hgetall(runKey(runId));
      for (const [field, raw] of Object.entries(all)) {
        if ((JSON.parse(raw) as Stored).state !== 'pending') continue;
        const res = await settle('', runId, Number(field), 'expired', undefined);
        if (res.ok) closed++;
      }
      return closed;
    },

    /** The run stopped to wait (stop-and-decide): counted in its mode's paused-runs set. */
    async markPaused(runId: string, mode: SandboxMode): Promise<void> {
      await redis.zadd(pausedRunsKey(mode), now(), runId);
    },

    /** The run left the paused state (re-enqueued, ended). */
    async unmarkPaused(runId: string, mode: SandboxMode): Promise<void> {
      await redis.zrem(pausedRunsKey(mode), runId);
    },

    /** Up to `limit` runs of the mode paused since before `cutoffMs`, longest paused first. */
    async pausedBefore(mode: SandboxMode, cutoffMs: number, limit: number): Promise<string[]> {
      return redis.zrangebyscore(pausedRunsKey(mode), '-inf', cutoffMs, 'LIMIT', 0, limit);
    },
  };
}

export type DecisionStore = ReturnType<typeof createDecisionStore>;

/**
 * The decision as `GET /v1/decisions` shows it: the document's request shape, with the run's
 * status-relevant facts beside it.
 */
export function decisionView(d: DecisionRecord): DecisionRequest & { id: string; state: DecisionState } {
  return { id: `${d.runId}:${d.index}`, state: d.state, ...d.request };
}
