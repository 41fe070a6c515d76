/**
 * A worker's fetch that also starts its run (one server only): BullMQ's own fetch script
 * (moveToActive-11, the text BullMQ itself sends, its includes resolved) runs as a local function
 * of `@islet/runs`' `fetch-lease-begin-11`, which then takes the job's slot lease and begins its
 * run's attempt, exactly as `lease-and-begin-9` would once the processor started: one script call
 * instead of two between the marker's wake-up and the run's own work. Only the fetch's call is
 * replaced: BullMQ builds its keys and arguments and reads the answer as usual (the answer has two
 * more elements, which BullMQ does not read).
 *
 * The fetch also looks at the queue behind the job it took, as `claimDrained` (queue-drain-store.ts)
 * would on the worker's next, speculative fetch: nothing waiting, prioritized or delayed, it drops
 * the ready marker BullMQ's fetch just re-added and says so. That next fetch then blocks on the
 * marker at once, without a look of its own: no round trip, and no fsync'd write of its own
 * (the marker's removal lands in the fetch's) while the run's program runs.
 *
 * A run's job whose lease the fetch refuses is moved to the delayed set by the same script (BullMQ's
 * moveToDelayed with skipAttempt, as the processor's `job.moveToDelayed` would a round trip and a
 * turn of the event loop later), and the worker's next job fetched in its place: the worker never
 * holds a job it may not run (test/bench/README.md, round 26, `fair-fetch`).
 */
import { LuaScript } from '@islet/core/lua-script';
import {
  BakedScript,
  FETCH_TAKE_BACK,
  FETCHED_ARGS,
  type FetchedStart,
  FIXED_START,
  fetchAndLook,
  fetchLeaseBeginScript,
  knownFetchSource,
  type PartShape,
  startArgsList,
} from '@islet/runs';
import type { RedisClient } from 'bullmq';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { version } from 'bullmq/dist/esm/version.js';
import type { Redis } from 'ioredis';
import { EndOptions, fetchVerdict } from './end-options.ts';

/** BullMQ's fetch and the look behind it (`fetchAndLook`), the body of every fused fetch. */
export const FETCH_AND_LOOK = fetchAndLook(moveToActive.content);
const FETCH_LEASE_BEGIN = fetchLeaseBeginScript(FETCH_AND_LOOK, 'nil', true);
/** The name BullMQ's fetch calls its script by, and what it passes: 11 keys, 3 arguments. */
const FETCH_COMMAND = `moveToActive:${version}`;
const FETCH_KEYS = moveToActive.keys;
const BULL_ARGS = 3;
/** The fused fetch's parts: moveToActive's keys, then its arguments with the start's and the delay. */
const FETCH_PARTS: PartShape[] = [
  { name: 'KEYS', keys: true, length: FETCH_KEYS, names: Array.from({ length: FETCH_KEYS }, (_, i) => i) },
  {
    name: 'ARGV',
    keys: false,
    length: BULL_ARGS + FETCHED_ARGS + 1,
    names: [0, ...FIXED_START.map((i) => BULL_ARGS + i)],
  },
];
/** The take-back's: its 3 keys and the worker id after the fetch's. */
const FETCH_TAKE_BACK_PARTS: PartShape[] = [
  {
    name: 'KEYS',
    keys: true,
    length: FETCH_KEYS + 3,
    names: Array.from({ length: FETCH_KEYS + 2 }, (_, i) => i),
  },
  {
    name: 'ARGV',
    keys: false,
    length: BULL_ARGS + FETCHED_ARGS + 2,
    names: [0, ...FIXED_START.map((i) => BULL_ARGS + i), BULL_ARGS + FETCHED_ARGS + 1],
  },
];
/**
 * The fused fetch with the worker's names in its text (@islet/runs baked-call.ts): moveToActive's
 * 11 keys, its prefix (its first argument) and the start's 17 names (`FIXED_START`) baked; its
 * time and options, the start's terms and time and the delay carried.
 */
const FETCH_BAKED = new BakedScript(FETCH_LEASE_BEGIN, FETCH_LEASE_BEGIN.source, FETCH_PARTS);

/**
 * The fused fetch carrying the worker's take-back (`@islet/runs` FETCH_TAKE_BACK, round 49
 * `fetch-takeback`): moveToActive's 11 keys, then idle, idle args and the worker's hand-off key;
 * the fused fetch's arguments, then the worker id. Baked with the worker's names but its hand-off
 * key (carried, so a reader of the commands sees whose take-back it is) and the worker id.
 */
