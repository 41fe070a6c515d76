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
}

/** `pack`: the job's options (with `jobId`) → BullMQ's bytes of them without `jobId`. */
export function runOptionsPacker(pack: (opts: object) => Buffer): OptionsPacker {
  const byAttempts = new Map<number, { like: object; bytes: Buffer }>();
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
      if (same(opts, like, true)) byAttempts.set(key, { like, bytes });
    }
    return bytes;
  };
  Object.defineProperty(packer, 'packed', { get: () => packed });
  return packer as OptionsPacker;
}
