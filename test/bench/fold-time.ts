/**
 * `node test/bench/fold-time.ts` (round 38, `tail99`): Redis's own time for one fold
 * (fold-index-5: includes/index-fold.lua) of `ENTRIES` pending entries (a create and an end a
 * run; `size` - 1 of them, the last run not ended, so no end folds them itself), on a tenant whose index already holds `BEFORE` runs (default 5000, as the sequential bench's
 * after its warm-up), against the fold's size: the pending list's state is saved, then restored and
 * folded `CALLS` times (default 100) in each of `ROUNDS` rounds (default 5, the best kept), for each
 * size in `SIZES` (default 2,16,64); Redis's time is `INFO commandstats`' usec for EVALSHA (no
 * fsync, no network). A time: under the bench lock.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { createRunStore } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { luaSource } from '../../services/runs/src/lua-scripts.ts';
import { FINISH_TENANT_PARAMS } from '../../services/runs/src/run-index-scripts.ts';
import { foldRun } from './fold-fixture.ts';

const BEFORE = Number(process.env.BEFORE ?? 5000);
const CALLS = Number(process.env.CALLS ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const SIZES = (process.env.SIZES ?? '2,16,64').split(',').map(Number);
const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const server = await startRedis({ appendOnly: false });
const r = new Redis(server.url);
try {
  const runs = createRunStore(r, sealer);
  let n = 0;
  const one = async (end: boolean) => {
    const run = foldRun(n++, 6);
    await runs.create(run, { maxInFlight: 100000, sessionTtlSeconds: 600 });
    if (end)
      await runs.finish(run, {
        status: 'Completed',
        result: { _tag: 'Completed', value: 12, logs: [] },
        text: '12',
        usage: { bindingCalls: 0, cpuMs: 1 },
      });
  };
  for (let i = 0; i < BEFORE; i++) await one(true);
  // The fold's own parameters (run-index-scripts.ts FOLD_PARAMS, the feed's cap among them since round 38).
  const { TENANT_FEED_CHANNEL: _channel, FOLD_AT: _at, ...params } = FINISH_TENANT_PARAMS;
  const fold = new LuaScript(luaSource('fold-index-5', params));
  const foldKeys = [
    keys.indexPending('dev'),
    keys.indexRunSummaries('dev'),
    keys.indexRunsEnded('dev'),
    keys.indexSessions('dev'),
    keys.indexSessionStats('dev'),
  ];
  await fold.run(r, foldKeys, []); // the list empty: the next entries are this size's alone
  for (const size of SIZES) {
    await fold.run(r, foldKeys, []);
    // size / 2 runs, the last not ended: size - 1 entries (size itself would fold in the end)
    for (let i = 0; i < size / 2; i++) await one(i < size / 2 - 1);
    const pending = await r.llen(keys.indexPending('dev'));
    // The fold's keys only (the index, usage and health; not the runs' own records).
    const tenantKeys = keys.indexPending('dev').replace(/:index:pending$/, '');
    const names = (
      await Promise.all(['index', 'usage', 'health'].map((k) => r.keys(`${tenantKeys}:${k}*`)))
    ).flat();
    const dumps = await Promise.all(names.map(async (k) => [k, await r.dumpBuffer(k)] as const));
    const restore = async () => {
      const p = r.pipeline();
      for (const [k, v] of dumps) if (v) p.restore(k, 0, v, 'REPLACE');
      await p.exec();
    };
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < ROUNDS; round++) {
      await r.config('RESETSTAT');
      for (let i = 0; i < CALLS; i++) {
        await restore();
        await r.evalsha(fold.sha, foldKeys.length, ...foldKeys);
      }
      const m = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(await r.info('commandstats'));
      if (m) best = Math.min(best, Number(m[2]) / Number(m[1]));
    }
    console.log(
      `fold of ${pending} entries (index of ${BEFORE} runs): ${best.toFixed(1)} us a call (best of ${ROUNDS} rounds of ${CALLS})`,
    );
    await restore();
    await fold.run(r, foldKeys, []);
  }
} finally {
  r.disconnect();
  await server.stop();
}
