/**
 * A run's end and its job's completion in one script call (one server only): the run's end
 * (`finish-run-release-19`, handed over by the run store's finish through `RunLease.deferEnd`)
 * runs first, then BullMQ's own completion script (moveToFinished-14, the text BullMQ sends, run
 * through `@islet/runs`' bull-quiet.ts: no events stream entries, no reads of absent keys) as a
 * local function of `endAndCompleteScript`. Only the completion's call is
 * replaced: BullMQ builds its keys and arguments and reads its own answer as usual.
 *
 * The end is written once whatever happens to the call: it goes first in the script, so a
 * completion that fails after it leaves the end written; a call that fails (or never goes: the
 * processor's job ended without a completion) is followed by the end's own script, which writes
 * nothing a second time (the first final status stands; a lease given back twice frees nothing).
 *
 * A completion that fetches its worker's next job (BullMQ's fetch-next) also starts that job's run
 * (`endCompleteStartScript`): its lease and attempt start as the fused fetch takes them
 * (fetch-start-store.ts), the answer handed over (`startNext.started`) before BullMQ sees the job.
 * Both calls go with the worker's names in their script's text (@islet/runs baked-call.ts), as the
 * fused fetch's: only what differs between runs is sent.
 */
import type { Metrics } from '@islet/core';
import {
  BakedScript,
  endAndCompleteBody,
  endAndCompleteScript,
  endCompleteStartBody,
  endCompleteStartScript,
  endDerived,
  FETCHED_ARGS,
  type FetchedStart,
  FINISH_RUN_RELEASE,
  FIXED_START,
  handedRefetch,
  type PartShape,
  startArgsList,
  type UnbakedReason,
} from '@islet/runs';
import type { RedisClient } from 'bullmq';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { version } from 'bullmq/dist/esm/version.js';
import type { Redis } from 'ioredis';
import { EndOptions } from './end-options.ts';
import { deferArg, FETCH_AND_LOOK, type FetchedHooks, fetchedAnswer } from './fetch-start-store.ts';

const END_AND_COMPLETE = endAndCompleteScript(moveToFinished.content);
/** The fused script's hash (tests tell its calls from others' by it). */
export const END_AND_COMPLETE_SHA = END_AND_COMPLETE.sha;
// A next job whose lease is refused (two tenants) is deferred and the one after it fetched: that
// refetch without BullMQ's text where it is the one handed-refetch.ts was written against.
const END_COMPLETE_START = endCompleteStartScript(
  moveToFinished.content,
  FETCH_AND_LOOK,
  handedRefetch(moveToActive.content),
);
/** moveToFinished's `fetchNext` argument (1: the completion brings the worker's next job), after its keys. */
const FETCH_NEXT_ARG = 5;
/**
 * The name BullMQ's Scripts call the completion by (`execCommand` adds the version), its keys and
 * arguments (the job id first).
 */
const COMPLETE_COMMAND = 'moveToFinished';
const COMPLETE_KEYS = moveToFinished.keys;
/**
 * The fused calls' parts with the worker's names (@islet/runs baked-call.ts). BullMQ's: the queue's
 * keys but the job's (its 12th: made in the text from the job id, after the queue's prefix), the
 * property and target it finishes with ('returnvalue', 'completed'; a failure's are another text)
 * and the queue's prefix. The end's (`finish-run-release-19`): the pool's four keys, the events
 * channel, the event's type and the pool's tenant key prefix; its run's and tenant's keys made in
 * the text from the run id and the tenant it carries, the lease's job id from BullMQ's
 * (@islet/runs end-derived.ts); its time's keys and its terms carried, its fields the run at its
 * end. The start's: its 17 names (`FIXED_START`), its terms, time and the delay carried.
 */
