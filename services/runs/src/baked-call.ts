/**
 * A fused script sent with a worker's names in its text, not as arguments: Redis parses each
 * argument and makes it a Lua string at every call; a literal in the text is a constant of the
 * compiled script, made once (as the submit's add, admitted-add.ts `bakedAddScript`, round 44
 * `handoff-terms`). The runner's fused fetch (`fetchLeaseBeginScript`) and its run's end with the
 * completion (`endAndCompleteScript`) and the next job's start (`endCompleteStartScript`) go so.
 *
 * A script's body reads its keys and arguments from a few tables, its parts (the fetch's: KEYS and
 * ARGV; the end's: BullMQ's keys and arguments, the end's, the start's). The unbaked text makes
 * them from the call's KEYS and ARGV; a baked text starts with a header that makes each part as
 * one table constructor, its names as literals and the rest from what the call carries, in order.
 * The body after it is the unbaked one's, given the very same tables: the same reads and writes,
 * nothing stored changes (a rolling upgrade runs both on one Redis).
 *
 * A part's names are positions whose value is the same at every call of a worker: a queue's or a
 * pool's key, BullMQ's prefix, a channel, a key's text around a tenant or a run id (the values a
 * mode, queue or prefix makes; never a tenant's or a run's own string, which the call carries).
 * Terms that differ per config or seal key (share, cap, lease ms, a sealed event) are carried too:
 * a text per test runner's seal key would fill MAX_BAKED (round 45). A call's names select its
 * text (the last one's compared first); another worker's names make another; past MAX_BAKED texts
 * of a script, or a call whose parts are not of their shape, the caller sends the unbaked script.
 *
 * A part's derived entries are made in the text from an entry the call carries: a run's keys from
 * its id, a tenant's from its name, a copy of the job id (`'islet:run:{' .. A[1] .. '}'`; round 47
 * `end-keys`). The text after the carried value is the shape's (a key's fixed end), the text
 * before it a name (a prefix, a pool's mode): a call is baked only when each such entry is exactly
 * `before .. value .. after`, else it goes unbaked. Redis takes these keys undeclared, as the
 * names: the fused calls run on one server only (a Cluster's end and fetch are not fused).
 */
import { LuaScript } from '@islet/core/lua-script';
import { luaLiteral } from './handoff-terms.ts';

type Arg = string | number | Buffer;

/** One part of a fused call: a table its body reads (a local of that name). */
export interface PartShape {
  /** The local's name in the text. */
  name: string;
  /** Of the call's keys (else of its arguments). */
  keys: boolean;
  /** Its length; with `rest`, the least: the values past it are carried as they are, at its end. */
  length: number;
  /** Its positions (0-based) holding names, written into the text (a Buffer name as its bytes). */
  names: readonly number[];
  /**
   * Its positions (0-based) neither carried nor named: `false` in the text, the body makes them
   * where it reads them (the end's packed options, from their parts: end-options.ts).
   */
  unsent?: readonly number[];
  /** It ends in a run of any length (one part of the arguments at most). */
  rest?: boolean;
  /** Its positions made in the text from a carried entry (never a name's or another derived's). */
  derived?: readonly DerivedEntry[];
}

/** An entry made in the text as `before .. <a carried entry> .. after`, `before` a name. */
export interface DerivedEntry {
  /** Its position (0-based) in its part. */
  at: number;
  /** The carried entry it is made from: a part's name and a position (before its run) in it. */
  from: readonly [part: string, at: number];
  /** The text after the carried value: a key's fixed end (`}:events`), '' for a copy. */
  after: string;
  /** The text before it when fixed ('' for a copy); absent, a name read from the call (a prefix, a mode). */
  before?: string;
}

/** A derived entry as the baker reads it: where it is, where its value comes from. */
interface Derivation {
  part: number;
  at: number;
  fromPart: number;
  fromAt: number;
  after: string;
  before: string | undefined;
}

/** A baked call: the text's script, its keys and its arguments. */
export interface BakedCall {
  script: LuaScript;
  keys: string[];
  args: Arg[];
}

/** A name as a Lua literal: a Buffer's bytes as they are, else the UTF-8 of its text. */
function literal(name: Arg): string {
  if (!Buffer.isBuffer(name)) return luaLiteral(String(name));
  let out = "'";
  for (const b of name)
    out +=
      b >= 0x20 && b < 0x7f && b !== 0x27 && b !== 0x5c
        ? String.fromCharCode(b)
        : `\\${String(b).padStart(3, '0')}`;
  return `${out}'`;
}

/** Baked texts a script may have (one a worker's names): past it, names go as arguments. */
const MAX_BAKED = 16;

