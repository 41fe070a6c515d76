/**
 * The run package's Lua scripts, one `.lua` file each under `lua/`, named with the number of keys
 * it takes (`claim-1.lua`); each file's header lists its KEYS and ARGV. A line
 * `--- @include "<name>"` inlines `lua/includes/<name>.lua` once per script (shared local
 * functions), and `${NAME}` is replaced by a value the caller passes (a constant shared with
 * TypeScript). Every script touches one hash slot except `admit-and-create-24`, `finish-run-14`,
 * `finish-run-release-19`, `lease-and-begin-9` and `fetch-lease-begin-11` (one server only; the
 * last runs after BullMQ's fetch script, put before it by `fetchLeaseBeginScript`, or after its
 * completion by `endCompleteStartScript`). Sources go out compacted
 * (`compactLua`): the files keep their comments, EVAL and EVALSHA send and hash less.
 */
import { readFileSync } from 'node:fs';
import { LuaScript } from '@islet/core/lua-script';

const LUA_DIR = new URL('./lua/', import.meta.url);
const INCLUDE = /^--- @include "([a-z0-9-]+)"$/gm;
const PARAM = /\$\{([A-Z0-9_]+)\}/g;

function read(path: string): string {
  return readFileSync(new URL(path, LUA_DIR), 'utf8');
}

function expand(source: string, included: Set<string>): string {
  return source.replace(INCLUDE, (_line, name: string) => {
    if (included.has(name)) return '';
    included.add(name);
    return expand(read(`includes/${name}.lua`), included).trimEnd();
  });
}

/**
 * A script as sent: without its comment lines, indentation and blank lines, so an EVAL sends (and
 * Redis hashes and compiles) less, and its SHA is that of what is sent. Only whole-line comments
 * go: no script has a string spanning lines (`[[ ]]`), so a line starting `--` is never in one.
 */
export function compactLua(source: string): string {
  return source
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('--'))
    .join('\n');
}

/**
 * The source of `lua/<name>.lua` with its includes inlined and its parameters filled in, compacted
 * (`compactLua`).
 */
export function luaSource(name: string, params: Record<string, string | number> = {}): string {
  const used = new Set<string>();
  const source = expand(read(`${name}.lua`), new Set()).replace(PARAM, (_m, key: string) => {
    const value = params[key];
    if (value === undefined) throw new Error(`lua/${name}.lua: no value for \${${key}}`);
    used.add(key);
    return String(value);
  });
  for (const key of Object.keys(params)) {
    if (!used.has(key)) throw new Error(`lua/${name}.lua: parameter ${key} is not used`);
  }
  return compactLua(source);
}

/** `lua/<name>.lua` as a script sent by its hash (see LuaScript). */
export function loadScript(name: string, params: Record<string, string | number> = {}): LuaScript {
  return new LuaScript(luaSource(name, params));
}
