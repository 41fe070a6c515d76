/**
 * `node test/bench/journal-end-cost.ts` (round 40, `journal-layout`): Redis instructions of a
 * call-making run's pushed end (`finish-run-14`) by the journal's layout, in one redis-server under
 * callgrind (`callgrind-redis.ts`: script calls only). Two runs of `CALLS` calls (default 20, one
 * source, as the gateway journals them), one journaled in layout 1 and one in layout 2, each ended
 * once through the run store with its EVALSHA captured, then replayed `N` times a phase (default 100;
 * every key restored from a DUMP before each call, outside the count): the previous release's end
 * script (the head's without its claim-part filter) on layout 1, the head's on layout 1 (the
 * default's cost of the filter) and the head's on layout 2; phases in the order A B C C B A. Prints
 * instructions a call and the pushed message's bytes. A count: no lock needed.
 */
import { generateSealKey, sealerFromConfig } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { createCallJournal, createRunStore } from '@islet/runs';
import { luaSource } from '../../services/runs/src/lua-scripts.ts';
import { FINISH_TENANT_PARAMS } from '../../services/runs/src/run-index-scripts.ts';
import { begunRun, capturedEnd } from './begun-run.ts';
import { callgrindRedis, endPushListener } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 100);
const CALLS = Number(process.env.CALLS ?? 20);
const { r: redis, instructions, stop } = await callgrindRedis('journal-end-cost');
const { listener, pushes, subscribed } = endPushListener(redis);
try {
  await redis.ping();
  await subscribed;
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
  const runs = createRunStore(redis, sealer);
  const source = {
    connectionId: 'conn-b2f9befdbca4',
    connectionName: 'Bench',
    name: 'ping',
    kind: 'tool' as const,
  };
  const now = Date.now();
  /** A run of CALLS calls journaled in `layout`, ended once: its end's KEYS and ARGV. */
  const ended = async (id: string, layout: '1' | '2') => {
    const journal = createCallJournal({ redis, sealer, writeFormat: layout });
    const run = await begunRun(runs, journal, id, now, 'Measure a call-making program');
    for (let i = 0; i < CALLS; i++) {
      await journal.claim(id, 1, {
        index: i,
        binding: 'bench.ping',
        argsJson: `{"i":${i}}`,
        source,
        sendNow: true,
      });
      await journal.complete(id, i, {
        type: 'result',
        valueJson: `{"pong":${i},"at":"2026-12-06T12:00:00.000Z"}`,
      });
    }
    // Every key as it is before this run's end: each replay of it starts from here.
    const dumps = await Promise.all(
      (await redis.keys('*')).map(async (k) => [k, await redis.dumpBuffer(k)] as const),
    );
    return { ...(await capturedEnd(redis, runs, run, now, { bindingCalls: CALLS })), dumps };
  };
  const one = await ended('bench-run-l1', '1');
  const two = await ended('bench-run-l2', '2');
  const head = luaSource('finish-run-14', { END_PUSH_MAX_BYTES: 32 * 1024, ...FINISH_TENANT_PARAMS });
  // The previous release's lines in place of the filter (includes/transition.lua at b09849f, as
  // luaSource gives it: comments and indentation taken out).
  const sizeRun = 'for i = 1, #run do size = size + #run[i] end';
  const from = head.indexOf('local journal\n');
  const to = head.indexOf(sizeRun, from) + sizeRun.length;
  if (from < 0 || !head.slice(from, to).includes('string.byte(name, 1) == 35'))
    throw new Error('no claim-part filter');
  const base =
    head.slice(0, from) +
    [
      'local journal',
      "if firstOnly then journal = {'#attempt', '1'} else journal = redis.call('HGETALL', KEYS[k + 2]) end",
      'local size = 0',
      sizeRun,
      'for i = 1, #journal do size = size + #journal[i] end',
    ].join('\n') +
    head.slice(to);
  const scripts = { base: new LuaScript(base), head: new LuaScript(head) };
  const phases = {
    'b09849f script, layout 1': { script: scripts.base, run: one },
    'head script, layout 1': { script: scripts.head, run: one },
    'head script, layout 2': { script: scripts.head, run: two },
  } as const;
  const names = Object.keys(phases) as (keyof typeof phases)[];
  const restore = async (dumps: (readonly [string, Buffer | null])[]) => {
    const p = redis.pipeline().flushall();
    for (const [k, v] of dumps) if (v) p.restore(k, 0, v, 'REPLACE');
    await p.exec();
  };
  const totals = new Map<string, number[]>();
  for (const name of [...names, ...names.slice().reverse()]) {
    const { script, run } = phases[name];
    await restore(run.dumps);
    await script.run(redis, run.keys, run.args);
    let spent = 0;
    pushes.length = 0;
    for (let i = 0; i < N; i++) {
      await restore(run.dumps);
      const before = instructions();
      await redis.evalsha(script.sha, run.keys.length, ...run.keys, ...run.args);
      spent += instructions() - before;
    }
    await new Promise((r) => setTimeout(r, 100));
    const mean = pushes.reduce((a, b) => a + b, 0) / Math.max(1, pushes.length);
    totals.set(name, [...(totals.get(name) ?? []), spent / N]);
    console.log(
      `${name}: ${(spent / N).toFixed(0)} instructions a call, ${pushes.length} pushes of ${mean.toFixed(0)} B`,
    );
  }
  console.log(
    `${CALLS} calls: ${[...totals].map(([k, v]) => `${k} ${v.map((x) => x.toFixed(0)).join(' / ')}`).join('; ')}`,
  );
} finally {
  listener.disconnect();
  await stop();
}
process.exit(0);