const FETCH_TAKE_BACK_SCRIPT = new LuaScript(`${FETCH_TAKE_BACK}${FETCH_LEASE_BEGIN.source}`);
const FETCH_TAKE_BACK_BAKED = new BakedScript(
  FETCH_TAKE_BACK_SCRIPT,
  FETCH_TAKE_BACK_SCRIPT.source,
  FETCH_TAKE_BACK_PARTS,
);

/**
 * The same fused fetches with the worker's packed options (BullMQ's 3rd argument,
 * `{token, lockDuration, limiter, name}`) taken apart by the runner (end-options.ts, `fetchVerdict`):
 * FO, the token carried, its lock duration and name written into the text, BullMQ's 3rd argument not
 * sent. The fetch is answered by the end's direct refetch (@islet/runs handed-refetch.ts) reading FO,
 * BullMQ's text only where it declines, and then with `opts` made from FO: no `cmsgpack.unpack`, and
 * no text to interpret (@islet/runs `knownFetchSource`, round 52 `fetch-token`). Options it would not
 * take (a limiter, no name, …) go packed to the text as before.
 */
const OPTIONS_PART: PartShape = { name: 'FO', keys: false, length: 5, names: [1, 2], unsent: [3, 4] };
/** BullMQ's packed options' position in its fetch's arguments. */
const OPTIONS_ARG = 2;
/** `baked`'s parts with the options' placeholder unsent and FO after them, over `source` reading FO; undefined: not BullMQ 5's text. */
function optionsBaked(source: string, baked: readonly PartShape[], base: LuaScript): BakedScript | undefined {
  const body = knownFetchSource(source, moveToActive.content, 'FO');
  if (!body) return undefined;
  const parts = baked.map((p) => (p.name === 'ARGV' ? { ...p, unsent: [OPTIONS_ARG] } : p));
  return new BakedScript(base, body, parts.concat(OPTIONS_PART));
}
const FETCH_OPTIONS_BAKED = optionsBaked(FETCH_LEASE_BEGIN.source, FETCH_PARTS, FETCH_LEASE_BEGIN);
const FETCH_TAKE_BACK_OPTIONS_BAKED = optionsBaked(
  FETCH_TAKE_BACK_SCRIPT.source,
  FETCH_TAKE_BACK_PARTS,
  FETCH_TAKE_BACK_SCRIPT,
);
/** BullMQ's packed options of this process's fetches, taken apart (one worker's at a time). */
const FETCH_OPTIONS = new EndOptions(fetchVerdict);

/** A take-back the fetch carries: the worker's idle, idle args and hand-off keys, and its id. */
export interface FetchTakeBack {
  keys: readonly [string, string, string];
  workerId: string;
}

/** Whether `sha` is the fused fetch carrying a take-back's, unbaked or baked (tests tell its calls by it). */
export const isFetchTakeBackSha = (sha: unknown): boolean =>
  sha === FETCH_TAKE_BACK_SCRIPT.sha ||
  FETCH_TAKE_BACK_BAKED.has(sha) ||
  (FETCH_TAKE_BACK_OPTIONS_BAKED?.has(sha) ?? false);
/** Whether `sha` is a baked fetch whose packed options went as their parts (FO; tests tell its calls by it). */
export const isFetchOptionsSha = (sha: unknown): boolean =>
  (FETCH_OPTIONS_BAKED?.has(sha) ?? false) || (FETCH_TAKE_BACK_OPTIONS_BAKED?.has(sha) ?? false);
/** Whether `sha` is the fused fetch's baked with a worker's names (tests tell the path by it). */
export const isBakedFetchSha = (sha: unknown): boolean =>
  FETCH_BAKED.has(sha) || (FETCH_OPTIONS_BAKED?.has(sha) ?? false);

/** The fused script's hash, unbaked (a call not of its shape, or past the baked variants). */
export const FETCH_START_SHA = FETCH_LEASE_BEGIN.sha;
/** Whether `sha` is the fused fetch's, unbaked or baked with a mode's names (tests tell its calls by it). */
export const isFetchStartSha = (sha: unknown): boolean =>
  sha === FETCH_START_SHA || isBakedFetchSha(sha) || isFetchTakeBackSha(sha);

/** A job whose lease a fused fetch refused and which it moved to the delayed set itself. */
export interface MovedJob {
  jobId: string;
  tenant: string;
  /** The tenant's quota the refusal reported. */
  limit: number;
  /** A deferred job the refusal gave its slot to (its tenant's older one): the runner promotes it. */
  swapped?: string;
}

/** What a fused fetch's caller is told of beside BullMQ's job. */
export interface FetchedHooks {
  /** The deferral's delay (ISLET_TENANT_SHARE_RECHECK_MS) a refused job is moved with; absent: none moved. */
  deferMs?: number;
  /** Jobs the fetch refused and moved to delayed (none reach BullMQ). */
  moved?: (jobs: MovedJob[]) => void;
}

