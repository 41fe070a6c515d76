/**
 * The run store's Lua scripts (`lua/*.lua`, each file's header lists its keys and arguments):
 * each touches one hash slot (a run's `{runId}` keys or a tenant's `{t:<tenant>}` keys, see
 * core's keys.ts), so each is one atomic step on a Redis Cluster too; `admit-and-create-24`,
 * `finish-run-14` and `finish-run-release-19` (also the pool's slot) span both and run only on a
 * server that checks no slots.
 */
import { ownerFreshLua } from '@islet/core';
import { countInWindowLua, LuaScript } from '@islet/core/lua-script';
import { loadScript, luaSource } from './lua-scripts.ts';
import { FINISH_TENANT_PARAMS, INDEX_CREATE_PARAMS } from './run-index-scripts.ts';

/**
 * The most an end message carries of a run's record and journal (their fields' lengths summed),
 * bytes. Every gateway replica receives every end message, and on a Redis Cluster every node
 * relays it: a larger run's end goes out as its bare id and its waiter reads the run instead.
 */
const END_PUSH_MAX_BYTES = 32 * 1024;
/**
 * The least a pushed end carries (sized as END_PUSH_MAX_BYTES) as `end3` (its journal's entries as
 * JSON values, includes/transition.lua): below it (a call or two) the build of the message in Lua
 * costs Redis more than cjson's escaping of it in `end2` saves; from it up to the push's cap it
 * costs less (callgrind: −2 % at 3 calls, −14 % at 20, −15 % at 80; test/bench/README.md round 43
 * `format-43`).
 */
const END3_MIN_BYTES = 1024;

/** A submit's rate-limit count, in the same counter the gateway's own counts use. */
const COUNT_IN_WINDOW = countInWindowLua('KEYS[6]', 'counted');
/** How long the admission's refresh of a session's owner stands (its ttl is ARGV[5]). */
const OWNER_FRESH = ownerFreshLua('ARGV[5]');

export const TRANSITION = loadScript('transition-4', { END_PUSH_MAX_BYTES, END3_MIN_BYTES });
export const FINISH_RUN = loadScript('finish-run-14', {
  END_PUSH_MAX_BYTES,
  END3_MIN_BYTES,
  ...FINISH_TENANT_PARAMS,
});
export const FINISH_RUN_RELEASE = new LuaScript(finishRunReleaseSource('nil'));

/**
 * `finish-run-release-19`'s text; `poolSeen` names the table its release notes a waiting key read
 * empty in ('nil': none), which a lease acquire later in the same script reads instead of the key
 * (`endCompleteStartScript`).
 */
export function finishRunReleaseSource(poolSeen: string): string {
  return luaSource('finish-run-release-19', {
    END_PUSH_MAX_BYTES,
    END3_MIN_BYTES,
    ...FINISH_TENANT_PARAMS,
    POOL_SEEN: poolSeen,
  });
}

export const CREATE_TENANT = loadScript('create-tenant-8', INDEX_CREATE_PARAMS);
/** The admission's parameters (admit-tenant-21, admit-and-create-24). */
export const ADMIT_PARAMS = { COUNT_IN_WINDOW, OWNER_FRESH, ...INDEX_CREATE_PARAMS };
export const ADMIT_TENANT = loadScript('admit-tenant-21', ADMIT_PARAMS);
export const CREATE_RUN = loadScript('create-run-2');
export const ADMIT_AND_CREATE = loadScript('admit-and-create-24', ADMIT_PARAMS);
export const IDEM_RELEASE = loadScript('idem-release-1');
export const IDEM_TAKE_OVER = loadScript('idem-take-over-2');
export const IN_FLIGHT_COUNT = loadScript('in-flight-count-2');
export const RESERVE_SKILL = loadScript('reserve-skill-2');
