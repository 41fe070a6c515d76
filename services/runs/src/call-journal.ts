/**
 * The call journal on Redis. One hash per run (`<prefix>journal:{<runId>}`, hash-tagged so a
 * Redis Cluster keeps it in one slot): field `<index>` holds the call's entry as JSON (arguments
 * and outcome sealed), `#seq` counts delivered outcomes, `#attempt` the run's executions.
 * Every state change is one Lua script, so two gateway replicas claiming the same call agree.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { fieldsOf, LuaScript } from '@islet/core/lua-script';
import type { BindingOutcome } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { operationIdFor } from './operation-id.ts';
import { TurnBatch } from './turn-batch.ts';
import type {
  BegunAttempt,
  CallJournal,
  CallSource,
  ClaimCall,
  ClaimResult,
  CompletionEvent,
  JournalCallView,
  JournalEntry,
  JournalState,
  Sealer,
} from './types.ts';

export interface CallJournalDeps {
  redis: Redis;
  sealer: Sealer;
  /** Prefix of every key. Default `islet:`. */
  keyPrefix?: string;
  /** How long a run's journal lives after its last write, seconds. Default 604800 (7 days). */
  ttlSeconds?: number;
  /**
   * Key of the HMAC that lets Lua compare arguments without reading them (the arguments
   * themselves are sealed). Default: a fixed key, which still hides them from casual reads but
   * not from guessing; pass a secret in production.
   */
  argsHashKey?: string | Buffer;
  now?: () => number;
}

/** A token-checked `markSent` found the call taken over by another handler: do not send. */
export class JournalConflictError extends Error {
  readonly code = 'journal-conflict';
  constructor(message: string) {
    super(message);
    this.name = 'JournalConflictError';
  }
}

interface StoredEntry {
  i: number;
  b: string;
  h: string;
  a: string;
  s?: string;
  op: string;
  st: JournalState;
  at: number;
  tk: string;
  t0: number;
  t1?: number;
  o?: string;
  seq?: number;
}

// KEYS[1] journal hash. ARGV: CLAIM_FIELDS per call, each: field, attempt, binding, argsHash,
// sealedArgs, sourceJson, operationId, nowMs, takeover ('1'|'0'), ttlSeconds, token, sendNow
// ('1'|'0'). One reply per call, in order: the calls one after another, as separate scripts would.
// With sendNow a `new` claim is written as `sent` in the same step (claim + markSent fused: the
// caller sends without asking anyone first, so nothing can come between the two).
const CLAIM_FIELDS = 12;
const CLAIM = new LuaScript(`
local function claim(b)
  local attempt = tonumber(ARGV[b + 2])
  local claimed = 'pending'
  if ARGV[b + 12] == '1' then claimed = 'sent' end
  local current = tonumber(redis.call('HGET', KEYS[1], '#attempt') or '0')
  if attempt < current then return {'superseded'} end
  local raw = redis.call('HGET', KEYS[1], ARGV[b + 1])
  if not raw then
    local e = {i = tonumber(ARGV[b + 1]), b = ARGV[b + 3], h = ARGV[b + 4], a = ARGV[b + 5], op = ARGV[b + 7],
      st = claimed, at = attempt, tk = ARGV[b + 11], t0 = tonumber(ARGV[b + 8])}
    if ARGV[b + 6] ~= '' then e.s = ARGV[b + 6] end
    redis.call('HSET', KEYS[1], ARGV[b + 1], cjson.encode(e))
    -- nextAttempt set the expiry with #attempt (and complete renews it): only a journal that
    -- nextAttempt never touched needs one here.
    if current == 0 then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[b + 10])) end
    return {'new'}
  end
  local e = cjson.decode(raw)
  if e.b ~= ARGV[b + 3] or e.h ~= ARGV[b + 4] then return {'mismatch', e.b} end
  if e.st == 'done' then return {'done', e.o, tostring(e.seq)} end
  if e.at > attempt then return {'superseded'} end
  if e.at == attempt and ARGV[b + 9] ~= '1' then return {'in-flight'} end
  if e.st == 'pending' then
    e.st = claimed
    e.at = attempt
    e.tk = ARGV[b + 11]
    e.t0 = tonumber(ARGV[b + 8])
    redis.call('HSET', KEYS[1], ARGV[b + 1], cjson.encode(e))
    if current == 0 then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[b + 10])) end
    return {'new'}
  end
  return {'unknown'}
end
local replies = {}
for b = 0, #ARGV - 1, ${CLAIM_FIELDS} do replies[#replies + 1] = claim(b) end
return replies
`);

