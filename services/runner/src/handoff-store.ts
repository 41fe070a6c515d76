/**
 * The idle worker's side of the direct hand-off (`@islet/runs` handoff-scripts.ts, one server
 * only): its registration, written in the same write as its blocking pop, which watches its own
 * hand-off key before the queue's marker; its removal after a pop that brought no hand-off; and its
 * removal at close. A job handed over comes back
 * as the fused fetch's answer would, with the token its lock was taken with.
 */
import { type Redis as CoreRedis, rawClient, sendTogether } from '@islet/core';
import {
  CLOSE_IDLE,
  compactTermsOf,
  type FixedTerms,
  HAND_OFF_FETCH_KEYS,
  handOffKeys,
  type IdleTerms,
  REGISTER_IDLE,
  TAKE_BACK,
  TAKE_LEFT,
} from '@islet/runs';
import type { JobJsonRaw, RedisClient } from 'bullmq';
import type { Redis } from 'ioredis';
import { decodeLuaValue } from './handed-decode.ts';

/** The keys of a worker's hand-off: idle, idle args, its own hand-off key, its closed mark. */
export type HandOffKeys = [string, string, string, string];

/** A job handed to the worker: its lock's token and the fused fetch's answer. */
export interface Handed {
  token: string;
  answer: unknown[];
}

/**
 * What the blocking pop brought (the marker's pop as BullMQ reads it, its close's wake-up, or
 * nothing) and a job handed to the worker, by the pop or taken back after it.
 */
export interface IdlePop {
  marker?: [string, string, string];
  closing?: true;
  handed?: Handed;
  /** Its registration still stands, its take-back left for the fetch that follows (`fuseTakeBack`). */
  owed?: true;
}

/**
 * A fetch's answer as BullMQ's own fetch hands it on (its `raw2NextJobData`, whose module Node cannot
 * load on its own): the job's fields as an object, its id, the rate limit's and next delay's times.
 */
export function nextJobData(reply: unknown[]): [JobJsonRaw | undefined, string | undefined, number, number] {
  const fields = reply[0];
  let data: JobJsonRaw | undefined;
  if (Array.isArray(fields)) {
    const o: Record<string, unknown> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) o[String(fields[i])] = fields[i + 1];
    data = o as unknown as JobJsonRaw;
  }
  const id = typeof reply[1] === 'string' ? reply[1] : undefined;
  return [data, id, Number(reply[2] ?? 0), Number(reply[3] ?? 0)];
}

/** A hand-off key's member (cmsgpack of {token, answer}), read as Redis would answer the Lua value. */
export function handedOf(member: Buffer): Handed {
  const [token, answer] = decodeLuaValue(member) as [unknown, unknown];
  return { token: String(token ?? null), answer: (answer ?? null) as unknown[] };
}

/** A registration's terms but its token and its start's time (`IdleTerms`, `startArgs` raw). */
export type IdleTermsInput = Omit<IdleTerms, 'startArgs'> & { startArgs: readonly (string | number)[] };

/**
 * Writes a worker's registration terms as `JSON.stringify` writes them (`startArgs` as strings),
 * the same text: all but the lock token and the start's time (its last argument) are the same at
 * every registration of a worker, so their text is made once and those two spliced in, where each
 * registration escaped the ~40 strings of a ~2 KB text anew. Made again when any of them changes.
 * Given its mode's fixed names (`compact`, ISLET_HANDOFF_COMPACT_TERMS=on), it writes the compact
 * form (`@islet/runs` handoff-terms.ts: ~260 B, no names, no time) while the terms hold exactly
 * those names, else the full one.
 */
export class IdleTermsWriter {
  private readonly compact: FixedTerms | undefined;
  /** Registrations written in the compact form (tests read it). */
  compactWrites = 0;

  constructor(compact?: FixedTerms) {
    this.compact = compact;
  }

