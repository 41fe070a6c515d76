/**
 * Fair share of a pool's slots between tenants (BullMQ OSS has no groups, so the runner enforces
 * it when it takes a job). Work-conserving: a tenant may use every free slot while no other tenant
 * has work waiting in the pool; under contention it holds at most
 * `max(1, floor(live pool slots × ISLET_TENANT_POOL_SHARE))` (and ISLET_TENANT_MAX_EXECUTING_PER_POOL
 * when set, always), and freed slots go round robin to the tenants with deferred jobs, those under
 * their share first. Live pool slots = the sum over runners that registered in the last lease period.
 *
 * Before a run or a skill executes, the runner takes a lease on a slot (Lua, atomic across
 * runners; on one server a run's lease is taken by its attempt's start script and given back by
 * its end script, see `runLease`). "Waiting work" is known in two places, both in the pool's hash slot: the gateway counts
 * each enqueue per tenant (`poolQueued`, @islet/runs pool-demand.ts) and the acquire counts the
 * pick-up, so a quiet tenant's job queued behind another's flood is seen before a runner reaches
 * it; and the tenants with deferred jobs (`poolWaiting`). A job that may not run now goes back to
 * the queue as a delayed job (no attempt spent, the run record untouched: it still has not started,
 * and the operator counts delayed jobs as demand) and into its tenant's deferred set; the flooding
 * tenant's jobs are moved aside this way, so the runners reach the quiet tenant's job at once. When
 * a slot frees, the release picks the next tenant in turn, leases the slot to its oldest deferred
 * job (a reservation: that job is granted when a runner takes it) and promotes it. Every deferred
 * job also checks again after ISLET_TENANT_SHARE_RECHECK_MS in case that promotion was lost (a
 * runner killed in between). A tenant's own order is kept: a job granted while its tenant has
 * older deferred jobs gives its slot to the oldest of them and waits behind it — under contention.
 * A tenant alone (no other tenant's work waits) is never deferred for a pool seen full (the job is
 * in its runner's own free slot; the count can only be full of reservations not taken yet or
 * leases given back late), and a job of it that finds an older deferred one takes a slot for that
 * one and one for itself: the older job is never passed over for a slot, and one deferral does not
 * make the next pick-up's (the chain of test/bench/README.md, round 20).
 *
 * The queued counts drift only when a queued job leaves without a pick-up and without the
 * gateway taking its count back (cancels and refused submits do), or when on Cluster a count
 * arrives after its job was taken; a drifted count only makes the pool
 * behave as under contention (the share), and the heartbeat clears the counts whenever the mode's
 * queue has nothing waiting.
 *
 * With a share of the whole pool and no cap, fair share is off: no lease is taken or released.
 *
 * Leases carry an expiry in Redis time and are renewed by a heartbeat every third of
 * ISLET_TENANT_SHARE_LEASE_MS; a SIGKILLed runner's leases (and its registered slots) lapse after
 * one lease period. A job taken over after a stall keeps its lease (the member is the job id).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type IsletConfig, keys, type Logger, slotFreeCheck } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import type { SandboxMode } from '@islet/protocol';
import {
  acquireCall,
  type GivenUp,
  LEASE_ACQUIRE,
  LEASE_RELEASE,
  type LeaseAnswer,
  type LeaseTerms,
  leaseAnswerOf,
  type RunLease,
  releaseCall,
} from '@islet/runs';
import type { Redis } from 'ioredis';
import { OneSlotMap } from './one-slot-map.ts';
import { OneSlotSet } from './one-slot-set.ts';
import { type LeaseBook, RunLeaseOf } from './run-lease-of.ts';

const NOW_MS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// Taking and giving back a lease: @islet/runs' lease scripts (lua/includes/lease-acquire.lua,
// lease-release.lua), which a run's attempt start and end also carry on one server.

// The tenant's leases key kept for two lease periods past its holders' last heartbeat, never
// shortened: a key holding a reservation lives a day (lua/includes/reserved-place.lua `keepPlace`),
// so that its lapse is seen and its job put back in its place.
const KEEP_LEASES = `
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) * 2 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
end
`;

// KEYS: tenant leases, pool busy. ARGV: job id, lease ms. Renews only a lease that still exists.
const RENEW = new LuaScript(`${NOW_MS}
local exp = now + tonumber(ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], exp, ARGV[1])
  redis.call('ZADD', KEYS[2], exp, ARGV[1])
end
${KEEP_LEASES}`);

// --- parking (run-slot.ts) ---
// KEYS: tenant leases, tenant deferred, pool busy. ARGV: job id, lease ms. Takes the lease (and
// its place among the pool's busy slots) whatever the share: the run already started and was only
// parked while it waited for an answer; it holds one of its runner's slots again.
const RECLAIM = new LuaScript(`${NOW_MS}
local exp = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], exp, ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], exp, ARGV[1])
${KEEP_LEASES}`);
// --- end parking ---

// KEYS: pool slots. ARGV: runner instance, slots, lease ms.
const REGISTER = new LuaScript(`${NOW_MS}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. (now + tonumber(ARGV[3])))
`);

export interface FairShareDeps {
  redis: Redis;
  config: Pick<
    IsletConfig,
    | 'ISLET_RUNNER_CONCURRENCY'
    | 'ISLET_RUNNER_NAME'
    | 'ISLET_TENANT_POOL_SHARE'
    | 'ISLET_TENANT_MAX_EXECUTING_PER_POOL'
    | 'ISLET_TENANT_SHARE_LEASE_MS'
  >;
  logger: Logger;
  /**
   * Promotes a deferred job a slot was leased to: true when it will run (promoted, or already
   * back in the queue), false when it is gone (removed, ended), `busy` when it is still there but
   * could not be promoted (still active): its slot is then given on, and a `busy` job goes back to
   * its first place in its tenant's deferred set (lua/includes/reserved-place.lua).
   */
  promote: (mode: SandboxMode, jobId: string) => Promise<boolean | 'busy'>;
  /** Jobs waiting in the mode's queue (heals the queued counts when none wait); omitted: never healed. */
  queuedJobs?: (mode: SandboxMode) => Promise<number>;
}

