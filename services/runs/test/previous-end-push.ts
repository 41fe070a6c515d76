/**
 * A runner of the release before round 41 (`push-lean`) for the tests of a pushed end's readers:
 * its end script pushes `<id> end [record, journal]`, the whole record as the end leaves it (less
 * the write's `timings`), where this release's pushes `<id> end2` with only the fields the run's
 * execution and end wrote. Made from this release's `finish-run-14` with its END_FIELDS taking
 * every name but `timings` and the previous tag: the same loops, so the same record in the same
 * order as the previous release's (includes/transition.lua before round 41).
 */
import { LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { FINISH_RUN } from '../src/run-store-scripts.ts';

const fields = /local END_FIELDS = \{[^}]*\}/;
if (!fields.test(FINISH_RUN.source) || !FINISH_RUN.source.includes("' end2 '"))
  throw new Error("the end script's END_FIELDS or its tag moved: mend previous-end-push.ts");

/** The previous release's end script (one server: `finish-run-14`). */
export const PREVIOUS_FINISH_RUN = new LuaScript(
  FINISH_RUN.source
    .replace(
      fields,
      'local END_FIELDS = setmetatable({timings = false}, {__index = function() return true end})',
    )
    .replace("' end2 '", "' end '"),
);

/**
 * Until the returned function is called, `redis`'s end script calls (`finish-run-14`, as the run
 * store sends them: EVALSHA through `sendCommand`, core lua-script.ts) run the previous release's
 * script instead, with the same keys and arguments.
 */
export async function endLikePreviousRelease(redis: Redis): Promise<() => void> {
  await redis.script('LOAD', PREVIOUS_FINISH_RUN.source);
  const send = redis.sendCommand;
  redis.sendCommand = function (this: Redis, command: Parameters<Redis['sendCommand']>[0]) {
    const c = command as unknown as { name: string; args: unknown[] };
    if (c.name === 'evalsha' && c.args[0] === FINISH_RUN.sha) c.args[0] = PREVIOUS_FINISH_RUN.sha;
    return send.call(this, command);
  } as Redis['sendCommand'];
  return () => {
    redis.sendCommand = send;
  };
}
