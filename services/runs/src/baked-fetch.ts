/**
 * The runner's fused fetch (lease-scripts.ts `fetchLeaseBeginScript`: moveToActive-11 with the
 * run's lease and attempt start) with a mode's fixed names in its text: moveToActive-11's 11 keys,
 * BullMQ's prefix and the start's 17 names (the pool's keys, the key parts, the start event's
 * type, channel and wake-up text: handoff-terms.ts `FIXED_START`). Sent as arguments, Redis parses
 * each and makes it a Lua string at every fetch; in the text they are constants of the compiled
 * script, made once (as the submit's add, admitted-add.ts `bakedAddScript`, round 44
 * `handoff-terms`). A fetch then carries only what differs: BullMQ's time and packed options, the
 * lease's share, cap and length, the journal's expiry, the stream's length, the sealed event, the
 * start's time and the deferral's delay.
 *
 * The baked text is the fused script's own, after a header that makes `KEYS` and `ARGV` the very
 * tables the unbaked script is given (locals of those names: the text reads them, not Redis's), so
 * it reads and writes exactly what the unbaked one does; nothing stored changes (a rolling upgrade
 * runs both on one Redis). The names are those the fetch brings: a runner whose names are
 * another's (another prefix, another layout) gets its own variant, and past MAX_BAKED variants of
 * a script, or a call not of the fused fetch's shape, the unbaked script as before (undefined).
 */
import { LuaScript } from '@islet/core/lua-script';
import { FETCHED_ARGS } from './fetched-start-args.ts';
import { FIXED_START, luaLiteral } from './handoff-terms.ts';

/** moveToActive-11's keys and its own arguments (prefix, time, packed options). */
const FETCH_KEYS = 11;
const BULL_ARGS = 3;
/** Arguments of a fused fetch: BullMQ's, the start's, the deferral's delay. */
const FETCH_ARGS = BULL_ARGS + FETCHED_ARGS + 1;
/** Baked variants a script may have (one a mode's names): past it, names go as arguments. */
const MAX_BAKED = 16;

const FIXED = new Set<number>(FIXED_START);
/** ARGV positions (0-based) the baked call still carries: BullMQ's time and options, the start's not fixed, the delay. */
const CARRIED: number[] = [1, 2];
for (let i = 0; i < FETCHED_ARGS; i++) if (!FIXED.has(i)) CARRIED.push(BULL_ARGS + i);
CARRIED.push(FETCH_ARGS - 1);

type Arg = string | number | Buffer;

interface Variant {
  names: string[];
  script: LuaScript;
}
const variants = new WeakMap<LuaScript, Map<string, Variant>>();
const lastUsed = new WeakMap<LuaScript, Variant>();
const bakedShas = new Set<string>();

/** The fixed names of a fused fetch's call (keys, prefix, the start's names), or undefined when not its shape. */
function namesOf(keys: readonly string[], args: readonly Arg[]): string[] | undefined {
  if (keys.length !== FETCH_KEYS || args.length !== FETCH_ARGS) return undefined;
  const names = keys.slice();
  const prefix = args[0];
  if (typeof prefix !== 'string') return undefined;
  names.push(prefix);
  for (const i of FIXED_START) {
    const name = args[BULL_ARGS + i];
    if (typeof name !== 'string') return undefined;
    names.push(name);
  }
  return names;
}

function sameNames(names: readonly string[], keys: readonly string[], args: readonly Arg[]): boolean {
  if (keys.length !== FETCH_KEYS || args.length !== FETCH_ARGS) return false;
  for (let i = 0; i < FETCH_KEYS; i++) if (names[i] !== keys[i]) return false;
  if (names[FETCH_KEYS] !== args[0]) return false;
  let at = FETCH_KEYS + 1;
  for (const i of FIXED_START) if (names[at++] !== args[BULL_ARGS + i]) return false;
  return true;
}

/** `base`'s text after a header that rebuilds its KEYS and ARGV from `names` and the carried arguments. */
function bakedSource(base: LuaScript, names: readonly string[]): string {
  const argv: string[] = [luaLiteral(names[FETCH_KEYS] ?? '')];
  let carried = 1;
  let fixedAt = FETCH_KEYS + 1;
  for (let i = 1; i < FETCH_ARGS; i++) {
    const isFixed = i >= BULL_ARGS && i < BULL_ARGS + FETCHED_ARGS && FIXED.has(i - BULL_ARGS);
    argv.push(isFixed ? luaLiteral(names[fixedAt++] ?? '') : `ARGV[${carried++}]`);
  }
  return `local KEYS = {${names.slice(0, FETCH_KEYS).map(luaLiteral).join(', ')}}
local ARGV = {${argv.join(', ')}}
${base.source}`;
}

/**
 * The call of `base` (the fused fetch) with `keys` and `args` (its 11 keys; BullMQ's 3 arguments,
 * the start's 24, the delay) as its baked variant's: no keys, only the carried arguments. Undefined
 * when the call is not of that shape or MAX_BAKED variants of `base` are made: send it unbaked.
 */
export function bakedFetchCall(
  base: LuaScript,
  keys: readonly string[],
  args: readonly Arg[],
): { script: LuaScript; args: Arg[] } | undefined {
  let variant = lastUsed.get(base);
  if (!variant || !sameNames(variant.names, keys, args)) {
    const names = namesOf(keys, args);
    if (!names) return undefined;
    let made = variants.get(base);
    const id = names.join('\n');
    variant = made?.get(id);
    if (!variant) {
      if ((made?.size ?? 0) >= MAX_BAKED) return undefined;
      if (!made) {
        made = new Map();
        variants.set(base, made);
      }
      variant = { names, script: new LuaScript(bakedSource(base, names)) };
      made.set(id, variant);
      bakedShas.add(variant.script.sha);
    }
    lastUsed.set(base, variant);
  }
  const carried: Arg[] = new Array(CARRIED.length);
  for (let i = 0; i < CARRIED.length; i++) carried[i] = args[CARRIED[i] ?? 0] as Arg;
  return { script: variant.script, args: carried };
}

/** Whether `sha` is a baked fused fetch's (tests tell its calls by it). */
export function isBakedFetchSha(sha: unknown): boolean {
  return typeof sha === 'string' && bakedShas.has(sha);
}