const END_DERIVED = endDerived('EA', ['BA', 0]);
const BULL_PARTS: PartShape[] = [
  {
    name: 'BK',
    keys: true,
    length: COMPLETE_KEYS,
    names: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13],
    derived: [{ at: 11, from: ['BA', 0], after: '' }],
  },
  { name: 'BA', keys: false, length: 9, names: [2, 4, 6] },
  { name: 'EK', keys: true, length: 19, names: [14, 15, 16, 17], derived: END_DERIVED.keys },
  { name: 'EA', keys: false, length: 23, names: [1, 2, 22], rest: true, derived: END_DERIVED.args },
];
const END_BAKED = new BakedScript(END_AND_COMPLETE, endAndCompleteBody(moveToFinished.content), BULL_PARTS);
const START_PART: PartShape = { name: 'SA', keys: false, length: FETCHED_ARGS + 1, names: FIXED_START };
const END_START_BAKED = new BakedScript(
  END_COMPLETE_START,
  endCompleteStartBody(moveToFinished.content, FETCH_AND_LOOK, handedRefetch(moveToActive.content)),
  BULL_PARTS.concat(START_PART),
);
/**
 * The same calls with the worker's packed options (BullMQ's 8th argument) taken apart by the runner
 * (end-options.ts): BO, the token carried, its lock duration, name and the bytes around the token
 * written into the text; BA's 8th not sent (the script makes it again where it is read). The end's
 * direct completion takes them without Redis's `cmsgpack.unpack` of the options (16–17 k
 * instructions an end: test/bench/README.md, round 51 `end-lua`). Options it would not take go as before.
 */
const OPTION_PARTS: PartShape[] = BULL_PARTS.map((p) => (p.name === 'BA' ? { ...p, unsent: [7] } : p));
const OPTIONS_PART: PartShape = { name: 'BO', keys: false, length: 5, names: [1, 2, 3, 4] };
const END_OPTIONS_BAKED = new BakedScript(
  END_AND_COMPLETE,
  endAndCompleteBody(moveToFinished.content, 'nil', 'BO'),
  OPTION_PARTS.concat(OPTIONS_PART),
);
const END_START_OPTIONS_BAKED = new BakedScript(
  END_COMPLETE_START,
  endCompleteStartBody(moveToFinished.content, FETCH_AND_LOOK, handedRefetch(moveToActive.content), 'BO'),
  OPTION_PARTS.concat(START_PART, OPTIONS_PART),
);
/** BullMQ's packed options (its 8th argument) of this process's ends, taken apart (one worker's at a time). */
const END_OPTIONS = new EndOptions();
/** moveToFinished's packed options' position in its arguments. */
const OPTIONS_ARG = 7;
/** The hash of the fused call that also starts the next job's run, unbaked (a call not of its shape). */
export const END_COMPLETE_START_SHA = END_COMPLETE_START.sha;
/** Whether `sha` is the fused call that also starts the next job's run, unbaked or baked (tests tell its calls by it). */
export const isEndCompleteStartSha = (sha: unknown): boolean =>
  sha === END_COMPLETE_START_SHA || END_START_BAKED.has(sha) || END_START_OPTIONS_BAKED.has(sha);
/** Whether `sha` is the fused end and completion without a start, unbaked or baked (tests tell its calls by it). */
export const isEndAndCompleteSha = (sha: unknown): boolean =>
  sha === END_AND_COMPLETE_SHA || END_BAKED.has(sha) || END_OPTIONS_BAKED.has(sha);
/** Whether `sha` is a baked end whose packed options went as their parts (end-options.ts; tests tell its calls by it). */
export const isEndOptionsSha = (sha: unknown): boolean =>
  END_OPTIONS_BAKED.has(sha) || END_START_OPTIONS_BAKED.has(sha);

const UNBAKED_REASONS: readonly UnbakedReason[] = ['shape', 'derived', 'texts'];

/**
 * The fused ends this process sent unbaked (both forms, with and without the next job's start), by
 * reason (baked-call.ts `UnbakedReason`): every one carries its ~12 run and tenant keys and the
 * worker's names as arguments (~1.6 KB more a run, round 47 `end-keys`). Counted by the baker,
 * not on the end's path.
 */
export function unbakedEnds(): Record<UnbakedReason, number> {
  const a = END_BAKED.unbaked;
  const b = END_START_BAKED.unbaked;
  return { shape: a.shape + b.shape, derived: a.derived + b.derived, texts: a.texts + b.texts };
}