/**
 * Why a call went unbaked: `shape`, a part not of its length or a name not text; `derived`, a
 * derived entry not `before .. value .. after`; `texts`, its names would make a text past MAX_BAKED.
 */
export type UnbakedReason = 'shape' | 'derived' | 'texts';

export class BakedScript {
  readonly base: LuaScript;
  private readonly body: string;
  private readonly parts: readonly PartShape[];
  /** Each part's positions not carried: a name or a derived entry. */
  private readonly notCarried: boolean[][];
  private readonly derivations: Derivation[] = [];
  private readonly texts = new Map<string, LuaScript>();
  private readonly shas = new Set<string>();
  private last: { names: Arg[]; befores: string[]; script: LuaScript } | undefined;
  /**
   * Calls answered "send it unbaked", by reason, since the process started (round 48: the runner
   * reports its ends' as `islet_runner_end_unbaked_total`; nothing else showed a config that
   * defeats the baking).
   */
  readonly unbaked: Record<UnbakedReason, number> = { shape: 0, derived: 0, texts: 0 };

  /** `base`: the unbaked script; `body`: its text after its parts are made; `parts` in the call's order. */
  constructor(base: LuaScript, body: string, parts: readonly PartShape[]) {
    this.base = base;
    this.body = body;
    this.parts = parts;
    this.notCarried = parts.map((p) =>
      Array.from({ length: p.length }, (_, i) => p.names.includes(i) || (p.unsent?.includes(i) ?? false)),
    );
    if (parts.filter((p) => p.rest).length > 1 || parts.some((p) => p.rest && p.keys))
      throw new Error('one part of the arguments at most ends in a run');
    parts.forEach((p, part) => {
      for (const d of p.derived ?? []) {
        const fromPart = parts.findIndex((q) => q.name === d.from[0]);
        const fromAt = d.from[1];
        const notCarried = this.notCarried[part] as boolean[];
        if (d.at < 0 || d.at >= p.length || notCarried[d.at])
          throw new Error(`${p.name}[${d.at}]: a derived entry is a position of its own, not a name's`);
        notCarried[d.at] = true;
        this.derivations.push({ part, at: d.at, fromPart, fromAt, after: d.after, before: d.before });
      }
    });
    for (const d of this.derivations) {
      const from = parts[d.fromPart];
      const fromNames = this.notCarried[d.fromPart];
      if (!from || !fromNames || d.fromAt < 0 || d.fromAt >= from.length || fromNames[d.fromAt])
        throw new Error('a derived entry is made from an entry the call carries');
    }
  }

