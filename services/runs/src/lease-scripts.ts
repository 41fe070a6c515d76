/**
 * The fair share's slot lease scripts (the runner's fair-share.ts decides with them): taken alone
 * (`lease-acquire-6`) or, on one server, with a run's attempt start (`lease-and-begin-9`, the
 * journal's beginAttempt); given back alone (`lease-release-5`) or, on one server, with the run's
 * end (`finish-run-release-19`, the run store's finish); and, on one server, taken with the attempt's
 * start inside the runner's BullMQ fetch (`fetch-lease-begin-11`) or its completion's fetch of the
 * next job (`endCompleteStartScript`). Their Lua lives here, beside the run's
 * scripts they are combined with, so each decision is written once. The arguments those fetches
 * take after BullMQ's are made in fetched-start-args.ts.
 */
import { keys } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { quietComplete, quietCompleteAsk } from './bull-quiet.ts';
import { FETCHED_ARGS } from './fetched-start-args.ts';
import { handedComplete, knownPacked } from './handed-complete.ts';
import { loadScript, luaSource } from './lua-scripts.ts';
import { finishRunReleaseSource } from './run-store-scripts.ts';

export const LEASE_ACQUIRE = loadScript('lease-acquire-6');
export const LEASE_RELEASE = loadScript('lease-release-5');
const PROMOTE_RESERVED = loadScript('promote-reserved-6');

/**
 * Promotes a reserved job from the delayed set to the end of the wait list the next fetch pops, as
 * the end's own script does (`lua/promote-reserved-6.lua` says why), behind the reserved jobs
 * promoted there before it; a job its recheck promoted to the other end first is moved there too.
 * `promoted`; `active` (its runner's move to delayed has not landed); `absent` (not in the delayed
 * set: already at the front, or gone); `prioritized` (left in the delayed set for BullMQ's promote,
 * which places it by its priority). `queue`: BullMQ's queue (its `toKey`).
 */
export async function promoteReserved(
  redis: Redis,
  queue: { toKey: (name: string) => string },
  jobId: string,
): Promise<'promoted' | 'active' | 'absent' | 'prioritized'> {
  const reply = await PROMOTE_RESERVED.run(
    redis,
    ['delayed', 'wait', 'paused', 'meta', 'active', 'marker'].map((name) => queue.toKey(name)),
    [queue.toKey(''), jobId],
  );
  return reply === 0 ? 'promoted' : reply === -2 ? 'prioritized' : reply === -4 ? 'active' : 'absent';
}

/** What a lease's scripts need of the job and the pool's fair share. */
export interface LeaseTerms {
  mode: string;
  tenant: string;
  jobId: string;
  /** ISLET_TENANT_POOL_SHARE. */
  share: number;
  /** ISLET_TENANT_MAX_EXECUTING_PER_POOL (0: none). */
  cap: number;
  leaseMs: number;
}

/** An acquire's answer: granted, the tenant's limit, a deferred job whose reservation must be promoted. */
export interface LeaseAnswer {
  ok: boolean;
  limit: number;
  swapped?: string;
}

/**
 * A slot lease the runner lets a run's scripts take and give back (one server only): the
 * attempt's start takes it (`acquired` gets the answer) and the run's end gives it back while the
 * runner still holds it (`held`; a parked run gave it back already), then tells `released` which
 * deferred job the freed slot went to, if any.
 */
export interface RunLease extends LeaseTerms {
  /**
   * The lease's and the attempt's start as the worker's fetch already made them
   * (`fetch-lease-begin-11`'s fifth element): the attempt's start reads it instead of running its
   * script, once (it is taken out when read).
   */
  begun?: unknown;
  acquired(answer: LeaseAnswer): void;
  held(): boolean;
  released(next: { jobId: string; tenant: string } | undefined): void;
  /**
   * Hands the end's `finish-run-release-19` call (keys, arguments) to the worker's completion,
   * which runs it first in its own script (one server only); resolves with the end's answer.
   * Undefined (or absent): the end runs its script itself. `status`: the end's final status (the
   * runner's job then completes with what its processor returns for it, sent at once).
   */
  deferEnd?(
    keys: string[],
    args: (string | number)[],
    status?: 'Completed' | 'Failed' | 'Cancelled',
  ): Promise<unknown> | undefined;
}

