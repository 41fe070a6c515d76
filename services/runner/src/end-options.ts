/**
 * The worker's packed options of a run's completion (moveToFinished's 8th argument: BullMQ's
 * msgpack of `{token, name, keepJobs, limiter, lockDuration, attempts, maxMetricsSize, fpof, cpof,
 * idof, rdof}`), taken apart for a baked end (end-complete-store.ts): the token carried as it is,
 * the bytes before and after it and the verdict the end's direct completion would reach on them
 * (@islet/runs handed-complete.ts: its lock duration and name) written into the text. Everything
 * but the token is the worker's and its jobs' options, the same at every end of a worker: Redis's
 * `cmsgpack.unpack` of them at every end was 16–17 k instructions of the script's ~350 k
 * (test/bench/README.md, round 50 `end-script`; round 51 `end-lua`). The bytes are made again
 * in the script only where they are read (BullMQ's text, the refetch): `knownPacked`.
 *
 * Given only where the direct completion would take the options (a token not '0', no limiter, no
 * metrics, `keepJobs` a map whose `count` is absent or a number not 0 and whose `age` absent or a
 * number, a name that is text) and each part is written back exactly (the token ASCII, its string
 * header msgpackr's, a lock duration a whole number Lua prints as JS does): else undefined, and the
 * end goes with the packed options as before.
 *
 * A worker's fetch (moveToActive's 3rd argument: `{token, lockDuration, limiter, name}`, token
 * first too) is taken apart by the same code with its own verdict (`FETCH_VERDICT`, the fetch's
 * uses: fetch-start-store.ts, round 52 `fetch-token`): its text reads the token, lock duration,
 * limiter and name only, so the parts are enough to make its `opts` table with no bytes at all.
 */
import { unpack } from 'msgpackr';

/** The parts a baked end carries and names: token, lock duration, name, the bytes before and after the token. */
export type EndOptionParts = [token: string, lockDuration: string, name: string, head: Buffer, tail: Buffer];

/** The key `token` as msgpack writes it (fixstr of 5), the first of BullMQ's packed options. */
const TOKEN_KEY = [0xa5, 0x74, 0x6f, 0x6b, 0x65, 0x6e];

/** A verdict's terms: the lock duration and name as written in the text, or undefined (the options go packed). */
export type OptionsTerms = { lockDuration: string; name: string } | undefined;

/** The verdict on one worker's fixed bytes: its lock duration and name as written in the text, or refused. */
interface Verdict {
  head: Buffer;
  tail: Buffer;
  terms: OptionsTerms;
}

/** Whether `b[from, from + part.length)` holds `part`'s bytes. */
function holds(b: Buffer, from: number, part: readonly number[]): boolean {
  if (from + part.length > b.length) return false;
  for (let i = 0; i < part.length; i++) if (b[from + i] !== part[i]) return false;
  return true;
}

/** The header's length msgpackr writes before a string of `bytes` bytes (fixstr, str8, str16, str32). */
function headerLength(bytes: number): number {
  return bytes < 0x20 ? 1 : bytes < 0x100 ? 2 : bytes < 0x10000 ? 3 : 5;
}

/** A map's value whose Lua value is nil (absent, or msgpack's nil). */
const isNil = (v: unknown): boolean => v === undefined || v === null;

/** The terms a verdict writes into the text (a lock duration and a name), or undefined: the options go packed. */
export type OptionsVerdict = (opts: unknown, token: string) => OptionsTerms;

/**
 * The terms written into the text when the direct completion would take `opts` with `token`, else
 * undefined: a fetch's checks (`fetchVerdict`) and the completion's own (no metrics size, a keep
 * that is a map whose count is nil or a non-zero number and whose age is nil or a number).
 */
export function endVerdict(opts: unknown, token: string): OptionsTerms {
  const terms = fetchVerdict(opts, token);
  if (terms === undefined) return undefined;
  const o = opts as Record<string, unknown>;
  const keep = o.keepJobs;
  if (o.maxMetricsSize !== '' || keep === null || typeof keep !== 'object' || Array.isArray(keep))
    return undefined;
  const { count, age } = keep as Record<string, unknown>;
  if (!isNil(count) && (typeof count !== 'number' || count === 0)) return undefined;
  if (!isNil(age) && typeof age !== 'number') return undefined;
  return terms;
}

