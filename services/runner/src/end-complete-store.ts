/**
 * A run's end and its job's completion in one script call (one server only): the run's end
 * (`finish-run-release-18`, handed over by the run store's finish through `RunLease.deferEnd`)
 * runs first, then BullMQ's own completion script (moveToFinished-14, the text BullMQ sends) as a
 * local function of `@islet/runs`' `endAndCompleteScript`. Only the completion's call is
 * replaced: BullMQ builds its keys and arguments and reads its own answer as usual.
 *
 * The end is written once whatever happens to the call: it goes first in the script, so a
 * completion that fails after it leaves the end written; a call that fails (or never goes: the
 * processor's job ended without a completion) is followed by the end's own script, which writes
 * nothing a second time (the first final status stands; a lease given back twice frees nothing).
 */
import { endAndCompleteScript, FINISH_RUN_RELEASE } from '@islet/runs';
import type { RedisClient } from 'bullmq';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { version } from 'bullmq/dist/esm/version.js';
import type { Redis } from 'ioredis';

const END_AND_COMPLETE = endAndCompleteScript(moveToFinished.content);
/** The fused script's hash (tests tell its calls from others' by it). */
export const END_AND_COMPLETE_SHA = END_AND_COMPLETE.sha;
/**
 * The name BullMQ's Scripts call the completion by (`execCommand` adds the version), its keys and
 * arguments (the job id first).
 */
const COMPLETE_COMMAND = 'moveToFinished';
const COMPLETE_KEYS = moveToFinished.keys;

/** An end handed to the completion: its call, and who waits for its answer. */
export interface PendingEnd {
  keys: string[];
  args: (string | number)[];
  resolve(answer: unknown): void;
  reject(err: unknown): void;
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
 * (`take(jobId)` hands it over once) runs fused with it. The other calls go as they are.
 */
export function completingExec(
  scriptsVersion: string,
  exec: (client: RedisClient, name: string, args: unknown[]) => Promise<unknown>,
  take: (jobId: string) => PendingEnd | undefined,
): (client: RedisClient, name: string, args: unknown[]) => Promise<unknown> {
  // Scripts of another BullMQ than the one whose completion text is embedded: theirs, as they are.
  if (scriptsVersion !== version) return exec;
  return async (client, name, args) => {
    const end =
      name === COMPLETE_COMMAND && args.length > COMPLETE_KEYS
        ? take(String(args[COMPLETE_KEYS]))
        : undefined;
    if (!end) return exec(client, name, args);
    const redis = client as unknown as Redis;
    const bullArgs = args.slice(COMPLETE_KEYS) as (string | number)[];
    let reply: unknown[];
    try {
      reply = (await END_AND_COMPLETE.run(
        redis,
        [...(args.slice(0, COMPLETE_KEYS) as string[]), ...end.keys],
        [...bullArgs, ...end.args, COMPLETE_KEYS, bullArgs.length],
      )) as unknown[];
    } catch (err) {
      // Whether the end went before the failure or not, its own script makes sure it is written.
      await runEndAlone(redis, end);
      throw err;
    }
    end.resolve(reply[0]);
    return reply[1];
  };
}