/** lease-acquire-6's keys and arguments (KEYS[1..6], ARGV[1..5]). */
export function acquireCall(t: LeaseTerms): { keys: string[]; args: (string | number)[] } {
  return {
    keys: [
      keys.poolSlots(t.mode),
      keys.poolBusy(t.mode),
      keys.poolQueued(t.mode),
      keys.poolWaiting(t.mode),
      keys.poolTenantLeases(t.mode, t.tenant),
      keys.poolTenantDeferred(t.mode, t.tenant),
    ],
    args: [t.jobId, t.tenant, t.share, t.cap, t.leaseMs],
  };
}

/**
 * How a reservation was given up untaken (lease-release-5's ARGV[7]): `back`, its job is still
 * there (active: its runner's move to delayed has not landed) and goes back to its first place in
 * its tenant's deferred set; `gone`, its job is not (removed, ended) and that place is forgotten.
 */
export type GivenUp = 'back' | 'gone';

/**
 * lease-release-5's keys and arguments (KEYS[1..5], ARGV[1..5], with `givenUp` ARGV[6..7]); jobId ''
 * releases none.
 */
export function releaseCall(t: LeaseTerms, givenUp?: GivenUp): { keys: string[]; args: (string | number)[] } {
  const args: (string | number)[] = [t.jobId, t.share, t.cap, t.leaseMs, keys.poolTenantPrefix(t.mode)];
  if (givenUp) args.push(t.tenant, givenUp);
  return {
    keys: [
      keys.poolSlots(t.mode),
      keys.poolBusy(t.mode),
      keys.poolQueued(t.mode),
      keys.poolWaiting(t.mode),
      keys.poolTenantLeases(t.mode, t.tenant),
    ],
    args,
  };
}

/** An acquire's reply as an answer. */
export function leaseAnswerOf(reply: unknown): LeaseAnswer {
  const [ok, limit, swapped] = reply as [number, number, string | undefined];
  return { ok: ok === 1, limit, ...(swapped ? { swapped } : {}) };
}

/**
 * The worker's fetch with its run's lease and attempt start (one server only): BullMQ's fetch
 * script `fetchBody` (moveToActive-11, its includes resolved, as BullMQ sends it) becomes a local
 * function whose answer `lua/fetch-lease-begin-11.lua` reads. BullMQ's text goes as it is (its
 * block comments are not whole-line comments `compactLua` could drop); the tail is compacted.
 * `now`: the name of a local holding Redis's time (ms) that the text embedding this one read
 * already, which the lease then takes instead of reading `TIME` again ('nil': none).
 * `knownRun`: a Lua expression for the tail's KNOWN_RUN (a record the embedding script created,
 * which the attempt's start reads from there: the hand-off's add inside a submit's admission).
 * `uncounted`: a Lua expression for the tail's UNCOUNTED ({job = id}: a job its pool's queued
 * counts do not hold, so its pick-up takes no count off; the hand-off's add).
 * `knownJob`, `knownTenant`: Lua expressions for the tail's KNOWN_JOB and KNOWN_TENANT (a job data
 * text vouched for as a run's format-2 data of that tenant, read as that, not decoded; the hand-off's
 * add inside a submit's admission).
 * `defers`: a run's job whose lease is refused is moved to delayed here and `fetchJob` called
 * again for the next (the tail's DEFER); the script then takes the delay as its last argument
 * (`DEFER_MS`). The hand-off's add does not: its arguments are a registration's, which runners of
 * the release before read and write too.
 */
