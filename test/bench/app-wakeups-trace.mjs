// The trace buffer of app-wakeups.patch (round 44): `NODE_OPTIONS="--import test/bench/app-wakeups-trace.mjs"`; each traced process writes /tmp/appwk/trace.<pid> (CLOCK_MONOTONIC µs, tag, count).
import { appendFileSync, mkdirSync } from 'node:fs';

mkdirSync('/tmp/appwk', { recursive: true });
const buf = [];
globalThis.__xp = (tag, n = 0) => {
  buf.push(`${(Number(process.hrtime.bigint()) / 1e3).toFixed(1)} ${tag} ${n}`);
  if (buf.length > 20000) flush();
};
function flush() {
  if (buf.length) {
    appendFileSync(`/tmp/appwk/trace.${process.pid}`, buf.join('\n') + '\n');
    buf.length = 0;
  }
}
setInterval(flush, 2000).unref();
process.on('exit', flush);
