// `--import` preload (bench only, README round 36 `app-undici`): what undici 8's idle-socket check
// (client-h1.js `scheduleIdleSocketValidation`, GHSA-35p6-xmwp-9g52) does to a process's requests.
// Counts, a request (undici's `undici:request:create` → `undici:client:sendHeaders` channels):
// requests deferred by the check (a `setImmediate` before the write); the time from dispatch to the
// request's head built (just before its write), split at the check's callback: the check's wait
// and undici's own work after it (p50, mean). Written to `$DEFER_DIR/app-defer.<pid>.txt` every 2 s after
// `DEFER_SKIP` (default 200) requests.
//
// `DEFER_INLINE=1` (MEASUREMENT ONLY, NOT SAFE): the check's `setImmediate` becomes a microtask, so
// the request is written at the end of its dispatching turn without the poll phase that would read
// a FIN or unsolicited bytes already pending on the idle socket: the bound of what the deferral
// costs, never a configuration to ship.
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const dir = process.env.DEFER_DIR ?? '/tmp';
const skip = Number(process.env.DEFER_SKIP ?? 200);
const inline = process.env.DEFER_INLINE === '1';
const state = { deferred: 0 };
/** Microseconds from the check's scheduling to its callback (the wait the check adds), a request. */
const waitUs = [];
/** When the check's last callback ran: its request's headers are written from there. */
let firedAt = -1;
globalThis.__appDeferImmediate = (fn) => {
  state.deferred++;
  const at = performance.now();
  const timed = () => {
    firedAt = performance.now();
    if (requests > skip) waitUs.push((firedAt - at) * 1000);
    fn();
  };
  if (!inline) return setImmediate(timed);
  // `clearImmediate` returns at once for a `_destroyed` handle; the callback's own checks (the
  // socket is still the client's and not destroyed) still run.
  queueMicrotask(timed);
  return { _destroyed: true };
};

const CHECK = 'socket[kIdleSocketValidationTimeout] = setImmediate(';
registerHooks({
  load(url, context, nextLoad) {
    const result = nextLoad(url, context);
    if (!url.endsWith('/undici/lib/dispatcher/client-h1.js')) return result;
    const source = String(result.source);
    if (!source.includes(CHECK)) throw new Error('app-defer: undici has no idle-socket check here');
    return {
      ...result,
      source: source.replace(CHECK, 'socket[kIdleSocketValidationTimeout] = globalThis.__appDeferImmediate('),
    };
  },
});

let requests = 0;
let deferredAtSkip = 0;
const ms = [];
/** Microseconds from the check's callback to the headers written (undici's write itself). */
const writeUs = [];
const started = new WeakMap();
subscribe('undici:request:create', ({ request }) => {
  requests++;
  if (requests === skip) deferredAtSkip = state.deferred;
  if (!started.has(request)) started.set(request, { t: performance.now() });
});
subscribe('undici:client:sendHeaders', ({ request }) => {
  const s = started.get(request);
  if (!s || requests <= skip) return;
  const now = performance.now();
  ms.push(now - s.t);
  if (firedAt >= s.t) writeUs.push((now - firedAt) * 1000);
});
const stats = (us) => {
  if (us.length === 0) return 'none';
  const sorted = [...us].sort((a, b) => a - b);
  const mean = us.reduce((a, b) => a + b, 0) / us.length;
  return `p50 ${sorted[us.length >> 1].toFixed(1)} us, mean ${mean.toFixed(1)} us (${us.length})`;
};
setInterval(() => {
  const n = ms.length;
  if (n === 0) return;
  const sorted = [...ms].sort((a, b) => a - b);
  const mean = ms.reduce((a, b) => a + b, 0) / n;
  const text = [
    `${n} requests${inline ? ' (DEFER_INLINE: unsafe, measurement only)' : ''}`,
    `deferred by the idle-socket check a request: ${((state.deferred - deferredAtSkip) / n).toFixed(3)}`,
    `dispatch -> header built (about to write): p50 ${(sorted[n >> 1] * 1000).toFixed(1)} us, mean ${(mean * 1000).toFixed(1)} us`,
    `the check's wait (scheduled -> callback): ${stats(waitUs)}`,
    `callback -> header built: ${stats(writeUs)}`,
  ].join('\n');
  writeFileSync(`${dir}/app-defer.${process.pid}.txt`, `${text}\n`);
}, 2000).unref();
