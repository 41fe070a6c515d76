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
 */
import { LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { CREATED_RUN, QUEUED_COUNT } from './handoff-scripts.ts';
import { ADMIT_AND_CREATE } from './run-store-scripts.ts';

/** The admission's argument that names the tenant in the pool's queued counts (ARGV[16], the index's). */
const TENANT_ARG = 16;

const composites = new WeakMap<LuaScript, LuaScript>();

/**
 * Where admit-and-create-24 tells its create whether to leave the new record to its caller
 * (includes/create-run.lua `defer`): `nil` as the script is sent alone.
 */
export const DEFER_RECORD = '(nil --[[islet:defer-record]])';

/** The admission followed by `add` (a script of the add's keys and arguments). */
export function admittedAddScript(add: LuaScript): LuaScript {
  const known = composites.get(add);
  if (known) return known;
  // An add that takes the job's count (the hand-off's: QUEUED_COUNT) counts it, or leaves it out
  // when its own fetch takes the job; any other add has the job counted here first.
  const takesCount = add.source.includes(QUEUED_COUNT);
  // An add whose start may take the created record (the hand-off's: CREATED_RUN) writes it: with
  // the start applied when that start is this run's, else at the end below (DEFER_RECORD).
  const defers = add.source.includes(CREATED_RUN);
  const admitSource = defers
    ? ADMIT_AND_CREATE.source.split(DEFER_RECORD).join('true')
    : ADMIT_AND_CREATE.source;
  const script = new LuaScript(`local nk, na, counted = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local AA = {unpack(ARGV, 4, 3 + na)}
local function admit(KEYS, ARGV)
${admitSource}
end
local answer, createdRun = admit({unpack(KEYS, 1, nk)}, AA)
if answer ~= 'created' then return {answer} end
local first = nk + 1
local admittedCount
if counted then
  ${takesCount ? `admittedCount = {KEYS[first], AA[${TENANT_ARG}]}` : `redis.pcall('HINCRBY', KEYS[first], AA[${TENANT_ARG}], 1)`}
  first = first + 1
end
local function add(KEYS, ARGV)
${add.source.split(CREATED_RUN).join('createdRun').split(QUEUED_COUNT).join('admittedCount')}
end
local added = add({unpack(KEYS, first, #KEYS)}, {unpack(ARGV, 4 + na, #ARGV)})
if createdRun and createdRun.deferred then redis.call('HSET', createdRun[1], unpack(createdRun[2])) end
return {answer, added}`);
  composites.set(add, script);
  return script;
}

/**
 * What `RunStore.create` hands its `then` when the admission may carry the job's add
 * (`CreateAdmission.carriesAdd`): `then` calls exactly one of `send` and `alone` before its add.
 */
export interface AdmissionRide {
  /**
   * The admission with the add (`add`'s keys and arguments) in one script call; resolves to the
   * add's answer, or undefined when the admission refused (nothing was added or counted).
   */
  send(add: LuaScript, keys: string[], args: (string | number | Buffer)[]): Promise<unknown>;
  /** The admission on its own, sent now (before an add that cannot carry it, on the same connection). */
  alone(): void;
  /** Set once `send` went: the job was added only if the admission was 'created'. */
  readonly carried: boolean;
}

/**
 * Sends a create's admission (`admitKeys`, the 23 of admit-and-create-24 without the queued key;
 * `admitArgs`, its arguments) through `then`'s add: `then` is called with a ride and sends the
 * admission with its add (`send`) or alone before its add (`alone`); a `then` that settles without
 * either has the admission sent alone then. Resolves to the admission's answer (as the script
 * answers it) and `then`'s promise.
 */
export async function rideAdmission(
  redis: Redis,
  admitKeys: string[],
  queuedKey: string | undefined,
  admitArgs: (string | number)[],
  then: (counted: boolean, ride: AdmissionRide) => Promise<unknown>,
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
    send(add, keys, args) {
      if (sent) return Promise.reject(new Error('the admission went already'));
      sent = true;
      carried = true;
      const head: (string | number | Buffer)[] = [admitKeys.length, admitArgs.length, queuedKey ? 1 : 0];
      // `concat`, not spreads: ~100 arguments a submit, which a spread walks through the iterator
      // protocol in code V8 has not optimized (round 37 `submit-gw`, core's lua-script.ts).
      const call = admittedAddScript(add).run(
        redis,
        queuedKey ? admitKeys.concat(queuedKey, keys) : admitKeys.concat(keys),
        // A Buffer among the add's arguments (BullMQ's packed options) goes as bytes (lua-script.ts).
        head.concat(admitArgs, args) as (string | number)[],
      ) as Promise<unknown[]>;
      call.then((r) => settle?.resolve(r[0]), settle?.reject);
      return call.then((r) => r[1] ?? undefined);
    },
  };
  const queued = then(queuedKey !== undefined, ride);
  queued.then(alone, alone);
  return { answer: await answer, queued };
}