// KEYS[1] journal hash. ARGV: field, token ('' = unchecked).
const MARK_SENT = new LuaScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 'missing' end
local e = cjson.decode(raw)
if ARGV[2] ~= '' and e.tk ~= ARGV[2] then return 'conflict' end
if e.st ~= 'pending' then return e.st end
e.st = 'sent'
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(e))
return 'sent'
`);

// KEYS[1] journal hash, KEYS[2] (optional) the run's event stream. ARGV: ttlSeconds, then with
// KEYS[2]: maxLen, channel, message; then per call (COMPLETE_FIELDS): field, sealedOutcome, nowMs,
// and with KEYS[2] eventType, sealedEventData (empty fields without it). One reply per call, in
// order. A call's event is appended only when this call stored the outcome (never for a kept
// one), in the same step, so the answer to the runner waits for one round trip, not two; one
// PUBLISH wakes the stream's readers for all the events appended.
const COMPLETE_FIELDS = 5;
const COMPLETE = new LuaScript(`
local first = 2
if KEYS[2] then first = 5 end
local replies = {}
local stored, appended = false, false
for b = first - 1, #ARGV - 1, ${COMPLETE_FIELDS} do
  local raw = redis.call('HGET', KEYS[1], ARGV[b + 1])
  if not raw then
    replies[#replies + 1] = {'missing'}
  else
    local e = cjson.decode(raw)
    if e.st == 'done' then
      replies[#replies + 1] = {'kept', tostring(e.seq)}
    else
      local seq = redis.call('HINCRBY', KEYS[1], '#seq', 1)
      e.st = 'done'
      e.o = ARGV[b + 2]
      e.seq = seq
      e.t1 = tonumber(ARGV[b + 3])
      redis.call('HSET', KEYS[1], ARGV[b + 1], cjson.encode(e))
      stored = true
      if KEYS[2] then
        redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'type', ARGV[b + 4], 'data', ARGV[b + 5])
        appended = true
      end
      replies[#replies + 1] = {'stored', tostring(seq)}
    end
  end
end
if stored then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1])) end
if appended then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return replies
`);

// KEYS: journal, run record, then optionally the run's event stream (one slot: `{runId}`). ARGV:
// ttlSeconds, then with KEYS[3]: maxLen, eventType, sealedEventData, channel, message, nowMs.
// An execution's start: the record as read; unless it is missing, ended or asked to cancel, the
// next attempt (journal `#attempt`, its expiry, the record's `attempts`), and with KEYS[3] the
// record marked Running at nowMs and a status event carrying the attempt in a plain `attempt`
// field (it is known only here; the sealed data cannot hold it), published. Returns {record,
// attempt | 0, journal}, hashes flattened.
const BEGIN_ATTEMPT = new LuaScript(`
local run = redis.call('HGETALL', KEYS[2])
if #run == 0 then return {run, 0, {}} end
-- status and cancelRequested from the fields just read (no second and third command)
local st, cancel
for i = 1, #run, 2 do
  if run[i] == 'status' then st = run[i + 1] elseif run[i] == 'cancelRequested' then cancel = run[i + 1] end
end
if st == 'Completed' or st == 'Failed' or st == 'Cancelled' then return {run, 0, {}} end
if cancel == '1' then return {run, 0, {}} end
local attempt = redis.call('HINCRBY', KEYS[1], '#attempt', 1)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
redis.call('HINCRBY', KEYS[2], 'attempts', 1)
if KEYS[3] then
  redis.call('HSET', KEYS[2], 'status', 'Running', 'updatedAt', ARGV[7])
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'type', ARGV[3], 'data', ARGV[4], 'attempt', attempt)
  redis.call('PUBLISH', ARGV[5], ARGV[6])
end
return {run, attempt, redis.call('HGETALL', KEYS[1])}
`);

