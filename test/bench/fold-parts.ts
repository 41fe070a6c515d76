/**
 * `node test/bench/fold-parts.ts` (round 38, `tail99`): where a fold's instructions go
 * (includes/index-fold.lua through fold-index-5), in a redis-server under callgrind: `RUNS`
 * (default FOLD_AT / 2) runs of one tenant created and all but the last ended through the run
 * store (a pending list of FOLD_AT - 1 entries, one short of the fold the next end makes), its
 * keys saved; then, on that state restored each time, the fold script cut short after each of its
 * parts (a `return` put in its text), `N` calls each (default 5): the instructions of each prefix.
 * A count: no lock needed.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { createRunStore } from '@islet/runs';
import { luaSource } from '../../services/runs/src/lua-scripts.ts';
import { FINISH_TENANT_PARAMS, FOLD_AT } from '../../services/runs/src/run-index-scripts.ts';
import { callgrindRedis } from './callgrind-redis.ts';
import { foldRun } from './fold-fixture.ts';

const RUNS = Number(process.env.RUNS ?? FOLD_AT / 2);
const N = Number(process.env.N ?? 5);
const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const cg = await callgrindRedis('fold-parts');
const r = cg.r;
r.on('error', () => undefined); // refused until valgrind has the server up
try {
  for (let i = 0; ; i++)
    try {
      await r.ping();
      break;
    } catch (e) {
      if (i > 60) throw e;
    }
  const runs = createRunStore(r, sealer);
  for (let i = 0; i < RUNS; i++) {
    const run = foldRun(i);
    await runs.create(run, { maxInFlight: 1000, sessionTtlSeconds: 60 });
    if (i < RUNS - 1)
      await runs.finish(run, {
        status: 'Completed',
        result: { _tag: 'Completed', value: 12, logs: [] },
        text: '12',
        usage: { bindingCalls: 0, cpuMs: 1 },
      });
  }
  const pending = await r.llen(keys.indexPending('dev'));
  const names = await r.keys('*');
  const dumps = await Promise.all(names.map(async (k) => [k, await r.dumpBuffer(k)] as const));
  const restore = async () => {
    const p = r.pipeline().flushall();
    for (const [k, v] of dumps) if (v) p.restore(k, 0, v, 'REPLACE');
    await p.exec();
  };
  // The fold's own parameters: the end's, less the feed's and the fold size (not in its text).
  // The fold's own parameters (run-index-scripts.ts FOLD_PARAMS, the feed's cap among them since round 38).
  const { TENANT_FEED_CHANNEL: _channel, FOLD_AT: _at, ...params } = FINISH_TENANT_PARAMS;
  const full = luaSource('fold-index-5', params);
  const k = keys;
  const foldKeys = [
    k.indexPending('dev'),
    k.indexRunSummaries('dev'),
    k.indexRunsEnded('dev'),
    k.indexSessions('dev'),
    k.indexSessionStats('dev'),
  ];
  // Each part's end, as text of the fold: the script cut there returns 0.
  // Each part's end, as the text that follows it (the loaded text has no comments or indents):
  // the script cut there returns 0.
  const cuts: [string, string][] = [
    ['LRANGE, every entry decoded', 'if creates > 0 and now and retention then'],
    ['+ the prune (none due), the summaries of runs ended only (HMGET)', 'local function statsOf'],
    ['+ the session fields read (HMGET)', 'local statChanged, statOrder'],
    ["+ the entries applied in Lua (each create's summary decoded)", 'if #runArgs > 0 then'],
    ['+ ZADD runs', 'if #written > 0 then'],
    ['+ HSET summaries (each ended summary encoded)', 'if #endedArgs > 0 then'],
    ['+ ZADD ended, sessions, HSET stats', 'for _, key in ipairs(order) do'],
    ['+ usage and health counters (HMGET + HSET)', "redis.call('LTRIM', pending"],
    ['whole fold (+ LTRIM)', ''],
  ];
  // Whole folds with one part replaced: what that part costs (the difference to the whole fold).
  const swaps: [string, string, string][] = [
    [
      "whole fold, each create's summary not decoded (a stub table: its decode's cost)",
      'sums[e.i] = cjson.decode(e.m)',
      "sums[e.i] = { status = 'Queued', sessionId = e.s, createdAt = e.a }",
    ],
    [
      "whole fold, each ended summary not encoded (its text as created: the encode's cost)",
      'args[#args + 1] = raws[id] or cjson.encode(sums[id])',
      "args[#args + 1] = raws[id] or 'x'",
    ],
  ];
  // A script's instructions a call, the list restored before each (one warm call first).
  const perCall = async (s: LuaScript): Promise<number> => {
    await restore();
    await s.run(r, foldKeys, []);
    const a = cg.instructions();
    for (let i = 0; i < N; i++) {
      await restore();
      await s.run(r, foldKeys, []);
    }
    return (cg.instructions() - a) / N;
  };
  const base = await perCall(new LuaScript('return 0'));
  console.log(
    `fold of ${pending} entries (${RUNS} runs), instructions a call over 'return 0' (${base.toFixed(0)}):`,
  );
  for (const [label, at] of cuts) {
    if (at && !full.includes(at)) {
      console.log(`  ${label}: cut not found in the text, skipped`);
      continue;
    }
    const s = new LuaScript(at ? full.replace(at, `do return 0 end\n${at}`) : full);
    console.log(`  ${(((await perCall(s)) - base) / 1000).toFixed(0).padStart(8)} K  ${label}`);
  }
  for (const [label, from, to] of swaps) {
    if (!full.includes(from)) {
      console.log(`  ${label}: text not found, skipped`);
      continue;
    }
    const s = new LuaScript(full.replace(from, to));
    console.log(`  ${(((await perCall(s)) - base) / 1000).toFixed(0).padStart(8)} K  ${label}`);
  }
  await restore(); // the list as before the fold
  const [one] = await r.lrange(keys.indexPending('dev'), 0, 0);
  const [end] = await r.lrange(keys.indexPending('dev'), 1, 1);
  console.log(`a create's entry (${one?.length} B): ${one}`);
  console.log(`an end's entry (${end?.length} B): ${end}`);
} finally {
  await cg.stop();
}