export function createFairShare(deps: FairShareDeps) {
  const { redis, config, logger } = deps;
  const instance = `${config.ISLET_RUNNER_NAME ?? hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const leaseMs = config.ISLET_TENANT_SHARE_LEASE_MS;
  // One to none every run at one client: its first entry in fields in front of a Map (one-slot-map.ts).
  const held = new OneSlotMap<string, { mode: SandboxMode; tenant: string; jobId: string }>();
  /** Promotions of jobs a slot was leased to, still in flight (close waits for them). */
  const pending = new OneSlotSet<Promise<void>>();
  let modes: SandboxMode[] = [];
  let timer: NodeJS.Timeout | undefined;
  const heldKey = (mode: SandboxMode, jobId: string) => `${mode}\u0000${jobId}`;
  const off = config.ISLET_TENANT_POOL_SHARE >= 1 && !(config.ISLET_TENANT_MAX_EXECUTING_PER_POOL > 0);
  const share = config.ISLET_TENANT_POOL_SHARE;
  const cap = config.ISLET_TENANT_MAX_EXECUTING_PER_POOL;

  async function register() {
    for (const mode of modes)
      await REGISTER.run(redis, [keys.poolSlots(mode)], [instance, config.ISLET_RUNNER_CONCURRENCY, leaseMs]);
  }

  async function healQueued() {
    if (!deps.queuedJobs) return;
    for (const mode of modes)
      if ((await deps.queuedJobs(mode)) === 0 && (await redis.hlen(keys.poolQueued(mode))) > 0)
        await redis.del(keys.poolQueued(mode));
  }

  async function heartbeat() {
    try {
      await register();
      for (const l of held.values())
        await RENEW.run(
          redis,
          [keys.poolTenantLeases(l.mode, l.tenant), keys.poolBusy(l.mode)],
          [l.jobId, leaseMs],
        );
      await healQueued();
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'fair-share heartbeat failed');
    }
  }

  /** A lease's terms for the lease scripts. */
  const terms = (mode: SandboxMode, tenant: string, jobId: string): LeaseTerms => ({
    mode,
    tenant,
    jobId,
    share,
    cap,
    leaseMs,
  });

  /** How a reservation is given up, by what its job's promote answered (not true). */
  const givenUpAs = (promoted: boolean | 'busy'): GivenUp => (promoted === 'busy' ? 'back' : 'gone');

  /**
   * Ends a lease (jobId '' = none) and promotes the job the freed slot went to; a promoted job
   * that is gone (or still active) gives the slot on to the next one. `givenUp`: the lease ended is
   * a reservation its promote did not fill, and how (lease-release-5).
   */
  async function giveOn(mode: SandboxMode, tenant: string, jobId: string, givenUp?: GivenUp): Promise<void> {
    for (let i = 0, t = tenant, release = jobId, how = givenUp; i < 5; i++) {
      const call = releaseCall(terms(mode, t, release), how);
      const next = (await LEASE_RELEASE.run(redis, call.keys, call.args)) as [string, string] | null;
      if (!next) return;
      const promoted = await deps.promote(mode, next[0]);
      if (promoted === true) return;
      [release, t] = next;
      how = givenUpAs(promoted);
    }
  }

  /** Promotes a job a slot was leased to; gone (or still active), its slot goes on to the next deferred job. */
  function handOn(mode: SandboxMode, tenant: string, jobId: string): void {
    const done = (async () => {
      const promoted = await deps.promote(mode, jobId);
      if (promoted !== true) await giveOn(mode, tenant, jobId, givenUpAs(promoted));
    })().catch((err: Error) => logger.warn({ err: err.message, jobId }, 'fair-share promote failed'));
    pending.add(done);
    void done.finally(() => pending.delete(done));
  }

  /** An acquire's answer taken in: a granted lease is renewed by the heartbeat. */
  function granted(mode: SandboxMode, tenant: string, jobId: string, answer: LeaseAnswer): void {
    if (answer.ok) held.set(heldKey(mode, jobId), { mode, tenant, jobId });
    if (answer.swapped) handOn(mode, tenant, answer.swapped);
  }

  // A run's lease rides in its attempt's start and end only where one script may span the pool's
  // keys and the run's (different slots).
  const slotFree = slotFreeCheck(redis);

  /** What a run's lease tells this fair share (`RunLeaseOf`): made once, not three closures a run. */
  const book: LeaseBook = {
    granted,
    isHeld: (mode, jobId) => held.has(heldKey(mode, jobId)),
    forget: (mode, jobId) => {
      held.delete(heldKey(mode, jobId));
    },
    handOn,
  };

  /** A run's lease (`runLease`, `fetchedLease`): its answer once taken, its release by the end. */
  function leaseOf(mode: SandboxMode, tenant: string, jobId: string, begun: unknown): JobLease {
    return new RunLeaseOf(book, mode, tenant, jobId, share, cap, leaseMs, begun);
  }

  return {
    /** Registers this runner's slots for its modes and starts the heartbeat. */
    async start(serving: SandboxMode[]) {
      modes = serving;
      if (off) return;
      await register();
      timer = setInterval(() => void heartbeat(), Math.max(100, Math.floor(leaseMs / 3)));
      timer.unref();
    },

    /** Whether the gateway's enqueues must be counted (fair share on). */
    off,

    /**
     * Takes a slot lease for the job; false when the job must wait (its tenant holds its share
     * while others wait, the pool is full, or its tenant's older deferred job gets the slot, which
     * is then promoted here). With fair share off there is nothing to hold a tenant to: no lease,
     * no Redis work.
     */
    async acquire(mode: SandboxMode, tenant: string, jobId: string): Promise<{ ok: boolean; limit: number }> {
      if (off) return { ok: true, limit: Number.POSITIVE_INFINITY };
      // EVALSHA: the script's 40-byte hash instead of its source on every run.
      const call = acquireCall(terms(mode, tenant, jobId));
      const answer = leaseAnswerOf(await LEASE_ACQUIRE.run(redis, call.keys, call.args));
      granted(mode, tenant, jobId, answer);
      return { ok: answer.ok, limit: answer.limit };
    },

    /**
     * A run's lease for its attempt's start to take and its end to give back, in their own
     * scripts (one server only: undefined on a Cluster, and with fair share off). The same
     * decisions as `acquire` and `release`; `answer` is the acquire's once taken, and `endReleased`
     * tells that the end gave it back (the caller then releases nothing).
     */
    async runLease(
      mode: SandboxMode,
      tenant: string,
      jobId: string,
      begun?: unknown,
    ): Promise<JobLease | undefined> {
      // A fetch that began the attempt (`startsInFetch`) took the lease already: its answer rides on.
      if (off || (begun === undefined && !(await slotFree()))) return undefined;
      return leaseOf(mode, tenant, jobId, begun);
    },

    /**
     * `runLease` for a job whose fetch began its attempt (`begun` its answer), in the caller's
     * turn: the same lease, or undefined with fair share off. A handed job's processor reads it
     * without an await (tenant-slot.ts).
     */
    fetchedLease(mode: SandboxMode, tenant: string, jobId: string, begun: unknown): JobLease | undefined {
      return off ? undefined : leaseOf(mode, tenant, jobId, begun);
    },

    /**
     * Whether a worker's fetch may take a run's lease and begin its attempt in its own script
     * (`runLease`'s condition: one server, fair share on); that answer then goes to `runLease`.
     */
    async startsInFetch(): Promise<boolean> {
      return !off && (await slotFree());
    },

    /**
     * A job whose lease a fetch's script refused and which that script moved to delayed itself
     * (fetch-start-store.ts): the reservation its refusal made for its tenant's older deferred job
     * is promoted, as `acquire` does for a refusal it answers.
     */
    movedInFetch(mode: SandboxMode, tenant: string, swapped: string | undefined): void {
      if (!off && swapped) handOn(mode, tenant, swapped);
    },

    /** The pool's terms of every lease (a fetch's start computes the tenant's part itself). */
    leaseTerms: (mode: SandboxMode) => ({ mode, share, cap, leaseMs }),

    /** Gives the slot back; the pool's next deferred job in turn gets it. */
    async release(mode: SandboxMode, tenant: string, jobId: string): Promise<void> {
      if (off) return;
      held.delete(heldKey(mode, jobId));
      try {
        await giveOn(mode, tenant, jobId);
      } catch (err) {
        // The lease lapses by itself and deferred jobs re-check on their own: nothing is lost.
        logger.warn({ err: (err as Error).message, jobId }, 'fair-share release failed');
      }
    },

    /**
     * Parking: a parked run gives its lease back with `release` (a deferred job of its tenant may
     * take the slot) and takes it again here when its answer came, over the share if need be (it
     * has started; deferring it would only spend its budget). Its tenant's new jobs wait meanwhile.
     */
    async reclaim(mode: SandboxMode, tenant: string, jobId: string): Promise<void> {
      if (off) return;
      held.set(heldKey(mode, jobId), { mode, tenant, jobId });
      await RECLAIM.run(
        redis,
        [keys.poolTenantLeases(mode, tenant), keys.poolTenantDeferred(mode, tenant), keys.poolBusy(mode)],
        [jobId, leaseMs],
      );
    },

    /**
     * A parked run that ends before its reclaim was sent (run-slot.ts `leaseEnding`): counted held
     * here only, no Redis, so its end script carries the lease's release (of a lease already given
     * back: what any release does) and the end stays fused with its job's completion.
     */
    hold(mode: SandboxMode, tenant: string, jobId: string): void {
      if (!off) held.set(heldKey(mode, jobId), { mode, tenant, jobId });
    },

    async close() {
      if (timer) clearInterval(timer);
      await Promise.all(pending);
      if (off) return;
      await Promise.all(modes.map((m) => redis.hdel(keys.poolSlots(m), instance).catch(() => 0)));
    },
  };
}

export type FairShare = ReturnType<typeof createFairShare>;

/** A run's lease taken and given back by its own scripts (`runLease`), with what they answered. */
export interface JobLease extends RunLease {
  /** The acquire's answer; undefined until the attempt's start answered. */
  answer: LeaseAnswer | undefined;
  /** The run's end gave the lease back. */
  endReleased: boolean;
}
