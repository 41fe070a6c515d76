/**
 * The runner's fused scripts with a mode's fixed names in their text: the fused fetch
 * (`fetchLeaseBeginScript`: moveToActive-11 with the run's lease and attempt start) and the run's
 * end with its completion and the next job's start (`endCompleteStartScript`). Sent as arguments,
 * Redis parses each name and makes it a Lua string at every call; in the text they are constants
 * of the compiled script, made once (as the submit's add, admitted-add.ts `bakedAddScript`, round
 * 44 `handoff-terms`). Baked: BullMQ's queue keys and prefix (the call's BullMQ part), and the
 * start's 17 names (handoff-terms.ts `FIXED_START`: the pool's keys, the key parts, the start
 * event's type, channel and wake-up text), taken from its fetched-start-args.ts `FixedStart` (the
 * same object at every fetch of a worker). A call then carries only what differs between workers
 * or calls: BullMQ's other keys and arguments, whatever the script takes between BullMQ's and the
 * start's (the run's end), the start's terms (share, cap, lease ms, journal ttl, stream length,
 * sealed event: per config and seal key, so a text is per mode and layout, as the compact
 * registration's), its time and the deferral's delay.
 *
 * The baked text is the script's own after a header that makes `KEYS` and `ARGV` the very tables
 * the unbaked script is given (locals of those names: the text reads them, not Redis's), so it
 * reads and writes exactly what the unbaked one does; nothing stored changes (a rolling upgrade
 * runs both on one Redis). A variant is found by its start's `FixedStart` (no name of it compared)
 * and BullMQ's names (the queue's: the same strings at every call of a worker). Another worker's
 * names (another prefix, mode or layout) get their own variant; past MAX_BAKED texts of a script,
 * or a call not of its shape, the caller sends the unbaked script as before (undefined).
 */
import { LuaScript } from '@islet/core/lua-script';
import { FETCHED_ARGS, type FetchedStart, type FixedStart } from './fetched-start-args.ts';
import { FIXED_START, luaLiteral } from './handoff-terms.ts';

type Arg = string | number | Buffer;

/** Where a fused call's names are: its first keys and arguments are BullMQ's, its start's last but the delay. */
export interface BakeShape {
  /** BullMQ's keys (the call's first). */
  keys: number;
  /** Which of them (0-based) are the queue's names, baked; the others are carried, in order, first. */
  names: readonly number[];
  /** BullMQ's arguments (the call's first). */
  args: number;
  /**
   * Which of them (0-based) is BullMQ's prefix, baked (the others carried, in order, first); or
   * undefined: all carried as they are (a shape with a middle, whose ARGV is completed in place).
   */
  prefix: number | undefined;
  /**
   * Whether arguments come between BullMQ's and the start's (the run's end: any number of them,
   * carried). Without, the call's length is fixed and the header one table constructor; with, the
   * start's fixed arguments are put into Redis's own ARGV table in place, not copied into a new
   * one with the ~60 arguments before them (measured: a copy cost more than the names saved).
   */
  middle: boolean;
}

/** Baked texts a script may have (one a worker's names): past it, names go as arguments. */
const MAX_BAKED = 16;

const FIXED = new Set<number>(FIXED_START);
/** The start's positions carried (its terms), the time (the last) apart. */
const CARRIED_START: number[] = [];
for (let i = 0; i < FETCHED_ARGS - 1; i++) if (!FIXED.has(i)) CARRIED_START.push(i);

interface Variant {
  fixed: FixedStart;
  /** BullMQ's names: its named keys in order, then its prefix. */
  names: string[];
  /** The start's carried terms (`CARRIED_START` of `fixed`). */
  carried: (string | number)[];
  script: LuaScript;
}

/** A baked call: the variant's script, its keys and its arguments. */
export interface BakedCall {
  script: LuaScript;
  keys: string[];
  args: Arg[];
}

export class BakedScript {
  readonly base: LuaScript;
  private readonly shape: BakeShape;
  private readonly keyName: boolean[];
  private last: Variant | undefined;
  private readonly byFixed = new WeakMap<FixedStart, Variant[]>();
  private readonly texts = new Map<string, LuaScript>();
  private readonly shas = new Set<string>();

  constructor(base: LuaScript, shape: BakeShape) {
    this.base = base;
    this.shape = shape;
    this.keyName = Array.from({ length: shape.keys }, (_, i) => shape.names.includes(i));
  }

