// `--import` preload (bench only, round 41 `pickup-direct`): in a runner's main process only, the
// totals of what its event loop is asked to do — promises made (`async_hooks` PROMISE inits),
// `process.nextTick`, `setImmediate`, `setTimeout` and `queueMicrotask` calls — and the calls of
// BullMQ's Worker methods on a run's path (each one counted), written to
// `$PICKUP_COUNTS_DIR/pickup-counts.<pid>.json` every 100 ms; `pickup-counts.ts` reads their
// differences over its measured runs.
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const main = process.argv[1] ?? '';
if (/runner\/src\/main\.ts$/.test(main)) {
  const file = `${process.env.PICKUP_COUNTS_DIR ?? '/tmp'}/pickup-counts.${process.pid}.json`;
  /** @type {Record<string, number>} */
  const counts = { promises: 0, nextTick: 0, setImmediate: 0, setTimeout: 0, queueMicrotask: 0 };
  createHook({
    init(_id, type) {
      if (type === 'PROMISE') counts.promises++;
    },
  }).enable();
  for (const [owner, name] of [
    [process, 'nextTick'],
    [globalThis, 'setImmediate'],
    [globalThis, 'setTimeout'],
    [globalThis, 'queueMicrotask'],
  ]) {
    const f = owner[name];
    owner[name] = function (...args) {
      counts[name]++;
      return f.apply(this, args);
    };
  }
  const require = createRequire(`${process.cwd()}/services/runner/package.json`);
  const W = require('bullmq').Worker.prototype;
  for (const name of [
    'waitForJob',
    '_getNextJob',
    'moveToActive',
    'nextJobFromJobData',
    'retryIfFailed',
    'processJob',
    'callProcessJob',
    'handleCompleted',
    'trace',
    'updateDelays',
  ]) {
    const f = W[name];
    const key = `bullmq.${name}`;
    counts[key] = 0;
    W[name] = function (...args) {
      counts[key]++;
      return f.apply(this, args);
    };
  }
  setInterval(() => writeFileSync(file, JSON.stringify(counts)), 100).unref();
}