  /** The call whose parts hold `values` (in the parts' order), baked; undefined: send it unbaked. */
  call(values: readonly (readonly Arg[])[]): BakedCall | undefined {
    const parts = this.parts;
    if (values.length !== parts.length) return this.notBaked('shape');
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p] as PartShape;
      const n = (values[p] as readonly Arg[]).length;
      if (part.rest ? n < part.length : n !== part.length) return this.notBaked('shape');
    }
    const script = this.script(values);
    if (!script) return undefined;
    const keys: string[] = [];
    const args: Arg[] = [];
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p] as PartShape;
      const v = values[p] as readonly Arg[];
      const notCarried = this.notCarried[p] as boolean[];
      const to = (part.keys ? keys : args) as Arg[];
      for (let i = 0; i < part.length; i++) if (!notCarried[i]) to.push(v[i] as Arg);
      for (let i = part.length; i < v.length; i++) to.push(v[i] as Arg);
    }
    return { script, keys, args };
  }

  /** Counts an unbaked answer by its reason; undefined (the answer). */
  private notBaked(why: UnbakedReason): undefined {
    this.unbaked[why]++;
    return undefined;
  }

  /** Whether `sha` is one of this script's baked texts (tests tell its calls by it). */
  has(sha: unknown): boolean {
    return typeof sha === 'string' && this.shas.has(sha);
  }

  /**
   * The text for the call's names and its derived entries' `before`s: the last call's when they
   * are the same, else found or made; undefined (counted) when a name is not text, a derived entry
   * is not its concatenation, or the text would be one past MAX_BAKED.
   */
  private script(values: readonly (readonly Arg[])[]): LuaScript | undefined {
    const last = this.last;
    if (last && this.sameNames(values, last.names) && this.sameBefores(values, last.befores))
      return last.script;
    const names: Arg[] = [];
    for (let p = 0; p < this.parts.length; p++)
      for (const i of (this.parts[p] as PartShape).names) {
        const name = (values[p] as readonly Arg[])[i] as Arg;
        if (typeof name !== 'string' && typeof name !== 'number' && !Buffer.isBuffer(name))
          return this.notBaked('shape');
        names.push(name);
      }
    const befores: string[] = [];
    for (const d of this.derivations) {
      const value = (values[d.part] as readonly Arg[])[d.at];
      const from = (values[d.fromPart] as readonly Arg[])[d.fromAt];
      if (typeof value !== 'string' || typeof from !== 'string') return this.notBaked('derived');
      const at = value.length - d.after.length - from.length;
      if (at < 0 || !value.endsWith(d.after) || !value.startsWith(from, at)) return this.notBaked('derived');
      if (d.before !== undefined && (at !== d.before.length || !value.startsWith(d.before)))
        return this.notBaked('derived');
      befores.push(value.slice(0, at));
    }
    const id = JSON.stringify([names, befores]);
    let script = this.texts.get(id);
    if (!script) {
      if (this.texts.size >= MAX_BAKED) return this.notBaked('texts');
      script = new LuaScript(`${this.header(names, befores)}${this.body}`);
      this.texts.set(id, script);
      this.shas.add(script.sha);
    }
    this.last = { names, befores, script };
    return script;
  }

  /** Whether the call's names are `names`, in order. */
  private sameNames(values: readonly (readonly Arg[])[], names: readonly Arg[]): boolean {
    let at = 0;
    for (let p = 0; p < this.parts.length; p++)
      for (const i of (this.parts[p] as PartShape).names)
        if ((values[p] as readonly Arg[])[i] !== names[at++]) return false;
    return true;
  }

  /**
   * Whether each derived entry of the call is `befores[k] .. its carried value .. after`, compared
   * as one string with the three joined. Not `startsWith`/`endsWith` on the entry: optimized, those
   * compare a character at a time through the entry's rope (the caller's keys are joined strings),
   * 33.7 k instructions an end's call of its ~15 entries, 2.5 % of the runner's instructions a run,
   * where `===` flattens the entry once (which its write would) and compares the bytes (round 52
   * `runner-own`, test/bench/runner-callgrind.ts).
   */
  private sameBefores(values: readonly (readonly Arg[])[], befores: readonly string[]): boolean {
    const derivations = this.derivations;
    for (let k = 0; k < derivations.length; k++) {
      const d = derivations[k] as Derivation;
      const value = (values[d.part] as readonly Arg[])[d.at];
      const from = (values[d.fromPart] as readonly Arg[])[d.fromAt];
      if (typeof value !== 'string' || typeof from !== 'string' || value !== `${befores[k]}${from}${d.after}`)
        return false;
    }
    return true;
  }

  /**
   * Each part as one constructor: its names as literals, the carried as the call's keys (`K`) and
   * arguments (`A`) in order, a derived entry as its `before`, its carried entry and its `after`
   * joined; arguments after a run are counted from the end (`z`, their number).
   */
  private header(names: readonly Arg[], befores: readonly string[]): string {
    const parts = this.parts;
    let after = 0;
    let run = false;
    for (const [p, part] of parts.entries()) {
      if (part.keys) continue;
      if (run) after += (this.notCarried[p] as boolean[]).filter((x) => !x).length;
      if (part.rest) run = true;
    }
    let named = 0;
    let key = 0;
    let arg = 0;
    let fromEnd = after;
    let pastRun = false;
    // Each entry's expression; a derived entry's is filled after, from its carried entry's.
    const entries = parts.map((part, p) => {
      const own: string[] = [];
      for (let i = 0; i < part.length; i++) {
        if (part.names.includes(i)) own.push(literal(names[named++] as Arg));
        else if (part.unsent?.includes(i)) own.push('false');
        else if (this.notCarried[p]?.[i]) own.push('');
        else if (part.keys) own.push(`K[${++key}]`);
        else if (pastRun) {
          const back = --fromEnd;
          own.push(back === 0 ? 'A[z]' : `A[z - ${back}]`);
        } else own.push(`A[${++arg}]`);
      }
      if (part.rest) {
        own.push(`unpack(A, ${arg + 1}, z - ${after})`);
        pastRun = true;
      }
      return own;
    });
    this.derivations.forEach((d, k) => {
      const joined = [befores[k] as string, d.after].map((t) => (t ? luaLiteral(t) : ''));
      const from = entries[d.fromPart]?.[d.fromAt] as string;
      (entries[d.part] as string[])[d.at] = [joined[0], from, joined[1]].filter((t) => t).join(' .. ');
    });
    const lines = [run ? 'local K, A = KEYS, ARGV\nlocal z = #A' : 'local K, A = KEYS, ARGV'];
    parts.forEach((part, p) => {
      lines.push(`local ${part.name} = {${(entries[p] as string[]).join(', ')}}`);
    });
    return `${lines.join('\n')}\n`;
  }
}
