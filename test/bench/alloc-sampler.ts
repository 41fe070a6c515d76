/**
 * Preloaded into a bench's cluster processes (`--import`) when `BENCH_ALLOC_DIR` is set: the first
 * SIGUSR2 starts V8's sampling heap profiler with the objects GC has already collected kept (so it
 * counts what was allocated, not what is still alive), the second writes
 * `<dir>/alloc.<pid>.heapprofile` and stops. `seq-cpu.ts` `ALLOC=1` signals the gateway around its
 * measured runs and prints the bytes allocated a run by site (`profile-summary.ts`).
 * `BENCH_ALLOC_SURVIVORS=1` (round 38, `gw-memory`) drops the objects a scavenge collected: what is
 * left is what outlived a scavenge (promoted, or still young and alive at the stop), i.e. what the
 * young generation hands to the old one.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const dir = process.env.BENCH_ALLOC_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  let sampling = false;
  process.on('SIGUSR2', () => {
    sampling = !sampling;
    if (sampling) {
      void session.post('HeapProfiler.startSampling', {
        samplingInterval: Number(process.env.BENCH_ALLOC_INTERVAL ?? 1024),
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: process.env.BENCH_ALLOC_SURVIVORS !== '1',
      });
      return;
    }
    void session.post('HeapProfiler.stopSampling').then(({ profile }) => {
      // Written aside, then renamed: the bench reads the file as soon as its name appears.
      const file = `${dir}/alloc.${process.pid}.heapprofile`;
      writeFileSync(`${file}.part`, JSON.stringify(profile));
      renameSync(`${file}.part`, file);
    });
  });
}
