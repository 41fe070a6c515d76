// `--import` preload (bench only; round 41 `pickup-direct` for the runner, round 43 `send-floor` for
// the gateway): in the main process of `$LOOP_COUNTS_PROCESS` (`runner` or `gateway`) only, the
// totals of what its event loop is asked to do — promises made (`async_hooks` PROMISE inits),
// `process.nextTick`, `setImmediate`, `setTimeout`, `setInterval` and `queueMicrotask` calls; in a runner also the
// calls of BullMQ's Worker methods on a run's path — written to `$LOOP_COUNTS_DIR/loop-counts.<pid>.json`
// every 100 ms; `loop-counts.ts` reads their differences over its measured runs.
// COUNT_SITES=1: also where each promise is made (its first `SITE_DEPTH` frames, default 4, Node's
// internals and async_hooks' own cut), written to `promise-sites.<pid>.json`: slow, counts only.
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const which = process.env.LOOP_COUNTS_PROCESS ?? 'runner';
const dir = process.env.LOOP_COUNTS_DIR ?? '/tmp';
if (new RegExp(`${which}/src/main\\.ts$`).test(process.argv[1] ?? '')) {
  /** @type {Record<string, number>} */
  const counts = {
    promises: 0,
    nextTick: 0,
    setImmediate: 0,
    setTimeout: 0,
    // Round 48 `engine-timers`: the engine's resident guard became one setInterval an engine.
    setInterval: 0,
    queueMicrotask: 0,
  };
  createHook({
    init(_id, type) {
      if (type === 'PROMISE') counts.promises++;
    },
  }).enable();
  /** Counts each call of `owner[name]` under `key`. */
  const wrap = (owner, name, key) => {
    const f = owner[name];
    counts[key] = 0;
    owner[name] = function (...args) {
      counts[key]++;
      return f.apply(this, args);
    };
  };
  wrap(process, 'nextTick', 'nextTick');
  for (const name of ['setImmediate', 'setTimeout', 'setInterval', 'queueMicrotask'])
    wrap(globalThis, name, name);
  // TIMER_SITES=1 (round 49 `engine-timers-2`): where each `setTimeout` is called (its first
  // `SITE_DEPTH` frames), written to `timer-sites.<pid>.json`: whose timers a run arms.
  if (process.env.TIMER_SITES === '1') {
    const depth = Number(process.env.SITE_DEPTH ?? 4);
    /** @type {Record<string, number>} */
    const timerSites = {};
    const counted = globalThis.setTimeout;
    globalThis.setTimeout = function (...args) {
      const key = (new Error().stack ?? '')
        .split('\n')
        .slice(2)
        .filter((l) => !/loop-counts-preload/.test(l))
        .slice(0, depth)
        .map((l) =>
          l
            .trim()
            .replace(/^at /, '')
            .replace(/\(?(?:file:\/\/)?\/[^)]*\/([^/]+\/[^/]+:\d+):\d+\)?/, '$1'),
        )
        .join(' < ');
      timerSites[key] = (timerSites[key] ?? 0) + 1;
      return counted.apply(this, args);
    };
    setInterval(
      () => writeFileSync(`${dir}/timer-sites.${process.pid}.json`, JSON.stringify(timerSites)),
      200,
    ).unref();
  }
  if (which === 'runner') {
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
    ])
      wrap(W, name, `bullmq.${name}`);
  }
  if (process.env.COUNT_SITES === '1') {
    const depth = Number(process.env.SITE_DEPTH ?? 4);
    /** @type {Record<string, number>} */
    const sites = {};
    createHook({
      init(_id, type) {
        if (type !== 'PROMISE') return;
        const lines = (new Error().stack ?? '').split('\n').slice(1);
        const ours = lines
          .filter((l) => !/node:internal\/async_hooks|loop-counts-preload/.test(l))
          .slice(0, depth)
          .map((l) =>
            l
              .trim()
              .replace(/^at /, '')
              .replace(/\(?(?:file:\/\/)?\/[^)]*\/([^/]+\/[^/]+:\d+):\d+\)?/, '$1'),
          );
        const key = ours.join(' < ');
        sites[key] = (sites[key] ?? 0) + 1;
      },
    }).enable();
    const sitesFile = `${dir}/promise-sites.${process.pid}.json`;
    setInterval(() => writeFileSync(sitesFile, JSON.stringify(sites)), 200).unref();
  }
  setInterval(
    () => writeFileSync(`${dir}/loop-counts.${process.pid}.json`, JSON.stringify(counts)),
    100,
  ).unref();
}