export function fetchLeaseBeginScript(
  fetchBody: string,
  now = 'nil',
  defers = false,
  knownRun = 'nil',
  uncounted = 'nil',
  knownJob = 'nil',
  knownTenant = 'nil',
): LuaScript {
  const tail = luaSource('fetch-lease-begin-11', {
    FETCHED_ARGS,
    POOL_SEEN: 'nil',
    POOL_NOW: now,
    KNOWN_RUN: knownRun,
    UNCOUNTED: uncounted,
    KNOWN_JOB: knownJob,
    KNOWN_TENANT: knownTenant,
    DEFER: defers ? deferTerms(FETCH_QUEUE) : 'nil',
    REFETCH: 'fetchJob',
    START: 'ARGV',
  });
  return new LuaScript(`${defers ? DEFER_MS : ''}local function fetchJob()\n${fetchBody}\nend\n${tail}`);
}

/**
 * A script that moves refused jobs itself (`fetch-lease-begin-11`'s DEFER) takes the deferral's
 * delay (ISLET_TENANT_SHARE_RECHECK_MS; below 0: none moved, as before) as its last argument,
 * after the start's, and takes it off ARGV before anything reads ARGV.
 */
const DEFER_MS = 'local deferMs = tonumber(table.remove(ARGV))\n';

/** Where the queue's keys and BullMQ's prefix and timestamp are: moveToActive-11's, moveToFinished-14's. */
const FETCH_QUEUE = { active: 2, stalled: 5, delayed: 7, marker: 11, meta: 9, prefix: 1, ts: 2 };
const COMPLETE_QUEUE = { active: 2, stalled: 5, delayed: 7, marker: 14, meta: 9, prefix: 7, ts: 2 };

/** The tail's DEFER, read from BullMQ's keys and arguments (tables `K` and `A`). */
function deferTerms(q: typeof FETCH_QUEUE, K = 'KEYS', A = 'ARGV'): string {
  return `(deferMs and deferMs >= 0) and {ms = deferMs, active = ${K}[${q.active}], stalled = ${K}[${q.stalled}], delayed = ${K}[${q.delayed}], marker = ${K}[${q.marker}], meta = ${K}[${q.meta}], prefix = ${A}[${q.prefix}], ts = ${A}[${q.ts}]} or nil`;
}

/**
 * The end's notes table (`quietCompleteAsk`'s `#absent` and `#noWait`, the end's `#at`, the
 * release's waiting key) made at its size: three keys in the constructor (nil: absent until set)
 * make room for four, so setting them later grows no table (a table made empty is rehashed at its
 * 1st, 2nd and 3rd key; round 50 `end-script`).
 */
const SEEN_TABLE = "{['#absent'] = nil, ['#noWait'] = nil, ['#at'] = nil}";

/**
 * A run's end with its lease given back (`finish-run-release-19`), then BullMQ's completion
 * `moveToFinished` (moveToFinished-14 as BullMQ sends it, run through bull-quiet.ts's
 * `quietComplete`), in one script (one server only). The keys and arguments are the completion's,
 * then the end's, then the completion's key and argument counts; each part reads its own as KEYS
 * and ARGV. The end goes first, so its wake-up is sent with the end durable whatever the
 * completion answers. Returns {the end's answer, the completion's}. `poolSeen`: as
 * `finishRunReleaseSource`'s ('nil': the script's own table, read by nothing after it).
 * The release's read of the pool's waiting list (its KEYS[18]), the completion's probe of BullMQ's
 * absent keys and whether the wait list is there for the next fetch go as one EXISTS first
 * (bull-quiet.ts `quietCompleteAsk`): the end writes none of the queue's or the pool's keys, and a
 * release that finds the list empty writes none of the queue's, so the keys are as the EXISTS
 * found them when the release and the completion run. While nothing is deferred: one command a
 * run fewer, two when the wait list is empty (the fetch's RPOPLPUSH answered in the script).
 */
export function endAndCompleteScript(moveToFinished: string, poolSeen = 'nil'): LuaScript {
  return new LuaScript(`${endCompleteSplit(0)}${endAndCompleteBody(moveToFinished, poolSeen)}`);
}

/**
 * The parts of an unbaked end + completion call from its KEYS and ARGV (the completion's, then the
 * end's, then the completion's key and argument counts, then `tail` more arguments): locals BK, BA
 * (BullMQ's), EK, EA (the end's) and, with a tail, SA (those last `tail`). A baked call's header
 * makes the same locals from its names and what it carries (baked-call.ts).
 */
