/**
 * A run job's options packed once per `attempts` (run-add-store.ts): a run's options come from one
 * source, `@islet/runs` `runJobOptions(runId, attempts)`, so BullMQ's bytes of them (without the
 * job's id) depend on `attempts` alone, and msgpackr's `pack` of them is a few µs of every submit
 * (round 43 `send-floor`, "Found, left" 3). Options that are not that source's own, to msgpackr —
 * another key, order, value (by `Object.is`) or a nested object that is not a plain one — are
 * packed every time, so the bytes are always what BullMQ writes (round 45 `terms-on`: this
 * replaced round 44's match of any options' shape against the last packed).
 */
import { runJobOptions } from '@islet/runs';

/** Whether msgpackr walks `v` as it walks `like` (the source's options): plain objects, the same own keys in order, the same values. */
function same(v: unknown, like: unknown, anyJobId: boolean): boolean {
  if (typeof like !== 'object' || like === null) return Object.is(v, like);
  if (typeof v !== 'object' || v === null || Object.getPrototypeOf(v) !== Object.prototype) return false;
  const l = like as Record<string, unknown>;
  const o = v as Record<string, unknown>;
  let i = 0;
  const names = Object.keys(l);
  for (const k in o) {
    if (k !== names[i++] || !((anyJobId && k === 'jobId') || same(o[k], l[k], false))) return false;
  }
  return i === names.length;
}

/** `pack`'s bytes of a job's options without `jobId`; `packed` counts the packs (tests). */
export interface OptionsPacker {
  (opts: object): Buffer;
  readonly packed: number;
  /**
   * The JSON text Redis's `cjson.encode(cmsgpack.unpack(bytes))` makes of `bytes`, where they are
   * the packer's own bytes of the source's options (the ones it packed once), else undefined.
   */
  cjsonOf(bytes: Buffer): string | undefined;
}

/**
 * `runJobOptions`' options without `jobId` (`attempts` first, as run-add-store.ts packs them) as
 * cjson writes the table `cmsgpack.unpack` makes of their bytes: its keys in that table's order
 * (Lua's hash order for these keys inserted in msgpack's order, not the object's), integers as
 * digits. The hand-off's add stores it as the job's `opts` in place of encoding the options in the
 * script (~18 K Redis instructions a submit; test/bench/README.md, round 47 `submit-lean`);
 * packed-options.test.ts holds it to Redis's own `cjson.encode` byte for byte.
 */
function cjsonText(o: ReturnType<typeof runJobOptions>): string | undefined {
  const numbers = [
    o.removeOnFail.age,
    o.removeOnComplete.age,
    o.removeOnComplete.count,
    o.backoff.delay,
    o.attempts,
  ];
  // cjson prints a number with %.14g: whole numbers below 10^14 as their digits, as `String` does.
  if (!numbers.every((n) => Number.isInteger(n) && n >= 0 && n < 1e14)) return undefined;
  // A plain word: no character cjson escapes (it escapes '/', JSON.stringify does not).
  if (!/^[a-z]+$/.test(o.backoff.type)) return undefined;
  return `{"removeOnFail":{"age":${o.removeOnFail.age}},"removeOnComplete":{"age":${o.removeOnComplete.age},"count":${o.removeOnComplete.count}},"backoff":{"delay":${o.backoff.delay},"type":"${o.backoff.type}"},"attempts":${o.attempts}}`;
}

/** `pack`: the job's options (with `jobId`) → BullMQ's bytes of them without `jobId`. */
export function runOptionsPacker(pack: (opts: object) => Buffer): OptionsPacker {
  const byAttempts = new Map<number, { like: object; bytes: Buffer }>();
  const texts = new WeakMap<Buffer, string>();
  let packed = 0;
  const packer = (opts: object): Buffer => {
    const attempts = (opts as { attempts?: unknown }).attempts;
    // A positive integer: no `-0`, which a Map takes for `0`.
    const key = typeof attempts === 'number' && Number.isInteger(attempts) && attempts > 0 ? attempts : 0;
    const known = key > 0 ? byAttempts.get(key) : undefined;
    if (known && same(opts, known.like, true)) return known.bytes;
    packed++;
    // A copy: msgpackr hands out a view of its own buffer.
    const bytes = Buffer.from(pack(opts));
    if (key > 0 && !known) {
      const like = runJobOptions('', key);
      if (same(opts, like, true)) {
        byAttempts.set(key, { like, bytes });
        const text = cjsonText(like);
        if (text !== undefined) texts.set(bytes, text);
      }
    }
    return bytes;
  };
  Object.defineProperty(packer, 'packed', { get: () => packed });
  (packer as unknown as { cjsonOf: OptionsPacker['cjsonOf'] }).cjsonOf = (bytes) => texts.get(bytes);
  return packer as OptionsPacker;
}
