/**
 * A submit's admission and its job's add in one script (one server only: it spans the tenant's,
 * the run's, the pool's and the queue's slots). The admission and record (`admit-and-create-24`)
 * run first; an admitted run's job is counted in its pool's queued counts and added by the add's
 * own script text (the gateway's hand-off add) in the same call. A refused admission adds and
 * counts nothing, so nothing is taken back. Being one script, it goes as EVALSHA: a NOSCRIPT
 * means nothing of it ran, and its EVAL retry carries the add along, so the add can never run
 * un-admitted (the reason a separate admission went as EVAL, its 3.2 KB text every submit). And
 * the add's own top-level command (EVALSHA) is gone: one command less a run. When the add hands its
 * job to an idle worker, the run's attempt start in it reads the record the admission just created
 * from the admission's answer (`CREATED_RUN`), not by HGETALL, and writes it, its own fields in
 * place: one HSET of the record where the create's and the start's were two (`DEFER_RECORD`; a
 * record no start took is written at the script's end); and its count in the pool's queued
 * counts is the add's to write (`QUEUED_COUNT`): none when the job is handed over at once.
 *
 * KEYS: the admission's (admit-and-create-24's first 23), the pool's queued counts when counted,
 * then the add's. ARGV: the admission's key count, its argument count, 1 when counted, the
 * admission's arguments, the add's. Answers `{admission}` when refused, `{'created', add's answer}`.
 * Where the add's keys and the queued-count key can be written into the script's text (a queue's
 * names: `bakedAddScript`), they are, with the three counts: KEYS the admission's, ARGV its
 * arguments and the add's (round 43 `submit-floor`).
 */
import { LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { ADMITTED_DATA, ADMITTED_TENANT, CREATED_RUN, QUEUED_COUNT } from './handoff-scripts.ts';
import { bakeFixedTerms, type FixedTerms } from './handoff-terms.ts';
import { ADMIT_AND_CREATE } from './run-store-scripts.ts';

/** The admission's argument that names the tenant in the pool's queued counts (ARGV[16], the index's). */
const TENANT_ARG = 16;

/**
 * includes/create-run.lua's copy of the record's fields (name, value pairs from ARGV[a + 4] on). A
 * baked composite given the fields' names (`Baked.fields`) puts one constructor of the names, as
 * literals, and the values, read from the same place on, in its stead: the names are constants of
 * the compiled script, not arguments Redis parses and makes Lua strings at every submit (~1.2 K
 * instructions an argument, test/bench/README.md round 46 `answer-pack`; round 47 `submit-lean`).
 * The table and so the record written are the same.
 */
export const RECORD_FIELDS = '{unpack(ARGV, a + 4, #ARGV)}';

const composites = new WeakMap<LuaScript, LuaScript>();

/**
 * Where admit-and-create-24 tells its create whether to leave the new record to its caller
 * (includes/create-run.lua `defer`): `nil` as the script is sent alone.
 */
export const DEFER_RECORD = '(nil --[[islet:defer-record]])';

/**
 * The add's keys and the pool's queued-count key written into the script's text (a queue's and a
 * pool's names: the same at every submit of a mode), with the add's argument count. A key sent as
 * an argument is parsed by Redis and made a Lua string at every call (~450 instructions in Lua
 * alone, test/bench/README.md round 42 `pickup-floor`); a name in the text is a constant of the
 * compiled script, made once. One server only, as the whole script (it names keys it does not
 * declare, which a server that checks no slots allows).
 */
interface Baked {
  keys: string[];
  queued: string | undefined;
  addArgs: number;
  /** A hand-off's compact registrations' fixed names (handoff-terms.ts), read by the script when given. */
  fixed?: FixedTerms;
  /** The created record's field names, in order (`RECORD_FIELDS`): the admission's arguments then hold their values alone. */
  fields?: RecordLayout;
  /**
   * The add's data text (its ARGV[2]) is the run's format-2 data of the admitted tenant
   * (`{"tenant":ARGV[16],"enqueuedAtMs":…}`: no runId, no skill), as its caller checked (`ride.send`'s
   * `dataTenant`): the hand-off's fetch then reads it as that, not by `cjson.decode` (ADMITTED_DATA).
   */
  formatTwo?: boolean;
}

/** A created record's field names in order, and their text joined (the variant's name). */
export interface RecordLayout {
  names: readonly string[];
  id: string;
}

/**
 * Baked variants an add may have (a queue's, a mode's, times the record layouts its submits write:
 * with or without a principal, `pushEnd`…): past it, keys and names go as arguments.
 */
const MAX_BAKED = 32;
const bakedScripts = new WeakMap<LuaScript, Map<string, LuaScript>>();
const byKeys = new WeakMap<
  string[],
  Map<string, { add: LuaScript; addArgs: number; fixed: FixedTerms | undefined; script: LuaScript }>
>();
/** Where the pairs' copy stands in create-run's text (checked once: the composite needs it exactly once). */
const recordFieldsOnce = ADMIT_AND_CREATE.source.split(RECORD_FIELDS).length === 2;
/** A name that goes into a Lua single-quoted literal as it is. */
const PLAIN = /^[\x20-\x26\x28-\x5b\x5d-\x7e]*$/;

/** A name as a Lua literal. */
const literal = (name: string) => `'${name}'`;

/** The admission followed by `add` (a script of the add's keys and arguments). */
export function admittedAddScript(add: LuaScript): LuaScript {
  const known = composites.get(add);
  if (known) return known;
  const script = new LuaScript(compositeSource(add));
  composites.set(add, script);
  return script;
}

/**
 * The admission followed by `add`, its keys and queued-count key in its text (`Baked`), or
 * undefined when they cannot be (a name a literal would not hold as it is, or MAX_BAKED variants
 * of `add` made already): the caller then sends them as arguments (`admittedAddScript`).
 */
export function bakedAddScript(add: LuaScript, baked: Baked): LuaScript | undefined {
  // A caller that sends the same keys array every time (the hand-off's add: one a queue) finds its
  // script without the names joined at each submit.
  let byQueued = byKeys.get(baked.keys);
  const layout = baked.fields?.id ?? '';
  const queued = baked.formatTwo ? `${baked.queued ?? ''}\n2` : (baked.queued ?? '');
  const at = layout === '' ? queued : `${queued}\n${layout}`;
  const hit = byQueued?.get(at);
  if (hit && hit.add === add && hit.addArgs === baked.addArgs && hit.fixed === baked.fixed) return hit.script;
  let variants = bakedScripts.get(add);
  const id = `${baked.addArgs}\n${baked.fixed?.id ?? ''}\n${queued}\n${layout}\n${baked.keys.join('\n')}`;
  const known = variants?.get(id);
  const remember = (script: LuaScript) => {
    if (!byQueued) {
      byQueued = new Map();
      byKeys.set(baked.keys, byQueued);
    }
    byQueued.set(at, { add, addArgs: baked.addArgs, fixed: baked.fixed, script });
    return script;
  };
  if (known) return remember(known);
  if ((variants?.size ?? 0) >= MAX_BAKED) return undefined;
  if (
    !PLAIN.test(baked.queued ?? '') ||
    !baked.keys.every((k) => PLAIN.test(k)) ||
    !(baked.fixed?.names ?? []).every((k) => PLAIN.test(k)) ||
    (baked.fields && !(recordFieldsOnce && baked.fields.names.every((k) => PLAIN.test(k))))
  )
    return undefined;
  if (!variants) {
    variants = new Map();
    bakedScripts.set(add, variants);
  }
  const script = new LuaScript(compositeSource(add, baked));
  variants.set(id, script);
  return remember(script);
}

/**
 * The composite's text. Unbaked — KEYS: the admission's, the pool's queued counts when counted,
 * the add's; ARGV: the admission's key count, argument count, 1 when counted, its arguments, the
 * add's. Baked — KEYS: the admission's only; ARGV: its arguments, then the add's (their count in
 * the text): the admission reads KEYS and ARGV themselves (the add's arguments taken off ARGV's
 * end first: its length is then the admission's, as create-run.lua reads it), not copies, as the
 * script's locals: its helpers (each made at every call) then share the admission's one lookup of
 * each (`luaF_findupval`) instead of one each, as they did with them the admission's parameters
 * (test/bench/README.md round 48 `submit-closures`).
 */
function compositeSource(add: LuaScript, baked?: Baked): string {
  // An add that takes the job's count (the hand-off's: QUEUED_COUNT) counts it, or leaves it out
  // when its own fetch takes the job; any other add has the job counted here first.
  const takesCount = add.source.includes(QUEUED_COUNT);
  // An add whose fetch may read its job's data as vouched (the hand-off's: ADMITTED_DATA) is told
  // where, in a variant whose caller vouched for it; else nil.
  const vouched = baked?.formatTwo === true && add.source.includes(ADMITTED_DATA);
  // An add whose start may take the created record (the hand-off's: CREATED_RUN) writes it: with
  // the start applied when that start is this run's, else at the end below (DEFER_RECORD).
  const defers = add.source.includes(CREATED_RUN);
  let admitSource = defers
    ? ADMIT_AND_CREATE.source.split(DEFER_RECORD).join('true')
    : ADMIT_AND_CREATE.source;
  // The record's names in the text, its values from where the pairs began (RECORD_FIELDS).
  if (baked?.fields)
    admitSource = admitSource
      .split(RECORD_FIELDS)
      .join(`{${baked.fields.names.map((name, i) => `${literal(name)}, ARGV[a + ${i + 4}]`).join(', ')}}`);
  const addSource = (baked?.fixed ? bakeFixedTerms(add.source, baked.fixed, literal) : add.source)
    .split(CREATED_RUN)
    .join('createdRun')
    .split(QUEUED_COUNT)
    .join('admittedCount')
    .split(ADMITTED_DATA)
    .join(vouched ? 'admittedData' : 'nil')
    .split(ADMITTED_TENANT)
    .join(vouched ? 'admittedTenant' : 'nil');
  const count = (queuedKey: string, tenant: string) =>
    takesCount
      ? `admittedCount = {${queuedKey}, ${tenant}}`
      : `redis.pcall('HINCRBY', ${queuedKey}, ${tenant}, 1)`;
  const end = `if createdRun and createdRun.deferred then redis.call('HSET', createdRun[1], unpack(createdRun[2])) end
return {answer, added}`;
  if (baked) {
    const addArgs = Array.from({ length: baked.addArgs }, (_, i) => `ARGV[na + ${i + 1}]`).join(', ');
    return `local na = #ARGV - ${baked.addArgs}
local AD = {${addArgs}}
for i = #ARGV, na + 1, -1 do ARGV[i] = nil end
local KEYS, ARGV = KEYS, ARGV
local function admit()
${admitSource}
end
local answer, createdRun = admit()
if answer ~= 'created' then return {answer} end
local admittedCount
${baked.queued === undefined ? '' : count(literal(baked.queued), `ARGV[${TENANT_ARG}]`)}
${vouched ? `local admittedData, admittedTenant = AD[2], ARGV[${TENANT_ARG}]` : ''}
local function add(KEYS, ARGV)
${addSource}
end
local added = add({${baked.keys.map(literal).join(', ')}}, AD)
${end}`;
  }
  return `local nk, na, counted = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local AA = {unpack(ARGV, 4, 3 + na)}
local function admit(KEYS, ARGV)
${admitSource}
end
local answer, createdRun = admit({unpack(KEYS, 1, nk)}, AA)
if answer ~= 'created' then return {answer} end
local first = nk + 1
local admittedCount
if counted then
  ${count('KEYS[first]', `AA[${TENANT_ARG}]`)}
  first = first + 1
end
local function add(KEYS, ARGV)
${addSource}
end
local added = add({unpack(KEYS, first, #KEYS)}, {unpack(ARGV, 4 + na, #ARGV)})
${end}`;
}

/**
 * What `RunStore.create` hands its `then` when the admission may carry the job's add
 * (`CreateAdmission.carriesAdd`): `then` calls exactly one of `send` and `alone` before its add.
 */
export interface AdmissionRide {
  /**
   * The admission with the add (`add`'s keys and arguments) in one script call; resolves to the
   * add's answer, or undefined when the admission refused (nothing was added or counted).
   * `dataTenant`: given when the add's data text (`args[1]`) is `JSON.stringify({tenant:
   * dataTenant, enqueuedAtMs})` of a number (the run's format-2 data); where it is the admitted
   * tenant, the script's hand-off reads that data as such, not by its decode (`Baked.formatTwo`).
   */
  send(
    add: LuaScript,
    keys: string[],
    args: (string | number | Buffer)[],
    fixed?: FixedTerms,
    dataTenant?: string,
  ): Promise<unknown>;
  /** The admission on its own, sent now (before an add that cannot carry it, on the same connection). */
  alone(): void;
  /** Set once `send` went: the job was added only if the admission was 'created'. */
  readonly carried: boolean;
}

/** Where a create's record fields stand in its admission's arguments (name, value pairs from `at` to the end), and their names. */
export interface RecordArgs {
  at: number;
  layout: RecordLayout;
}

/** `args` with the record's names left out (`record`): the pairs' values alone, in order. */
function valuesOnly(args: (string | number)[], record: RecordArgs): (string | number)[] {
  const out = args.slice(0, record.at);
  for (let i = record.at + 1; i < args.length; i += 2) out.push(args[i] as string | number);
  return out;
}

/**
 * Sends a create's admission (`admitKeys`, the 23 of admit-and-create-24 without the queued key;
 * `admitArgs`, its arguments) through `then`'s add: `then` is called with a ride and sends the
 * admission with its add (`send`) or alone before its add (`alone`); a `then` that settles without
 * either has the admission sent alone then. Resolves to the admission's answer (as the script
 * answers it) and `then`'s promise. `record`: where the record's fields stand in `admitArgs`, so a
 * baked script holds their names in its text and is sent their values alone (`RECORD_FIELDS`).
 */
export async function rideAdmission(
  redis: Redis,
  admitKeys: string[],
  queuedKey: string | undefined,
  admitArgs: (string | number)[],
  then: (counted: boolean, ride: AdmissionRide) => Promise<unknown>,
  record?: RecordArgs,
): Promise<{ answer: unknown; queued: Promise<unknown> }> {
  let sent = false;
  let carried = false;
  let settle: { resolve: (v: unknown) => void; reject: (e: unknown) => void } | undefined;
  const answer = new Promise<unknown>((resolve, reject) => {
    settle = { resolve, reject };
  });
  const alone = () => {
    if (sent) return;
    sent = true;
    // As before the ride: the job's count (KEYS[24]) whatever the answer, a refused job taken back.
    const keys = queuedKey ? [...admitKeys, queuedKey] : admitKeys;
    ADMIT_AND_CREATE.runInOrder(redis, keys, admitArgs).then(settle?.resolve, settle?.reject);
  };
  const ride: AdmissionRide = {
    get carried() {
      return carried;
    },
    alone,
    send(add, keys, args, fixed, dataTenant) {
      if (sent) return Promise.reject(new Error('the admission went already'));
      sent = true;
      carried = true;
      // The add's keys and the queued-count key in the script's text where they can be (a
      // queue's names, the same every submit of its mode): 16 arguments fewer a call.
      // And a hand-off's compact registrations' fixed names (handoff-terms.ts), when given.
      // And the record's field names, when given: the admission's arguments then carry their values alone.
      // And whether the add's data is the run's format-2 data of the admitted tenant (ARGV[16] of
      // what is sent: the record's values come after it).
      const formatTwo = dataTenant !== undefined && dataTenant === admitArgs[TENANT_ARG - 1];
      const terms = { keys, queued: queuedKey, addArgs: args.length, fixed, formatTwo };
      const named = record && bakedAddScript(add, { ...terms, fields: record.layout });
      const baked = named ?? bakedAddScript(add, terms);
      const sentArgs = named && record ? valuesOnly(admitArgs, record) : admitArgs;
      // `concat`, not spreads: ~100 arguments a submit, which a spread walks through the iterator
      // protocol in code V8 has not optimized (round 37 `submit-gw`, core's lua-script.ts).
      // A Buffer among the add's arguments (BullMQ's packed options) goes as bytes (lua-script.ts).
      const call = (
        baked
          ? baked.run(
              redis,
              admitKeys,
              (sentArgs as (string | number | Buffer)[]).concat(args) as (string | number)[],
            )
          : admittedAddScript(add).run(
              redis,
              queuedKey ? admitKeys.concat(queuedKey, keys) : admitKeys.concat(keys),
              (
                [admitKeys.length, admitArgs.length, queuedKey ? 1 : 0] as (string | number | Buffer)[]
              ).concat(admitArgs, args) as (string | number)[],
            )
      ) as Promise<unknown[]>;
      call.then((r) => settle?.resolve(r[0]), settle?.reject);
      return call.then((r) => r[1] ?? undefined);
    },
  };
  const queued = then(queuedKey !== undefined, ride);
  queued.then(alone, alone);
  return { answer: await answer, queued };
}