function endCompleteSplit(tail: number): string {
  return `local n = #ARGV - ${tail}
local nk, na = tonumber(ARGV[n - 1]), tonumber(ARGV[n])
-- Copied by unpack (C, the tables made at their size): an element-by-element loop over the ~120
-- keys and arguments cost ~6 µs a call (test/bench/README.md, round 22).
local kn, an = math.max(0, math.min(nk, #KEYS)), math.max(0, math.min(na, n - 2))
local BK, EK = {unpack(KEYS, 1, kn)}, {unpack(KEYS, kn + 1, #KEYS)}
local BA, EA = {unpack(ARGV, 1, an)}, {unpack(ARGV, an + 1, n - 2)}
${tail > 0 ? 'local SA = {unpack(ARGV, n + 1, #ARGV)}\n' : ''}`;
}

/**
 * `endAndCompleteScript`'s text after its parts (BK, BA, EK, EA: the split's, or a baked call's
 * tables, baked-call.ts): it reads no KEYS or ARGV of its own. `known` (a Lua expression, a baked
 * call's part): the worker's packed options as `{token, lockDuration, name, head, tail}`, BA's 8th
 * false — the direct completion reads them with no unpack, the bytes made again where read
 * (handed-complete.ts `knownPacked`; the runner's end-options.ts).
 */
export function endAndCompleteBody(moveToFinished: string, poolSeen = 'nil', known?: string): string {
  const seen = poolSeen === 'nil' ? 'endSeen' : poolSeen;
  return `${poolSeen === 'nil' ? `local endSeen = ${SEEN_TABLE}\n` : ''}${quietCompleteAsk('BK', 'BA', seen, 'EK[18]')}
if ${seen}['#absent'] then ${seen}[EK[18]] = true end
local function runEnd(KEYS, ARGV)
${finishRunReleaseSource(seen)}
end
local function complete(KEYS, ARGV)
${quietComplete(moveToFinished, seen, handedComplete(moveToFinished), known)}
end
local ended = runEnd(EK, EA)
-- The freed slot leased to a deferred job (the release's answer): that job promoted here, to the
-- end of the wait list the fetch pops, so this worker's completion fetches it next (its lease is
-- waiting for it). Promoted by the runner instead (BullMQ's promote: the back of the list), it
-- reached a slot 17-29 ms later, the slot empty meanwhile and every job fetched before it refused
-- (test/bench/README.md, round 25, \`fair-contend\`). Only as BullMQ's promote would place it: a
-- paused or concurrency-capped queue or a prioritized job, or one not delayed yet (its runner has
-- not moved it), goes to the runner's promote as before (the answer keeps the job for it).
if type(ended) == 'table' and ended[2] then
  local id, prefix = ended[2], BA[7]
  local meta = redis.call('HMGET', BK[9], 'paused', 'concurrency')
  if not meta[1] and not meta[2] and (tonumber(redis.call('HGET', prefix .. id, 'priority')) or 0) == 0
    and redis.call('ZREM', BK[7], id) == 1 then
    redis.call('RPUSH', BK[1], id)
    redis.call('HSET', prefix .. id, 'delay', 0)
    redis.call('ZADD', BK[14], 0, '0')
    ${seen}['#noWait'] = false
    -- the end's fold-due mark (its 4th element, finish-run-release-19) kept for the run store
    ended = ended[4] and {ended[1], false, false, ended[4]} or {ended[1]}
  end
end
return {ended, complete(BK, BA)}`;
}