/**
 * `islet_runner_end_unbaked_total{reason}` read from the bakers when scraped (prom-client's
 * `collect`): the process's counts, every reason shown from the first scrape (0 while none).
 */
export function endsUnbakedAtScrape(metrics: Metrics): void {
  const counter = metrics.endsUnbaked;
  (counter as { collect?: () => void }).collect = () => {
    const counts = unbakedEnds();
    counter.reset();
    for (const reason of UNBAKED_REASONS) counter.inc({ reason }, counts[reason]);
  };
}

/**
 * BullMQ's `moveToFinished` checks its answer for an error code (`result < 0`) before it reads it.
 * An answer that brings the worker's next job is an array (`[job's fields, id, limit, delay]`),
 * which that comparison turns into text first: `Array.prototype.toString`, the next job's fields
 * and options joined (~4.2 KB of strings a run at 16 clients, ~8 µs of the runner's main thread:
 * test/bench/README.md, round 39 `runner-cpu`), only for the number it makes to be NaN. An array of
 * two or more elements always makes NaN (its text has a comma), so under a number hint it is given
 * NaN at once; under any other hint (text, `==`) its text as before. The answer's elements, all
 * BullMQ reads after the check, are untouched.
 */
function numberOfAnswer(this: unknown[], hint: string): unknown {
  return hint === 'number' ? Number.NaN : Array.prototype.join.call(this);
}

/** `answer` with `numberOfAnswer` as its primitive when it is an array of two or more elements. */
export function comparedWithoutText(answer: unknown): unknown {
  // Assigned, not defined (`Object.defineProperty` is a call into V8's runtime each time, ~2.7 µs
  // a run; a store's transition is cached). A symbol key: no walk of the array's own keys sees it.
  if (Array.isArray(answer) && answer.length > 1)
    (answer as unknown as Record<symbol, unknown>)[Symbol.toPrimitive] = numberOfAnswer;
  return answer;
}

/** An end handed to the completion: its call, and who waits for its answer. */
export interface PendingEnd {
  keys: string[];
  args: (string | number)[];
  resolve(answer: unknown): void;
  reject(err: unknown): void;
  /**
   * The completion brings no next job (its `fetchNext` sent as 0): the worker was registered idle
   * when the end was handed over (parking-worker-end.ts says why).
   */
  fetchNone?: true;
  /** Set: a next job the completion brings has its run started in the same call. */
  startNext?: {
    /** `fetch-lease-begin-11`'s terms after BullMQ's arguments (`fetchedStart`). */
    start(): FetchedStart;
    /** The next job's id and its start's answer, before the end's answer is given. */
    started(jobId: string, begun: unknown): void;
    /** A next job refused is moved to delayed in the call, and the one after it fetched (`FetchedHooks`). */
    hooks?: FetchedHooks;
  };
}

/** The end's own script, for an end whose fused call failed or never went. */
export async function runEndAlone(client: Redis, end: PendingEnd): Promise<void> {
  try {
    end.resolve(await FINISH_RUN_RELEASE.run(client, end.keys, end.args));
  } catch (err) {
    end.reject(err);
  }
}

/**
 * Wraps BullMQ's `execCommand(client, name, args)`: a completion whose job has an end pending
 * (`take(jobId)` hands it over once) runs fused with it. The other calls go as they are. A
 * completion already sent for the job (`sent(jobId)`, once: the worker sent it as the end was
 * handed over, parking-worker-end.ts `completeAtEnd`) is not sent again: BullMQ's own call gets
 * that call's answer.
 */