/**
 * Reads a fused fetch's answer (or a hand-off's, the same): the run's start, what is behind the
 * job, the refused jobs it moved to delayed (`lua/fetch-lease-begin-11.lua`'s seventh element).
 */
export function fetchedAnswer(
  reply: unknown[],
  started: (jobId: string, begun: unknown) => void,
  behind: (drained: boolean) => void,
  moved?: (jobs: MovedJob[]) => void,
): void {
  if (reply.length > 4 && typeof reply[1] === 'string' && reply[4] !== null) started(reply[1], reply[4]);
  if (reply.length > 5 && reply[5] !== null) behind(reply[5] === 1);
  const list = reply[6];
  if (moved && Array.isArray(list) && list.length > 0)
    moved(
      list.map((m) => {
        const [jobId, tenant, limit, swapped] = m as [string, string, number, string];
        return { jobId, tenant, limit: Number(limit), ...(swapped ? { swapped } : {}) };
      }),
    );
}

/** The fused fetch's last argument: the deferral's delay, or -1 (none moved in the script). */
export function deferArg(hooks: FetchedHooks | undefined): number {
  return hooks?.deferMs !== undefined && hooks.deferMs >= 0 ? hooks.deferMs : -1;
}

/**
 * `client` for BullMQ's fetch, with the fetch's script call replaced by the fused one
 * (`start`: the run's start's terms, `lifecycle.fetchedStart`). A run's job comes back
 * with its start's answer, given to `started` (job id, answer) before BullMQ sees the job; any
 * job with what the fetch saw behind it, given to `behind` (true: drained, its marker dropped).
 * With `hooks.deferMs`, a run's job whose lease is refused is moved to delayed by the script itself
 * and the worker's next job fetched in its place (`hooks.moved` is told which were moved).
 * `takeBack`, asked when the fetch goes: a take-back the worker owes (its registration left standing
 * by a pop that brought no hand-off) sent in the same call (FETCH_TAKE_BACK); a job handed to it
 * meanwhile is then this fetch's answer, under this fetch's token.
 */
export function startingClient(
  client: RedisClient,
  start: () => FetchedStart,
  started: (jobId: string, begun: unknown) => void,
  behind: (drained: boolean) => void = () => undefined,
  hooks?: FetchedHooks,
  takeBack?: () => FetchTakeBack | undefined,
): RedisClient {
  const runCommand = async (name: string, args: unknown[]): Promise<unknown> => {
    // Another BullMQ than the one this was written against: its own fetch, as it is.
    if (name !== FETCH_COMMAND || args.length !== FETCH_KEYS + BULL_ARGS)
      return client.runCommand(name, args);
    const keys = args.slice(0, FETCH_KEYS) as string[];
    const bullArgs = args.slice(FETCH_KEYS) as (string | number)[];
    const terms = start();
    const delay = deferArg(hooks);
    // The worker's names in the script's text where they can be (@islet/runs baked-call.ts): the
    // call carries only what differs between fetches; the same reads and writes.
    // `concat`, not a spread (an unoptimized spread walks each array through its iterator).
    const fetchArgs = bullArgs.concat(startArgsList(terms), delay);
    const owed = takeBack?.();
    const redis = client as unknown as Redis;
    // The options' parts (their token carried, the rest in the text), or the packed options as before.
    // Past its MAX_BAKED texts, the options' baker's call goes by the plain one.
    const options = FETCH_OPTIONS.split(bullArgs[OPTIONS_ARG]);
    let reply: unknown[];
    if (owed) {
      const takeBackKeys = keys.concat(owed.keys);
      const takeBackArgs = fetchArgs.concat(owed.workerId);
      const baked =
        (options && FETCH_TAKE_BACK_OPTIONS_BAKED?.call([takeBackKeys, takeBackArgs, options])) ||
        FETCH_TAKE_BACK_BAKED.call([takeBackKeys, takeBackArgs]);
      reply = (await (baked
        ? baked.script.run(redis, baked.keys, baked.args as (string | number)[])
        : FETCH_TAKE_BACK_SCRIPT.run(redis, takeBackKeys, takeBackArgs))) as unknown[];
    } else {
      const baked =
        (options && FETCH_OPTIONS_BAKED?.call([keys, fetchArgs, options])) ||
        FETCH_BAKED.call([keys, fetchArgs]);
      reply = (await (baked
        ? baked.script.run(redis, baked.keys, baked.args as (string | number)[])
        : FETCH_LEASE_BEGIN.run(redis, keys, fetchArgs))) as unknown[];
    }
    fetchedAnswer(reply, started, behind, hooks?.moved);
    return reply;
  };
  return { runCommand } as unknown as RedisClient;
}