/**
 * A group's bounds: the engine lets a run have 128 calls in flight by default, and a script call
 * of a few MiB keeps Redis's other clients waiting no longer than one large call would.
 */
const GROUP_LIMITS = { maxItems: 128, maxBytes: 4 * 1024 * 1024 };

export function createCallJournal(deps: CallJournalDeps): CallJournal {
  const { redis, sealer } = deps;
  const prefix = deps.keyPrefix ?? 'islet:';
  const ttlSeconds = deps.ttlSeconds ?? 604_800;
  const hashKey = deps.argsHashKey ?? 'islet-journal-args';
  const now = deps.now ?? Date.now;
  const keyOf = (runId: string) => `${prefix}journal:{${runId}}`;
  const argsHash = (runId: string, index: number, argsJson: string) =>
    createHmac('sha256', hashKey).update(`${runId}\0${index}\0${argsJson}`).digest('base64url');

  const openOutcome = (sealed: string): BindingOutcome => JSON.parse(sealer.open(sealed)) as BindingOutcome;

  const toView = (stored: StoredEntry): JournalCallView => {
    const view: JournalCallView = {
      index: stored.i,
      binding: stored.b,
      operationId: stored.op,
      state: stored.st,
      attempt: stored.at,
      startedAtMs: stored.t0,
    };
    if (stored.s) view.source = JSON.parse(stored.s) as CallSource;
    if (stored.o !== undefined) view.outcome = openOutcome(stored.o);
    if (stored.seq !== undefined) view.deliverySeq = stored.seq;
    if (stored.t1 !== undefined) view.settledAtMs = stored.t1;
    return view;
  };

  const toEntry = (stored: StoredEntry): JournalEntry => ({
    ...toView(stored),
    argsJson: sealer.open(stored.a),
  });

  /** The hash's call entries (not its `#` counters), by index. */
  const storedOf = (all: Record<string, string>): StoredEntry[] => {
    const stored: StoredEntry[] = [];
    for (const [field, raw] of Object.entries(all)) {
      if (!field.startsWith('#')) stored.push(JSON.parse(raw) as StoredEntry);
    }
    return stored.sort((a, b) => a.i - b.i);
  };

  const entriesOf = (all: Record<string, string>): JournalEntry[] => storedOf(all).map(toEntry);
  const callsOf = (all: Record<string, string>): JournalCallView[] => storedOf(all).map(toView);

  // A run's claims made in one turn go as one script call, and so do its outcomes (turn-batch.ts).
  const claims = new TurnBatch<(string | number)[], string[]>(
    async (runId, calls) => (await CLAIM.run(redis, [keyOf(runId)], calls.flat())) as string[][],
    GROUP_LIMITS,
  );
  const completions = new TurnBatch<(string | number)[], string[]>(async (group, calls) => {
    const [runId, streamKey, maxLen, channel, message] = JSON.parse(group) as [
      string,
      string?,
      number?,
      string?,
      string?,
    ];
    const keys = streamKey ? [keyOf(runId), streamKey] : [keyOf(runId)];
    const head = streamKey ? [ttlSeconds, maxLen ?? 0, channel ?? '', message ?? ''] : [ttlSeconds];
    return (await COMPLETE.run(redis, keys, [...head, ...calls.flat()])) as string[][];
  }, GROUP_LIMITS);

  const get = async (runId: string, index: number): Promise<JournalEntry | undefined> => {
    const raw = await redis.hget(keyOf(runId), String(index));
    return raw ? toEntry(JSON.parse(raw) as StoredEntry) : undefined;
  };

  return {
    async claim(runId: string, attempt: number, call: ClaimCall): Promise<ClaimResult> {
      checkIndex(call.index);
      if (!Number.isSafeInteger(attempt) || attempt < 0) throw new RangeError(`bad attempt ${attempt}`);
      const token = randomUUID();
      const sealedArgs = sealer.seal(call.argsJson);
      const fields = [
        String(call.index),
        attempt,
        call.binding,
        argsHash(runId, call.index, call.argsJson),
        sealedArgs,
        call.source ? JSON.stringify(call.source) : '',
        operationIdFor(runId, call.index),
        now(),
        call.takeover ? '1' : '0',
        ttlSeconds,
        token,
        call.sendNow ? '1' : '0',
      ];
      const reply = await claims.add(runId, fields, sealedArgs.length);
      switch (reply[0]) {
        case 'new':
          return { kind: 'new', token };
        case 'done':
          return { kind: 'done', outcome: openOutcome(reply[1] ?? ''), deliverySeq: Number(reply[2]) };
        case 'mismatch':
          return { kind: 'mismatch', expected: { binding: reply[1] ?? '' } };
        case 'in-flight':
          return { kind: 'in-flight' };
        case 'unknown':
          return { kind: 'unknown' };
        case 'superseded':
          return { kind: 'superseded' };
        default:
          throw new Error(`journal claim: unexpected reply ${String(reply[0])}`);
      }
    },

    async markSent(runId: string, index: number, token?: string): Promise<void> {
      const reply = (await MARK_SENT.run(redis, [keyOf(runId)], [String(index), token ?? ''])) as string;
      if (reply === 'missing') throw new Error(`journal: markSent of unclaimed call ${runId}#${index}`);
      if (reply === 'conflict') {
        throw new JournalConflictError(`call ${runId}#${index} was taken over by another handler; not sent`);
      }
    },

    async complete(runId: string, index: number, outcome: BindingOutcome, event?: CompletionEvent) {
      const sealedOutcome = sealer.seal(JSON.stringify(outcome));
      const fields = [String(index), sealedOutcome, now(), event?.type ?? '', event?.sealedData ?? ''];
      // Outcomes gather by run and by what they share in the script call (the stream and its wake-up).
      const group = event
        ? JSON.stringify([runId, event.streamKey, event.maxLen, event.channel, event.message])
        : JSON.stringify([runId]);
      const reply = await completions.add(
        group,
        fields,
        sealedOutcome.length + (event?.sealedData.length ?? 0),
      );
      if (reply[0] === 'missing') throw new Error(`journal: complete of unclaimed call ${runId}#${index}`);
      return { deliverySeq: Number(reply[1]), stored: reply[0] === 'stored' };
    },

    async list(runId: string): Promise<JournalEntry[]> {
      return entriesOf(await redis.hgetall(keyOf(runId)));
    },

    async listCalls(runId: string): Promise<JournalCallView[]> {
      return callsOf(await redis.hgetall(keyOf(runId)));
    },

    callsOf,

    get,

    async beginAttempt(runId: string, runKey: string, start?: CompletionEvent): Promise<BegunAttempt> {
      const args: (string | number)[] = [ttlSeconds];
      if (start) args.push(start.maxLen, start.type, start.sealedData, start.channel, start.message, now());
      const [runFlat, attempt, journalFlat] = (await BEGIN_ATTEMPT.run(
        redis,
        start ? [keyOf(runId), runKey, start.streamKey] : [keyOf(runId), runKey],
        args,
      )) as [string[], number, string[]];
      return {
        run: fieldsOf(runFlat),
        attempt: attempt > 0 ? attempt : undefined,
        entries: entriesOf(fieldsOf(journalFlat)),
      };
    },

    async nextAttempt(runId: string): Promise<number> {
      const key = keyOf(runId);
      const [[, attempt]] = (await redis
        .multi()
        .hincrby(key, '#attempt', 1)
        .expire(key, ttlSeconds)
        .exec()) as [[Error | null, number]];
      return attempt;
    },

    async waitForOutcome(runId, index, options = {}) {
      const deadline = Date.now() + (options.timeoutMs ?? 30_000);
      const pollMs = options.pollMs ?? 50;
      for (;;) {
        const entry = await get(runId, index);
        if (entry?.state === 'done' && entry.outcome && entry.deliverySeq !== undefined) {
          return { outcome: entry.outcome, deliverySeq: entry.deliverySeq };
        }
        if (Date.now() + pollMs > deadline) return undefined;
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    },

    async remove(runId: string): Promise<void> {
      await redis.del(keyOf(runId));
    },
  };
}

function checkIndex(index: number): void {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`bad call index ${index}`);
}
