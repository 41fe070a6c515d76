/**
 * One labelled series of a prom-client Counter or Histogram, found once and then recorded into
 * directly. prom-client's `inc(labels)` / `observe(labels, v)` check the label names, build the
 * series' key from the label values (a string made each call) and, for a histogram, make a closure
 * and a pair object: ~4 µs a request hot in process, ~30 µs a submit on a loaded gateway's CPU
 * (test/bench/README.md, rounds 28 and 29 `gw-cpu`), for two series whose labels repeat.
 *
 * The values live where prom-client keeps them (its `hashMap`: the series' key to `{ labels, value }`
 * or `{ labels, bucketValues, sum, count }`), so the exposition is prom-client's own, byte for byte,
 * and a `reset()` or a caller recording through prom-client meets the same series. A series' first
 * value (and the first after a reset) goes through prom-client, which makes the series and its key;
 * the key is then found by the labels. prom-client 15's layout: `metric-series.test.ts` records the
 * same values both ways and compares the scrapes, so a release that changes it fails there.
 */
import type { Counter, Histogram } from 'prom-client';

type Labels = Record<string, string>;
interface Series {
  labels: Labels;
}
interface CounterSeries extends Series {
  value: number;
}
interface HistogramSeries extends Series {
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

function keyOf(hashMap: Record<string, Series>, labels: Labels): string | undefined {
  const names = Object.keys(labels);
  for (const key in hashMap) {
    const l = hashMap[key]?.labels;
    if (l && Object.keys(l).length === names.length && names.every((n) => l[n] === labels[n])) return key;
  }
  return undefined;
}

/** `inc(by)` of the counter's series with these labels (by 1 unless given). */
export function counterSeries<T extends string>(
  counter: Counter<T>,
  labels: Record<T, string>,
): (by?: number) => void {
  const store = counter as unknown as { hashMap: Record<string, CounterSeries> };
  let key: string | undefined;
  return (by = 1) => {
    const series = key === undefined ? undefined : store.hashMap[key];
    // Not finite or negative: through prom-client, which refuses it (or adds it) as before.
    if (series && Number.isFinite(by) && by >= 0) {
      series.value += by;
      return;
    }
    counter.inc(labels, by);
    key = keyOf(store.hashMap, labels);
  };
}

/** `observe(value)` of the histogram's series with these labels. */
export function histogramSeries<T extends string>(
  histogram: Histogram<T>,
  labels: Record<T, string>,
): (value: number) => void {
  const store = histogram as unknown as { hashMap: Record<string, HistogramSeries>; upperBounds: number[] };
  // prom-client keys a series' buckets by their upper bounds (numbers as property names).
  const bounds = store.upperBounds.slice();
  const bucketKeys = bounds.map(String);
  let key: string | undefined;
  return (value) => {
    const series = key === undefined ? undefined : store.hashMap[key];
    // Not finite: prom-client's own refusal (a TypeError), as before.
    if (!series || !Number.isFinite(value)) {
      histogram.observe(labels, value);
      key = keyOf(store.hashMap, labels);
      return;
    }
    series.sum += value;
    series.count += 1;
    // Above the last bound only `+Inf` (the count) holds it, as prom-client's `findBound` has it.
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        const b = bucketKeys[i] as string;
        series.bucketValues[b] = (series.bucketValues[b] as number) + 1;
        return;
      }
    }
  };
}

/**
 * `counterSeries` for each label set met, made at its first value and kept: for a caller whose
 * labels vary over a bounded set (outcomes, modes, statuses, metered tenants), which is what keeps
 * the handles bounded. The label values, joined, find the handle.
 */
export function counterSeriesByLabels<T extends string>(
  counter: Counter<T>,
): (labels: Record<T, string>, by?: number) => void {
  return seriesByLabels((labels: Record<T, string>) => counterSeries(counter, labels));
}

/** `histogramSeries` for each label set met, as `counterSeriesByLabels`. */
export function histogramSeriesByLabels<T extends string>(
  histogram: Histogram<T>,
): (labels: Record<T, string>, value: number) => void {
  return seriesByLabels((labels: Record<T, string>) => histogramSeries(histogram, labels));
}

/** A series handle for each label set met (`make`), kept by its values joined. */
function seriesByLabels<T extends string, V extends number | undefined>(
  make: (labels: Record<T, string>) => (value: V) => void,
): (labels: Record<T, string>, value: V) => void {
  const handles = new Map<string, (value: V) => void>();
  return (labels, value) => {
    const key = Object.values(labels).join('\u0000');
    let record = handles.get(key);
    if (!record) {
      record = make(labels);
      handles.set(key, record);
    }
    record(value);
  };
}
