// `--import` preload (bench only, README round 35 `call-gw`): counts a process's `process.nextTick`
// and `setImmediate` calls by their caller (first frame outside Node's internals) per incoming HTTP
// request (`http.server.request.start`), written to `$TICK_DIR/ticks.<pid>.txt` every 2 s after
// `TICK_SKIP_REQUESTS` (default 600: the warm-up) requests.
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';

const dir = process.env.TICK_DIR ?? '/tmp';
const skip = Number(process.env.TICK_SKIP_REQUESTS ?? 600);
let requests = 0;
const counts = new Map();
const callerOf = () => {
  // Deep enough to get past Node's stream and timer internals to the caller of ours or a package's.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 40;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  const lines = stack.split('\n').slice(3);
  const own = lines.find((l) => !l.includes('node:internal') && !l.includes('tick-count.mjs'));
  return (own ?? lines[0] ?? '?')
    .trim()
    .replace(/^at /, '')
    .replace(/file:\/\/\/work\/wt\/[^/]+\//, '');
};
const count = (kind) => {
  if (requests < skip) return;
  const key = `${kind} ${callerOf()}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
};
subscribe('http.server.request.start', () => {
  requests++;
});
const nextTick = process.nextTick;
process.nextTick = function (...args) {
  count('nextTick');
  return nextTick.apply(this, args);
};
const immediate = globalThis.setImmediate;
globalThis.setImmediate = function (...args) {
  count('setImmediate');
  return immediate.apply(this, args);
};
setInterval(() => {
  const n = requests - skip;
  if (n <= 0) return;
  const rows = [...counts].sort((a, b) => b[1] - a[1]);
  const total = (kind) => rows.filter(([k]) => k.startsWith(kind)).reduce((s, [, c]) => s + c, 0);
  const text = [
    `${n} requests; a request: nextTick ${(total('nextTick') / n).toFixed(2)}, setImmediate ${(total('setImmediate') / n).toFixed(2)}`,
    ...rows.slice(0, 40).map(([k, c]) => `${(c / n).toFixed(2)}  ${k}`),
  ].join('\n');
  writeFileSync(`${dir}/ticks.${process.pid}.txt`, `${text}\n`);
}, 2000).unref();
