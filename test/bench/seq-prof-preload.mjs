/**
 * A CPU profile of the gateway's and the runner's main processes over a window of a bench, with no
 * product code changed (round 34, `seq-path`): loaded by `node --import` (NODE_OPTIONS, which the
 * local cluster's children inherit), it does nothing but in a gateway's or a runner's main process.
 * `SEQ_PROF_START_MS` after the process starts (default 8000: past the bench's warm-up), V8's
 * sampling profiler runs for `SEQ_PROF_MS` (default 5000) at `SEQ_PROF_INTERVAL_US` (default 50)
 * and writes `$SEQ_PROF_DIR/<role>-<pid>.cpuprofile` (Chrome DevTools' format; `seq-prof.ts`
 * sums it by function).
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
  const dir = process.env.SEQ_PROF_DIR ?? '/tmp';
  const startMs = Number(process.env.SEQ_PROF_START_MS ?? 8000);
  const forMs = Number(process.env.SEQ_PROF_MS ?? 5000);
  const intervalUs = Number(process.env.SEQ_PROF_INTERVAL_US ?? 50);
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))),
    );
  setTimeout(async () => {
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: intervalUs });
    await post('Profiler.start');
    setTimeout(async () => {
      const { profile } = await post('Profiler.stop');
      writeFileSync(`${dir}/${role}-${process.pid}.cpuprofile`, JSON.stringify(profile));
    }, forMs).unref();
  }, startMs).unref();
}