/**
 * A fetch's options (moveToActive-11 reads `token`, `lockDuration`, `limiter`, `name`): taken where
 * no limiter is set, the lock duration is a whole number, the token not '0' and the name a text (a
 * runner's worker always has one: mode-worker.ts; none goes packed, as for the end).
 */
export function fetchVerdict(opts: unknown, token: string): OptionsTerms {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) return undefined;
  const o = opts as Record<string, unknown>;
  const { lockDuration, name } = o;
  if (
    o.token !== token ||
    token === '0' ||
    !isNil(o.limiter) ||
    typeof name !== 'string' ||
    !name.isWellFormed() ||
    typeof lockDuration !== 'number' ||
    !Number.isSafeInteger(lockDuration) ||
    Math.abs(lockDuration) >= 1e14
  )
    return undefined;
  return { lockDuration: String(lockDuration), name };
}

export class EndOptions {
  /** The verdict on a worker's options once decoded (`endVerdict`: a completion's; `fetchVerdict`: a fetch's). */
  private readonly verdictOf: OptionsVerdict;

  constructor(verdict: OptionsVerdict = endVerdict) {
    this.verdictOf = verdict;
  }

  /** The last worker's fixed bytes and their verdict (the same Buffers handed out while they hold: the baker compares names by identity). */
  private last: Verdict | undefined;
  /** Times the options were decoded (a new worker's or new job options' bytes; tests read it). */
  decodes = 0;

  /** `packed`'s parts for a baked end, or undefined: the end carries the packed options. */
  split(packed: unknown): EndOptionParts | undefined {
    if (!Buffer.isBuffer(packed)) return undefined;
    const first = packed[0] as number;
    // The map's header (fixmap or map16), then the key `token`.
    const keyAt = first >= 0x80 && first <= 0x8f ? 1 : first === 0xde ? 3 : -1;
    if (keyAt < 0 || !holds(packed, keyAt, TOKEN_KEY)) return undefined;
    const at = keyAt + TOKEN_KEY.length;
    const h = packed[at] as number;
    let bytes: number;
    if (h >= 0xa0 && h <= 0xbf) bytes = h & 0x1f;
    else if (h === 0xd9) bytes = packed[at + 1] as number;
    else if (h === 0xda) bytes = packed.readUInt16BE(at + 1);
    else if (h === 0xdb) bytes = packed.readUInt32BE(at + 1);
    else return undefined;
    const sent = h <= 0xbf ? 1 : h === 0xd9 ? 2 : h === 0xda ? 3 : 5;
    const from = at + sent;
    const to = from + bytes;
    // Not as msgpackr writes it (a longer header than the string needs): the script's rebuild would differ.
    if (to > packed.length || sent !== headerLength(bytes)) return undefined;
    for (let i = from; i < to; i++) if ((packed[i] as number) > 0x7f) return undefined;
    // Read and compared by Buffer's native code: ~230 against ~390 ns a call by JS loops
    // (test/bench/README.md, round 51 `end-lua`).
    const token = packed.toString('latin1', from, to);
    let last = this.last;
    if (
      !last ||
      last.head.length !== at ||
      last.tail.length !== packed.length - to ||
      packed.compare(last.head, 0, at, 0, at) !== 0 ||
      packed.compare(last.tail, 0, last.tail.length, to, packed.length) !== 0
    ) {
      this.decodes++;
      let opts: unknown;
      try {
        opts = unpack(packed);
      } catch {
        opts = undefined;
      }
      last = {
        head: Buffer.from(packed.subarray(0, at)),
        tail: Buffer.from(packed.subarray(to)),
        terms: this.verdictOf(opts, token),
      };
      this.last = last;
    } else if (token === '0') return undefined;
    const terms = last.terms;
    return terms ? [token, terms.lockDuration, terms.name, last.head, last.tail] : undefined;
  }
}
