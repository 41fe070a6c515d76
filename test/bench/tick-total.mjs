// `--import` preload (bench only, round 40 `call-floor`): a process's `process.nextTick` calls and
// readable-stream pushes (`Readable.prototype.push`: a chunk read through a stream) in total,
// and undici requests, written to `$TICK_DIR/tick-total.<pid>.json` every 200 ms; `call-ticks.ts` reads the files'
// differences over its measured runs.
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';

const file = `${process.env.TICK_DIR ?? '/tmp'}/tick-total.${process.pid}.json`;
let ticks = 0;
let pushes = 0;
// Requests made through undici (the runner's batches of calls: round 41 `stdout-pair` checks a
// Promise.all's calls still go as one).
let undiciRequests = 0;
subscribe('undici:request:create', () => undiciRequests++);
const nextTick = process.nextTick;
process.nextTick = function (...args) {
  ticks++;
  return nextTick.apply(this, args);
};
const push = Readable.prototype.push;
Readable.prototype.push = function (...args) {
  pushes++;
  return push.apply(this, args);
};
setInterval(() => writeFileSync(file, JSON.stringify({ ticks, pushes, undiciRequests })), 200).unref();
