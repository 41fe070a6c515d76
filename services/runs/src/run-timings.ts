/**
 * A run's stage stamps (`RunTimings`) as its end stores them in the record's `timings` field, and
 * read back. Only the benches read them (test/bench/stages.ts and the traces): no service, script,
 * console page or push reads the field (includes/transition.lua leaves it out of the pushed record).
 *
 * Written compact since round 38 (`aof-cut`): the stamps in µs, comma-separated in a fixed order,
 * `enqueued` since the epoch and the others from it (`hostWaitMs` as its own µs), an absent or
 * non-numeric stamp empty — `1796530249295854,2989,3018,3110,4118,6,4128`, ~45 bytes against the
 * JSON form's ~200 (`{"enqueued":1796530249295.854,"fetched":…}`, rounds 35–37). The end's
 * fsync'd AOF write crosses a 4 KB block of the file with probability ~size / 4,096, and a crossing
 * costs +159 µs p50 of fsync (test/bench/README.md, round 37 `end-hop`): ~150 bytes are ~3.7 % of
 * ends. `timingsFrom` reads both forms, so a bench reads a record of either release.
 */
import type { RunTimings } from './run-store-types.ts';

/** The stamps in their stored order (`enqueued` first: the others are relative to it). */
const ORDER = [
  'enqueued',
  'fetched',
  'pickedUp',
  'engineCalled',
  'engineReturned',
  'hostWaitMs',
  'endSent',
] as const satisfies readonly (keyof RunTimings)[];

/** Stamps that are durations of their own, not instants relative to `enqueued`. */
const DURATION: ReadonlySet<string> = new Set(['hostWaitMs']);

const US_PER_MS = 1000;

/** The stamps as the record stores them: each to the µs (stages are read to 0.01 ms). */
export function timingsText(t: RunTimings): string {
  const base = Math.round(t.enqueued * US_PER_MS);
  const baseOk = Number.isFinite(base);
  let out = baseOk ? String(base) : '';
  let pending = '';
  for (let i = 1; i < ORDER.length; i++) {
    const name = ORDER[i] as (typeof ORDER)[number];
    const v = t[name];
    pending += ',';
    if (v === undefined || !Number.isFinite(v)) continue;
    const us = Math.round(v * US_PER_MS);
    if (DURATION.has(name)) out += pending + String(us);
    else if (baseOk) out += pending + String(us - base);
    else continue;
    pending = '';
  }
  return out;
}

/**
 * The stamps a record's `timings` holds, in ms (instants since the epoch, `hostWaitMs` a duration),
 * from either form: this release's compact text or the JSON the releases before wrote. Absent
 * stamps are absent; an empty or unreadable field gives `{}`.
 */
export function timingsFrom(text: string | null | undefined): Partial<Record<keyof RunTimings, number>> {
  const out: Partial<Record<keyof RunTimings, number>> = {};
  if (!text) return out;
  if (text.startsWith('{')) {
    try {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      for (const name of ORDER) if (typeof parsed[name] === 'number') out[name] = parsed[name];
    } catch {
      // Not the JSON form either: no stamps.
    }
    return out;
  }
  const parts = text.split(',');
  const base = parts[0] ? Number(parts[0]) : Number.NaN;
  if (Number.isFinite(base)) out.enqueued = base / US_PER_MS;
  for (let i = 1; i < ORDER.length && i < parts.length; i++) {
    const part = parts[i];
    if (!part) continue;
    const us = Number(part);
    if (!Number.isFinite(us)) continue;
    const name = ORDER[i] as (typeof ORDER)[number];
    if (DURATION.has(name)) out[name] = us / US_PER_MS;
    else if (Number.isFinite(base)) out[name] = (base + us) / US_PER_MS;
  }
  return out;
}
