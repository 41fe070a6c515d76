/**
 * The next release's end script for the tests and benches of this release's reader of it (round 42
 * `format-next`): a waited run's end pushed as `<id> end3 [record, journal]`, where `end2` pushes
 * the journal's values as JSON strings: a call entry's value (a field not starting with `#`) and a
 * layout-2 source's (`#s:<id>`) are the stored JSON texts spliced into the message as they are,
 * so the message holds no escaped copy of them and its reader parses it once (call-journal.ts
 * `callsOfPushed`); the record and the other fields as `end2` has them. Made from this release's
 * `finish-run-14` with only the message's build replaced. This release reads `end3`; only the next
 * one may write it (the two-release rule): not shipped in any script here.
 */
import { LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { FINISH_RUN } from '../src/run-store-scripts.ts';

const build = /message = ARGV\[a\] \.\. ' end2 ' \.\. cjson\.encode\(\{run, journal\}\)/;
if (!build.test(FINISH_RUN.source)) throw new Error("the end script's push moved: mend next-end-push.ts");

/** The next release's end script (one server: `finish-run-14`). */
export const NEXT_FINISH_RUN = new LuaScript(
  FINISH_RUN.source.replace(
    build,
    `local parts, n = {}, 0
      -- One concat of pieces: the names (digits, #attempt, #seq, #s:<base64url id>) and the
      -- counters' values (digits) need no escape; an entry's and a source's stored JSON goes as is.
      for i = 1, #journal - 1, 2 do
        local name = journal[i]
        parts[n + 1] = '"'
        parts[n + 2] = name
        if string.byte(name, 1) ~= 35 or string.sub(name, 1, 3) == '#s:' then
          parts[n + 3] = '",'
          parts[n + 4] = journal[i + 1]
          parts[n + 5] = ','
        else
          parts[n + 3] = '","'
          parts[n + 4] = journal[i + 1]
          parts[n + 5] = '",'
        end
        n = n + 5
      end
      if n > 0 then parts[n] = parts[n] == ',' and '' or '"' end
      message = ARGV[a] .. ' end3 [' .. cjson.encode(run) .. ',[' .. table.concat(parts) .. ']]'`,
  ),
);

/**
 * Until the returned function is called, `redis`'s end script calls (`finish-run-14` as the run
 * store sends them, EVALSHA through `sendCommand`) run the next release's script instead.
 */
export async function endLikeNextRelease(redis: Redis): Promise<() => void> {
  await redis.script('LOAD', NEXT_FINISH_RUN.source);
  const send = redis.sendCommand;
  redis.sendCommand = function (this: Redis, command: Parameters<Redis['sendCommand']>[0]) {
    const c = command as unknown as { name: string; args: unknown[] };
    if (c.name === 'evalsha' && c.args[0] === FINISH_RUN.sha) c.args[0] = NEXT_FINISH_RUN.sha;
    return send.call(this, command);
  } as Redis['sendCommand'];
  return () => {
    redis.sendCommand = send;
  };
}
