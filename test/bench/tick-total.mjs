// `--import` preload (bench only, round 40 `call-floor`): a process's `process.nextTick` calls and
// readable-stream pushes (`Readable.prototype.push`: a chunk read through a stream) in total,
// written to `$TICK_DIR/tick-total.<pid>.json` every 200 ms; `call-ticks.ts` reads the files'
// differences over its measured runs.
import { writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';

const file = `${process.env.TICK_DIR ?? '/tmp'}/tick-total.${process.pid}.json`;
let ticks = 0;
let pushes = 0;
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
setInterval(() => writeFileSync(file, JSON.stringify({ ticks, pushes })), 200).unref();
