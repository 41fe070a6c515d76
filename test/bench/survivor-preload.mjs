/**
 * Bench-only preload (round 36, `tail`): what a gateway's or runner's scavenges keep. Loaded by
 * `node --import` (NODE_OPTIONS, which the local cluster's children inherit), it does nothing but in
 * a gateway's or a runner's main process: `SURVIVOR_START_MS` after the start (default 10000: past
 * a warm-up), V8's sampling heap profiler runs for `SURVIVOR_MS` (default 8000) counting only
 * allocations that outlived a scavenge (`includeObjectsCollectedByMinorGC: false`, those a later
 * mark-compact collected kept: `includeObjectsCollectedByMajorGC: true`), and writes
 * `$SURVIVOR_DIR/<role>-<pid>.heapprofile`; `survivors.ts` sums it by allocating function.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const main = process.argv[1] ?? '';
const role = /gateway\/src\/main\.ts$/.test(main)
  ? 'gateway'
  : /runner\/src\/main\.ts$/.test(main)
    ? 'runner'
    : '';
if (role) {
  const dir = process.env.SURVIVOR_DIR ?? '/tmp';
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))),
    );
  setTimeout(
    async () => {
      await post('HeapProfiler.enable');
      await post('HeapProfiler.startSampling', {
        samplingInterval: Number(process.env.SURVIVOR_INTERVAL_BYTES ?? 2048),
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: false,
      });
      setTimeout(
        async () => {
          const { profile } = await post('HeapProfiler.stopSampling');
          writeFileSync(`${dir}/${role}-${process.pid}.heapprofile`, JSON.stringify(profile));
        },
        Number(process.env.SURVIVOR_MS ?? 8000),
      ).unref();
    },
    Number(process.env.SURVIVOR_START_MS ?? 10000),
  ).unref();
}