  private made:
    | {
        terms: IdleTermsInput;
        fixed: readonly (string | number)[];
        head: string;
        middle: string;
        tail: string;
        /** The compact form's text around the token, when written in it. */
        compact: [string, string] | undefined;
      }
    | undefined;
  /** Times the fixed text was made (tests read it). */
  builds = 0;

  write(terms: IdleTermsInput): string {
    const args = terms.startArgs;
    const last = args.length - 1;
    let made = this.made;
    if (!made || !this.same(made.terms, made.fixed, terms)) {
      const fixed = args.slice(0, Math.max(0, last));
      const t = terms;
      const fixedText = fixed.map((a) => JSON.stringify(String(a))).join(',');
      made = {
        terms: t,
        fixed,
        head: `{"keys":${JSON.stringify(t.keys)},"prefix":${JSON.stringify(t.prefix)},"token":`,
        middle: `,"lockDuration":${JSON.stringify(t.lockDuration)},"name":${JSON.stringify(t.name)},"startArgs":[${fixedText}${fixed.length > 0 && last >= 0 ? ',' : ''}`,
        tail: `],"handOff":${JSON.stringify(t.handOff)}}`,
        compact: this.compact ? compactTermsOf(this.compact, t) : undefined,
      };
      this.made = made;
      this.builds++;
    }
    if (made.compact) {
      this.compactWrites++;
      return made.compact[0] + JSON.stringify(terms.token) + made.compact[1];
    }
    const time = last >= 0 ? JSON.stringify(String(args[last])) : '';
    return made.head + JSON.stringify(terms.token) + made.middle + time + made.tail;
  }

  private same(was: IdleTermsInput, fixed: readonly (string | number)[], now: IdleTermsInput): boolean {
    if (
      was.prefix !== now.prefix ||
      was.lockDuration !== now.lockDuration ||
      was.name !== now.name ||
      was.handOff !== now.handOff ||
      now.startArgs.length !== fixed.length + 1 ||
      (was.keys !== now.keys &&
        (was.keys.length !== now.keys.length || was.keys.some((k, i) => k !== now.keys[i])))
    )
      return false;
    for (let i = 0; i < fixed.length; i++) if (fixed[i] !== now.startArgs[i]) return false;
    return true;
  }
}

/**
 * Registers the worker idle (`ttlMs`) and blocks on its hand-off key and the queue's marker for
 * `timeoutS`, in one write. Registration is refused while a hand-off to it is pending (the pop
 * takes that one at once) and, with `refuseOnMarker`, while the marker stands (the pop is served it
 * at once; ISLET_HANDOFF_REFUSE_ON_MARKER). A pop that
 * brought a hand-off is all: the add removed the registration with its hand-off, and no other can
 * follow. Any other end of a registered pop (the marker, the timeout) leaves the registration
 * standing, so `TAKE_BACK` goes then, before the worker fetches: it removes it and takes a job
 * handed in between (counted by `tookBack`). A refused one left nothing to take back: none goes.
 * With `fuseTakeBack` none goes here either: the pop answers `owed` and the worker's fetch carries
 * the take-back (fetch-start-store.ts `FETCH_TAKE_BACK`; round 49 `fetch-takeback`), one round trip
 * for both.
 */
