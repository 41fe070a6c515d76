// `--import` preload (bench only, round 43 `send-floor`): in a gateway's main process only, the
// totals of what its event loop is asked to do — promises made (`async_hooks` PROMISE inits),
// `process.nextTick`, `setImmediate`, `setTimeout` and `queueMicrotask` calls, written to
// `$GW_COUNTS_DIR/gw-counts.<pid>.json` every 100 ms; `gw-loop-counts.ts` reads their differences
// over its measured runs. As `pickup-counts-preload.mjs` is for the runner.
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';

const main = process.argv[1] ?? '';
if (/gateway\/src\/main\.ts$/.test(main)) {
  const file = `${process.env.GW_COUNTS_DIR ?? '/tmp'}/gw-counts.${process.pid}.json`;
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
  // GW_COUNT_SITES=1: also where each promise is made (its first `GW_SITE_DEPTH` frames, default 4,
  // Node's internals and async_hooks' own cut), written to `gw-promise-sites.<pid>.json`: slow, counts only.
  if (process.env.GW_COUNT_SITES === '1') {
    const depth = Number(process.env.GW_SITE_DEPTH ?? 4);
    /** @type {Record<string, number>} */
    const sites = {};
    createHook({
      init(_id, type) {
        if (type !== 'PROMISE') return;
        const lines = (new Error().stack ?? '').split('\n').slice(1);
        const ours = lines
          .filter((l) => !/node:internal\/async_hooks|gw-loop-counts-preload/.test(l))
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
    const sitesFile = `${process.env.GW_COUNTS_DIR ?? '/tmp'}/gw-promise-sites.${process.pid}.json`;
    setInterval(() => writeFileSync(sitesFile, JSON.stringify(sites)), 200).unref();
  }
  setInterval(() => writeFileSync(file, JSON.stringify(counts)), 100).unref();
}
