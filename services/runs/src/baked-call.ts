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
  /** Its positions (0-based) holding names, written into the text. */
  names: readonly number[];
  /** It ends in a run of any length (one part of the arguments at most). */
  rest?: boolean;
}

/** A baked call: the text's script, its keys and its arguments. */
export interface BakedCall {
  script: LuaScript;
  keys: string[];
  args: Arg[];
}

/** Baked texts a script may have (one a worker's names): past it, names go as arguments. */
const MAX_BAKED = 16;

export class BakedScript {
  readonly base: LuaScript;
  private readonly body: string;
  private readonly parts: readonly PartShape[];
  private readonly isName: boolean[][];
  private readonly texts = new Map<string, LuaScript>();
  private readonly shas = new Set<string>();
  private last: { names: Arg[]; script: LuaScript } | undefined;

  /** `base`: the unbaked script; `body`: its text after its parts are made; `parts` in the call's order. */
  constructor(base: LuaScript, body: string, parts: readonly PartShape[]) {
    this.base = base;
    this.body = body;
    this.parts = parts;
    this.isName = parts.map((p) => Array.from({ length: p.length }, (_, i) => p.names.includes(i)));
    if (parts.filter((p) => p.rest).length > 1 || parts.some((p) => p.rest && p.keys))
      throw new Error('one part of the arguments at most ends in a run');
  }

  /** The call whose parts hold `values` (in the parts' order), baked; undefined: send it unbaked. */
  call(values: readonly (readonly Arg[])[]): BakedCall | undefined {
    const parts = this.parts;
    if (values.length !== parts.length) return undefined;
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p] as PartShape;
      const n = (values[p] as readonly Arg[]).length;
      if (part.rest ? n < part.length : n !== part.length) return undefined;
    }
    const script = this.script(values);
    if (!script) return undefined;
    const keys: string[] = [];
    const args: Arg[] = [];
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p] as PartShape;
      const v = values[p] as readonly Arg[];
      const isName = this.isName[p] as boolean[];
      const to = (part.keys ? keys : args) as Arg[];
      for (let i = 0; i < part.length; i++) if (!isName[i]) to.push(v[i] as Arg);
      for (let i = part.length; i < v.length; i++) to.push(v[i] as Arg);
    }
    return { script, keys, args };
  }

  /** Whether `sha` is one of this script's baked texts (tests tell its calls by it). */
  has(sha: unknown): boolean {
    return typeof sha === 'string' && this.shas.has(sha);
  }

  /** The text for the call's names: the last call's when they are the same, else found or made. */
  private script(values: readonly (readonly Arg[])[]): LuaScript | undefined {
    const last = this.last;
    if (last) {
      let at = 0;
      let same = true;
      for (let p = 0; same && p < this.parts.length; p++)
        for (const i of (this.parts[p] as PartShape).names)
          if ((values[p] as readonly Arg[])[i] !== last.names[at++]) {
            same = false;
            break;
          }
      if (same) return last.script;
    }
    const names: Arg[] = [];
    for (let p = 0; p < this.parts.length; p++)
      for (const i of (this.parts[p] as PartShape).names) {
        const name = (values[p] as readonly Arg[])[i] as Arg;
        if (typeof name !== 'string' && typeof name !== 'number') return undefined;
        names.push(name);
      }
    const id = JSON.stringify(names);
    let script = this.texts.get(id);
    if (!script) {
      if (this.texts.size >= MAX_BAKED) return undefined;
      script = new LuaScript(`${this.header(names)}${this.body}`);
      this.texts.set(id, script);
      this.shas.add(script.sha);
    }
    this.last = { names, script };
    return script;
  }

  /**
   * Each part as one constructor: its names as literals, the carried as the call's keys (`K`) and
   * arguments (`A`) in order; arguments after a run are counted from the end (`z`, their number).
   */
  private header(names: readonly Arg[]): string {
    const parts = this.parts;
    let after = 0;
    let run = false;
    for (const part of parts) {
      if (part.keys) continue;
      if (run) after += part.length - part.names.length;
      if (part.rest) run = true;
    }
    let named = 0;
    let key = 0;
    let arg = 0;
    let fromEnd = after;
    let pastRun = false;
    const lines = [run ? 'local K, A = KEYS, ARGV\nlocal z = #A' : 'local K, A = KEYS, ARGV'];
    parts.forEach((part, p) => {
      const entries: string[] = [];
      for (let i = 0; i < part.length; i++) {
        if (this.isName[p]?.[i]) entries.push(luaLiteral(String(names[named++])));
        else if (part.keys) entries.push(`K[${++key}]`);
        else if (pastRun) {
          const back = --fromEnd;
          entries.push(back === 0 ? 'A[z]' : `A[z - ${back}]`);
        } else entries.push(`A[${++arg}]`);
      }
      if (part.rest) {
        entries.push(`unpack(A, ${arg + 1}, z - ${after})`);
        pastRun = true;
      }
      lines.push(`local ${part.name} = {${entries.join(', ')}}`);
    });
    return `${lines.join('\n')}\n`;
  }
}