export async function registerAndPop(
  bclient: RedisClient,
  keys: HandOffKeys,
  workerId: string,
  terms: IdleTerms | string,
  ttlMs: number,
  marker: string,
  timeoutS: number,
  registered: (yes: boolean) => void = () => undefined,
  tookBack: () => void = () => undefined,
  refuseOnMarker = false,
  fuseTakeBack = false,
): Promise<IdlePop> {
  // The client behind BullMQ's Proxy: `isCluster`, `stream`, `bzpopminBuffer` and the script's
  // reads without its trap (core's raw-client.ts; round 51 `runner-cpu`).
  const redis = rawClient(bclient as unknown as Redis);
  // One write: the registration and the pop.
  // Indexed, not destructured: array destructuring walks the iterator (a result an element until
  // the JIT optimizes it), on every idle registration.
  const sent = sendTogether(
    redis as unknown as CoreRedis,
    () =>
      [
        REGISTER_IDLE.runInOrder(
          redis,
          // The marker as the 5th key: refused while it stands; without it, as f63d2625 registers.
          refuseOnMarker ? [keys[0], keys[1], keys[2], keys[3], marker] : keys,
          [workerId, ttlMs, typeof terms === 'string' ? terms : JSON.stringify(terms)],
        ),
        redis.bzpopminBuffer(keys[2], marker, timeoutS),
      ] as const,
  );
  const register = sent[0];
  const popped = sent[1];
  // A dropped connection (the worker's close) rejects both: neither is left unhandled.
  register.catch(() => undefined);
  popped.catch(() => undefined);
  const yes = (await register) === 1;
  registered(yes);
  const result = await popped;
  if (result && result[0].toString() === keys[2]) {
    // Its own key: a hand-off (score 0), or its close's wake-up (1), which removed the
    // registration first; a hand-off before that would have been popped first (lower score).
    if (result[2].toString() === '0') return { handed: handedOf(result[1]) };
    return { closing: true };
  }
  // Refused (the marker stood, or its close's mark): no registration of this pop, so no submit
  // handed it anything, and its previous one went before it (handed, taken back or closed).
  const woke: IdlePop = result
    ? { marker: [result[0].toString(), result[1].toString(), result[2].toString()] }
    : {};
  if (!yes) return woke;
  if (fuseTakeBack) {
    woke.owed = true;
    return woke;
  }
  tookBack();
  const behind = await takeBack(redis as unknown as RedisClient, keys, workerId);
  return behind ? { ...woke, handed: behind } : woke;
}

/** `TAKE_BACK` alone: the registration removed, or the job handed to it meanwhile taken. */
export async function takeBack(
  client: RedisClient,
  keys: HandOffKeys,
  workerId: string,
): Promise<Handed | undefined> {
  const behind = (await (client as unknown as Redis).callBuffer(
    'EVAL',
    TAKE_BACK.source,
    3,
    keys[0],
    keys[1],
    keys[2],
    workerId,
  )) as Buffer | null;
  return behind ? handedOf(behind) : undefined;
}

/** How long a closed worker's mark refuses a late registration of it, ms. */
const CLOSING_MARK_MS = 60_000;

/** Removes a closing worker's registration and wakes its blocking pop (`CLOSE_IDLE`). */
export async function closeIdle(client: RedisClient, keys: HandOffKeys, workerId: string): Promise<void> {
  await CLOSE_IDLE.run(client as unknown as Redis, keys, [workerId, CLOSING_MARK_MS]);
}

/** Empties a closing worker's hand-off key; returns a job handed to it that it never popped. */
export async function takeLeft(client: RedisClient, keys: HandOffKeys): Promise<Handed | undefined> {
  const left = (await (client as unknown as Redis).callBuffer(
    'EVAL',
    TAKE_LEFT.source,
    1,
    keys[2],
  )) as Buffer | null;
  return left ? handedOf(left) : undefined;
}

/** How long a registration outlives its pop's timeout, ms: the pop's reply and the next registration in between. */
const IDLE_GRACE_MS = 1_000;

/** BullMQ's queue keys its fetch (moveToActive-11) takes, in its order. */
export const FETCH_KEY_NAMES = HAND_OFF_FETCH_KEYS;

/** A worker's hand-off terms from its queue's keys (BullMQ's `keys`) and its id. */
export function handOffOf(worker: { id: string; keys: Record<string, string> }) {
  const k = worker.keys;
  const own = handOffKeys(k[''] ?? '', worker.id);
  const fetchKeys = FETCH_KEY_NAMES.map((name) => k[name] ?? '');
  return {
    keys: [own.idle, own.idleArgs, own.handOff, own.closed] as HandOffKeys,
    fetchKeys,
    graceMs: IDLE_GRACE_MS,
  };
}
