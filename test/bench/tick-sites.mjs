// `--import` preload (bench only, round 42 `binding-floor`): `tick-total.mjs`'s totals plus where
// each `process.nextTick`, readable-stream push and `setImmediate` comes from — its caller's frames
// (Node's internal frames kept, file paths cut to their last two parts), counted by site and written
// to `$TICK_DIR/tick-sites.<pid>.json` every 200 ms. Capturing a stack each time is slow: counts only.
import { writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import './tick-total.mjs';

const file = `${process.env.TICK_DIR ?? '/tmp'}/tick-sites.${process.pid}.json`;
const DEPTH = Number(process.env.TICK_SITE_DEPTH ?? 6);
const sites = { nextTick: {}, push: {}, setImmediate: {}, setTimeout: {} };
const site = (kind) => {
  const stack = new Error().stack?.split('\n').slice(3, 3 + DEPTH) ?? [];
  const key = stack
    .map((l) =>
      l
        .trim()
        .replace(/^at /, '')
        .replace(/\(?(?:file:\/\/)?\/[^)]*\/([^/]+\/[^/]+:\d+):\d+\)?/, '$1'),
    )
    .join(' < ');
  sites[kind][key] = (sites[kind][key] ?? 0) + 1;
};
const nextTick = process.nextTick;
process.nextTick = function (...args) {
  site('nextTick');
  return nextTick.apply(this, args);
};
const push = Readable.prototype.push;
Readable.prototype.push = function (...args) {
  site('push');
  return push.apply(this, args);
};
const immediate = globalThis.setImmediate;
globalThis.setImmediate = function (...args) {
  site('setImmediate');
  return immediate.apply(this, args);
};
// Round 50 (`binding-runner`): timers too (a timer due within the loop's millisecond makes libuv
// poll without blocking).
const timeout = globalThis.setTimeout;
globalThis.setTimeout = function (...args) {
  site('setTimeout');
  return timeout.apply(this, args);
};
setInterval(() => writeFileSync(file, JSON.stringify(sites)), 200).unref();
