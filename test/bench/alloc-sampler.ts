/**
 * Preloaded into a bench's cluster processes (`--import`) when `BENCH_ALLOC_DIR` is set: the first
 * SIGUSR2 starts V8's sampling heap profiler with the objects GC has already collected kept (so it
 * counts what was allocated, not what is still alive), the second writes
 * `<dir>/alloc.<pid>.heapprofile` and stops. `seq-cpu.ts` `ALLOC=1` signals the gateway around its
 * measured runs and prints the bytes allocated a run by site (`profile-summary.ts`).
 * `BENCH_ALLOC_SURVIVORS=1` (round 38, `gw-memory`) drops the objects a scavenge collected: what is
 * left is what outlived a scavenge (promoted, or still young and alive at the stop), i.e. what the
 * young generation hands to the old one.
 *
 * Beside the samples (round 47, `gateway-cpu`) the same window's bytes allocated, counted rather
 * than sampled: `v8.GCProfiler` gives the heap's used size before and after each collection, so
 * the bytes allocated are the growth between collections (start → first, after each → before the
 * next, after the last → stop), plus the collections by kind; written as `alloc.<pid>.exact`. A
 * mark-compact's garbage swept concurrently after it is read as not allocated (a small undercount;
 * the window has few).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { GCProfiler, getHeapStatistics } from 'node:v8';

const dir = process.env.BENCH_ALLOC_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  let sampling = false;
  let gcs: GCProfiler | undefined;
  let usedAtStart = 0;
  process.on('SIGUSR2', () => {
    sampling = !sampling;
    if (sampling) {
      usedAtStart = getHeapStatistics().used_heap_size;
      gcs = new GCProfiler();
      gcs.start();
      void session.post('HeapProfiler.startSampling', {
        samplingInterval: Number(process.env.BENCH_ALLOC_INTERVAL ?? 1024),
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: process.env.BENCH_ALLOC_SURVIVORS !== '1',
      });
      return;
    }
    const usedAtStop = getHeapStatistics().used_heap_size;
    const stats = gcs?.stop()?.statistics ?? [];
    let bytes = 0;
    let after = usedAtStart;
    const kinds: Record<string, number> = {};
    for (const gc of stats) {
      bytes += gc.beforeGC.heapStatistics.usedHeapSize - after;
      after = gc.afterGC.heapStatistics.usedHeapSize;
      kinds[gc.gcType] = (kinds[gc.gcType] ?? 0) + 1;
    }
    bytes += usedAtStop - after;
    const exact = `${dir}/alloc.${process.pid}.exact`;
    writeFileSync(`${exact}.part`, JSON.stringify({ bytes, kinds }));
    renameSync(`${exact}.part`, exact);
    void session.post('HeapProfiler.stopSampling').then(({ profile }) => {
      // Written aside, then renamed: the bench reads the file as soon as its name appears.
      const file = `${dir}/alloc.${process.pid}.heapprofile`;
      writeFileSync(`${file}.part`, JSON.stringify(profile));
      renameSync(`${file}.part`, file);
    });
  });
}