export function completingExec(
  scriptsVersion: string,
  exec: (client: RedisClient, name: string, args: unknown[]) => Promise<unknown>,
  take: (jobId: string) => PendingEnd | undefined,
  closing: () => boolean = () => false,
  sent: (jobId: string) => Promise<unknown> | undefined = () => undefined,
): (client: RedisClient, name: string, args: unknown[]) => Promise<unknown> {
  // Scripts of another BullMQ than the one whose completion text is embedded: theirs, as they are.
  if (scriptsVersion !== version) return exec;
  const compared = async (client: RedisClient, name: string, args: unknown[]): Promise<unknown> =>
    comparedWithoutText(await exec(client, name, args));
  const fused = async (client: RedisClient, args: unknown[], end: PendingEnd): Promise<unknown> => {
    if (end.fetchNone && Number(args[COMPLETE_KEYS + FETCH_NEXT_ARG]) === 1) {
      args = [...args];
      args[COMPLETE_KEYS + FETCH_NEXT_ARG] = 0;
    }
    const redis = client as unknown as Redis;
    const bullKeys = args.slice(0, COMPLETE_KEYS) as string[];
    const bullArgs = args.slice(COMPLETE_KEYS) as (string | number)[];
    const next = Number(bullArgs[FETCH_NEXT_ARG]) === 1 ? end.startNext : undefined;
    let reply: unknown[];
    // Past its MAX_BAKED texts, the options' baker's call goes by the plain one (which counts what it sends unbaked).
    const options = END_OPTIONS.split(bullArgs[OPTIONS_ARG]);
    try {
      if (next) {
        const start = next.start();
        const startArgs = startArgsList(start);
        startArgs.push(deferArg(next.hooks));
        // The worker's names in the script's text where they can be: the same reads and writes.
        const baked =
          (options &&
            END_START_OPTIONS_BAKED.call([bullKeys, bullArgs, end.keys, end.args, startArgs, options])) ||
          END_START_BAKED.call([bullKeys, bullArgs, end.keys, end.args, startArgs]);
        reply = (await (baked
          ? baked.script.run(redis, baked.keys, baked.args as (string | number)[])
          : END_COMPLETE_START.run(
              redis,
              bullKeys.concat(end.keys),
              // Joined by `concat` (one copy each), not spread: ~140 arguments a run's end, and a
              // spread not yet optimized walks each array through its iterator, a result object an element.
              bullArgs.concat(end.args, [COMPLETE_KEYS, bullArgs.length], startArgs),
            ))) as unknown[];
      } else {
        const baked =
          (options && END_OPTIONS_BAKED.call([bullKeys, bullArgs, end.keys, end.args, options])) ||
          END_BAKED.call([bullKeys, bullArgs, end.keys, end.args]);
        reply = (await (baked
          ? baked.script.run(redis, baked.keys, baked.args as (string | number)[])
          : END_AND_COMPLETE.run(
              redis,
              bullKeys.concat(end.keys),
              bullArgs.concat(end.args, [COMPLETE_KEYS, bullArgs.length]),
            ))) as unknown[];
      }
    } catch (err) {
      // Whether the end went before the failure or not, its own script makes sure it is written.
      await runEndAlone(redis, end);
      throw err;
    }
    if (next && Array.isArray(reply[1]))
      fetchedAnswer(reply[1], next.started, () => undefined, next.hooks?.moved);
    end.resolve(reply[0]);
    return comparedWithoutText(reply[1]);
  };
  // Not `async`: BullMQ's other calls go as its own promise, and a completion whose answer was sent
  // early gets that answer's promise as it is — no promise and await of the wrapper's own a run
  // (test/bench/README.md, round 48 `engine-timers`).
  return (client, name, args) => {
    if (name !== COMPLETE_COMMAND || args.length <= COMPLETE_KEYS) return exec(client, name, args);
    // A worker whose close began fetches nothing more, decided as the call goes (BullMQ read its
    // state when it built the arguments, a turn earlier): its completion brings no next job.
    if (closing() && Number(args[COMPLETE_KEYS + FETCH_NEXT_ARG]) === 1) {
      args = [...args];
      args[COMPLETE_KEYS + FETCH_NEXT_ARG] = 0;
    }
    const jobId = String(args[COMPLETE_KEYS]);
    const early = sent(jobId);
    if (early) return early;
    const end = take(jobId);
    return end ? fused(client, args, end) : compared(client, name, args);
  };
}