  /**
   * The call of the base script with BullMQ's `bullKeys` and `bullArgs`, then `moreKeys`, then
   * `moreArgs` (only with a middle), the start's arguments and `delay`, as its baked variant's.
   * Undefined when the call is not of the shape or MAX_BAKED texts are made: send it unbaked.
   */
  call(
    bullKeys: readonly string[],
    bullArgs: readonly Arg[],
    moreKeys: readonly string[],
    moreArgs: readonly Arg[],
    start: FetchedStart,
    delay: number,
  ): BakedCall | undefined {
    const shape = this.shape;
    if (bullKeys.length !== shape.keys || bullArgs.length !== shape.args) return undefined;
    if (!shape.middle && moreArgs.length > 0) return undefined;
    if (shape.middle && shape.prefix !== undefined) return undefined;
    const variant = this.variant(bullKeys, bullArgs, start.fixed);
    if (!variant) return undefined;
    const keys: string[] = [];
    for (let i = 0; i < shape.keys; i++) if (!this.keyName[i]) keys.push(bullKeys[i] as string);
    let args: Arg[] = bullArgs as Arg[];
    if (shape.prefix !== undefined) {
      args = [];
      for (let i = 0; i < shape.args; i++) if (i !== shape.prefix) args.push(bullArgs[i] as Arg);
    }
    return {
      script: variant.script,
      keys: moreKeys.length > 0 ? keys.concat(moreKeys) : keys,
      args: args.concat(moreArgs, variant.carried, start.nowMs, delay),
    };
  }

  /** Whether `sha` is one of this script's baked variants (tests tell its calls by it). */
  has(sha: unknown): boolean {
    return typeof sha === 'string' && this.shas.has(sha);
  }

  private variant(
    bullKeys: readonly string[],
    bullArgs: readonly Arg[],
    fixed: FixedStart,
  ): Variant | undefined {
    const last = this.last;
    if (last !== undefined && last.fixed === fixed && this.sameNames(last.names, bullKeys, bullArgs))
      return last;
    let made = this.byFixed.get(fixed);
    let found = made?.find((v) => this.sameNames(v.names, bullKeys, bullArgs));
    if (!found) {
      const names: string[] = [];
      for (const i of this.shape.names) names.push(bullKeys[i] as string);
      if (this.shape.prefix !== undefined) {
        const prefix = bullArgs[this.shape.prefix];
        if (typeof prefix !== 'string') return undefined;
        names.push(prefix);
      }
      const startNames: string[] = [];
      for (const i of FIXED_START) {
        const name = fixed.args[i];
        if (typeof name !== 'string') return undefined;
        startNames.push(name);
      }
      const source = `${this.header(names, startNames)}${this.base.source}`;
      let script = this.texts.get(source);
      if (!script) {
        if (this.texts.size >= MAX_BAKED) return undefined;
        script = new LuaScript(source);
        this.texts.set(source, script);
        this.shas.add(script.sha);
      }
      found = { fixed, names, carried: CARRIED_START.map((i) => fixed.args[i] as string | number), script };
      if (!made) {
        made = [];
        this.byFixed.set(fixed, made);
      }
      made.push(found);
    }
    this.last = found;
    return found;
  }

  private sameNames(
    names: readonly string[],
    bullKeys: readonly string[],
    bullArgs: readonly Arg[],
  ): boolean {
    const at = this.shape.names;
    for (let i = 0; i < at.length; i++) if (names[i] !== bullKeys[at[i] as number]) return false;
    return this.shape.prefix === undefined || names[at.length] === bullArgs[this.shape.prefix];
  }

  /** A header that rebuilds the unbaked call's KEYS and ARGV from the names and the carried. */
  private header(names: readonly string[], startNames: readonly string[]): string {
    const shape = this.shape;
    const keys: string[] = [];
    let named = 0;
    let carried = 0;
    for (let i = 0; i < shape.keys; i++)
      keys.push(this.keyName[i] ? luaLiteral(names[named++] as string) : `K[${++carried}]`);
    const keysLine = `local KEYS = {${keys.join(', ')}, unpack(K, ${this.carriedKeys() + 1})}`;
    // The start's 24 as the unbaked call's ARGV holds them: its names as literals, its carried
    // terms, time and the delay from `at(j)`, the j-th carried (1-based) after BullMQ's and the middle.
    const start = (at: (j: number) => string): string[] => {
      const out: string[] = [];
      let fixedAt = 0;
      let carriedAt = 0;
      for (let i = 0; i < FETCHED_ARGS; i++)
        out.push(FIXED.has(i) ? luaLiteral(startNames[fixedAt++] as string) : at(++carriedAt));
      out.push(at(++carriedAt));
      return out;
    };
    if (!shape.middle) {
      const bull: string[] = [];
      carried = 0;
      for (let i = 0; i < shape.args; i++)
        bull.push(i === shape.prefix ? luaLiteral(names[named] as string) : `A[${++carried}]`);
      const after = carried;
      return `local K, A = KEYS, ARGV
${keysLine}
local ARGV = {${bull.concat(start((j) => `A[${after + j}]`)).join(', ')}}
`;
    }
    // In place, in ascending order (each lands in the array part, grown once): the carried tail
    // (the start's terms and time, the delay) read first, then written with the names among them.
    const tail = CARRIED_START.length + 2;
    const c = Array.from({ length: tail }, (_, j) => `c${j + 1}`);
    const reads = c.map((_, j) => `ARGV[p + ${j}]`);
    const writes = start((j) => `c${j}`).map((v, i) => `ARGV[p + ${i}] = ${v}`);
    return `local K = KEYS
${keysLine}
local p = #ARGV - ${tail - 1}
local ${c.join(', ')} = ${reads.join(', ')}
${writes.join('\n')}
`;
  }

  private carriedKeys(): number {
    return this.shape.keys - this.shape.names.length;
  }
}