/**
 * `endAndCompleteScript` whose completion also brings its worker's next job (BullMQ's fetch-next)
 * and, when that is a run's, takes its lease and begins its attempt in the same script: the tail
 * of `lua/fetch-lease-begin-11.lua` reads the completion's answer (a fetch's very shape) as it reads
 * the fetch's (one server only). The arguments are `endAndCompleteScript`'s, then those of
 * `fetchedStartArgs`. Returns {the end's answer, the completion's}, the
 * completion's with the start's answer as its fifth element when it brought a run's job. The
 * end's lease release notes a pool waiting list it read empty (`poolSeen`), and the next job's
 * acquire takes it as read: nothing in between (BullMQ's completion and fetch) touches the pool's
 * keys, so the answer is the one a second read would give, one command fewer a run.
 * The end's event id (Redis's ms before its dash) is noted there too (`#at`), and the acquire takes its time for `TIME`.
 * `fetchBody` (the fused fetch's body, `fetchAndLook` of moveToActive-11): a next job whose lease is
 * refused is moved to delayed in the call and the one after it fetched with that body on the
 * completion's keys (the tail's DEFER and REFETCH); the delay is then the last argument.
 * `refetchDirect`: `handedRefetch` of that moveToActive-11 text, tried before the body.
 */
export function endCompleteStartScript(
  moveToFinished: string,
  fetchBody?: string,
  refetchDirect?: string,
): LuaScript {
  // The start's arguments, and with a refetch the delay after them: SA.
  const tail = FETCHED_ARGS + (fetchBody ? 1 : 0);
  return new LuaScript(
    `${endCompleteSplit(tail)}${endCompleteStartBody(moveToFinished, fetchBody, refetchDirect)}`,
  );
}

/**
 * `endCompleteStartScript`'s text after its parts: BK, BA, EK, EA as `endAndCompleteBody`'s, and
 * SA, the start's arguments (`startArgsList`) and, with `fetchBody`, the delay after them. It reads
 * no KEYS or ARGV of its own (a baked call's header makes the parts, baked-call.ts). `known`: as
 * `endAndCompleteBody`'s (the refetch makes the packed options again too).
 */
export function endCompleteStartBody(
  moveToFinished: string,
  fetchBody?: string,
  refetchDirect?: string,
  known?: string,
): string {
  // The completion's keys are moveToActive-11's but for the marker (its 14th): the refetch's.
  // `refetchDirect` (handed-refetch.ts, made only when a refetch runs): the same commands as
  // `fetchBody` without BullMQ's text, or nil for it to run.
  // A baked end's parts of the options (BO) go to the direct refetch as they are: no unpack
  // (round 52 `fetch-token`).
  const direct = refetchDirect
    ? `${refetchDirect}
local handed = handedRefetch(KEYS, ARGV${known ? `, ${known}` : ''})
if handed then return handed end
`
    : '';
  // The packed options made again where a baked end carried their parts (BO), only for BullMQ's
  // text (the direct refetch declined, or is not there): its ARGV[3].
  const fill = known ? `${knownPacked('ARGV', known, 3)}\n` : '';
  const refetch = fetchBody
    ? `local deferMs = tonumber(table.remove(SA))
local function fetchWith(KEYS, ARGV)
${direct}${fill}${fetchBody}
end
local function refetch()
  local K = {unpack(BK, 1, 10)}
  K[11] = BK[14]
  return fetchWith(K, {BA[7], BA[2], BA[8]})
end
`
    : '';
  return `${refetch}local ended, completed
local poolSeen = ${SEEN_TABLE}
local function fetchJob()
local function endAndComplete()
${endAndCompleteBody(moveToFinished, 'poolSeen', known)}
end
local both = endAndComplete()
ended, completed = both[1], both[2]
if type(completed) == 'table' then return completed end
return {}
end
local function startNext()
${luaSource('fetch-lease-begin-11', {
  FETCHED_ARGS,
  POOL_SEEN: 'poolSeen',
  POOL_NOW: 'nil',
  KNOWN_RUN: 'nil',
  UNCOUNTED: 'nil',
  KNOWN_JOB: 'nil',
  KNOWN_TENANT: 'nil',
  DEFER: fetchBody ? deferTerms(COMPLETE_QUEUE, 'BK', 'BA') : 'nil',
  REFETCH: fetchBody ? 'refetch' : 'fetchJob',
  START: 'SA',
})}
end
-- The answer the start made: the completion's own, or the job fetched in place of one it moved.
local started = startNext()
if type(completed) == 'table' then completed = started end
return {ended, completed}`;
}
