/**
 * The health series' layout, shared by the end script that counts into it (run-index-scripts.ts),
 * the store that reads it (health-store.ts) and the gateway's sampler: 10 s buckets kept in one
 * hash per tenant and UTC hour, fields `<bucket>|<name>`:
 * - `n:<status>` runs that ended in the bucket, by final status;
 * - `k:<kind>` failed runs by failure kind;
 * - `d:<bin>` run latency (creation to end) histogram, `bin` = ⌊4·log2(ms)⌋ (a bin spans ×1.19, so a
 *   percentile read from it is within ±10 %);
 * - `e:<status>:<bin>` runs that ended in the bucket with that status and latency bin: what a run's
 *   end writes (one counter for both), read as `n:<status>` and `d:<bin>` (healthCounters);
 * - `g:<name>` a sampled gauge (queue depth, slots busy, decisions pending), last write wins.
 * Hashes expire HEALTH_TTL_SECONDS after their last write (a run's end renews it with the first end
 * of each bucket, status and bin, so at most one bucket earlier): the series covers the last hour.
 */

export const HEALTH_BUCKET_MS = 10_000;
const HOUR_MS = 3_600_000;
/** What `GET /v1/health` can show at most: the last hour. */
export const HEALTH_WINDOW_MS = HOUR_MS;
/** An hour's hash outlives the hour that follows it: a window of one hour reaches into it. */
export const HEALTH_TTL_SECONDS = 2 * 3600 + 600;
export const LATENCY_BINS_PER_DOUBLING = 4;

/** The hour (ms / 3 600 000) whose hash a time's bucket lives in. */
export function healthHour(ms: number): number {
  return Math.floor(ms / HOUR_MS);
}

export function healthBucket(ms: number): number {
  return Math.floor(ms / HEALTH_BUCKET_MS);
}

/** The field of one bucket's value. */
export function healthField(bucket: number, name: string): string {
  return `${bucket}|${name}`;
}

/** A latency bin's representative value, ms (the geometric middle of its span). */
function binMs(bin: number): number {
  return 2 ** ((bin + 0.5) / LATENCY_BINS_PER_DOUBLING);
}

/** The q-quantile (0..1) of a latency histogram (bin → count), ms; null when it is empty. */
export function quantileMs(histogram: Map<number, number>, q: number): number | null {
  let total = 0;
  for (const n of histogram.values()) total += n;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const bin of [...histogram.keys()].sort((a, b) => a - b)) {
    seen += histogram.get(bin) ?? 0;
    if (seen >= rank) return Math.round(binMs(bin));
  }
  return null;
}

/**
 * Adds one bucket's counter `name` (its field without the bucket) into `into`: an `e:<status>:<bin>`
 * as both `n:<status>` and `d:<bin>`, any other name as itself.
 */
export function addHealthCounter(into: Map<string, number>, name: string, value: number): void {
  const both = /^e:([^:]+):(-?\d+)$/.exec(name);
  const names = both ? [`n:${both[1]}`, `d:${both[2]}`] : [name];
  for (const n of names) into.set(n, (into.get(n) ?? 0) + value);
}
