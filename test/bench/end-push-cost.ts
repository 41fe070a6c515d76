/**
 * `node test/bench/end-push-cost.ts` (round 37 `end-open`; mended in round 41 `push-lean`): Redis
 * instructions of a waited run's end script (`finish-run-14`, its end pushed) and the pushed
 * message's bytes, the previous release's script (the whole record pushed as `<id> end`,
 * services/runs/test/previous-end-push.ts) against the head's (`<id> end2`, the fields an execution
 * and end write), in one redis-server under callgrind (`callgrind-redis.ts`: script calls only).
 * A trivial run with the runner's stage stamps, created in each stored format (`ISLET_WRITE_FORMAT`
 * 1 and 2: its submit's and end's fields), is ended once through the run store with its script call
 * captured (the store sends it through `sendCommand`, core lua-script.ts; round 37's capture of
 * `redis.evalsha` saw none since), then replayed `N` times a phase (default 200; every key restored
 * from a DUMP before each call, outside the count), phases ABBA per format; one subscriber on the end
 * channel; `FORMATS=1` or `2` for one format. A count: no lock needed.
 */
import { generateSealKey, sealerFromConfig } from '@islet/core';
import type { LuaScript } from '@islet/core/lua-script';
import { createCallJournal, createRunStore } from '@islet/runs';
import { FINISH_RUN } from '../../services/runs/src/run-store-scripts.ts';
import { PREVIOUS_FINISH_RUN } from '../../services/runs/test/previous-end-push.ts';
import { begunRun, capturedEnd } from './begun-run.ts';
import { callgrindRedis, endPushListener } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 200);
const { r: redis, instructions, stop } = await callgrindRedis('end-push-cost');
const { listener, pushes, subscribed } = endPushListener(redis);
try {
  await subscribed;
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
  const now = Date.now();
  /** A trivial waited run of `format` ended once: its end's KEYS, ARGV and every key before it. */
  const ended = async (id: string, format: '1' | '2') => {
    const runs = createRunStore(redis, sealer, { writeFormat: format });
    const journal = createCallJournal({ redis, sealer, writeFormat: format });
    const run = await begunRun(runs, journal, id, now);
    const dumps = await Promise.all(
      (await redis.keys('*')).map(async (k) => [k, await redis.dumpBuffer(k)] as const),
    );
    return { ...(await capturedEnd(redis, runs, run, now, { sentNoCall: true })), dumps };
  };
  const restore = async (dumps: (readonly [string, Buffer | null])[]) => {
    const p = redis.pipeline().flushall();
    for (const [k, v] of dumps) if (v) p.restore(k, 0, v, 'REPLACE');
    await p.exec();
  };
  const scripts: Record<'previous' | 'head', LuaScript> = { previous: PREVIOUS_FINISH_RUN, head: FINISH_RUN };
  // `FORMATS=2` (or `1`): one stored format only.
  const formats = (process.env.FORMATS ?? '1,2').split(',') as ('1' | '2')[];
  for (const format of formats) {
    const end = await ended(`bench-run-f${format}`, format);
    const totals = { previous: 0, head: 0 };
    const bytes = { previous: 0, head: 0 };
    for (const side of ['previous', 'head', 'head', 'previous'] as const) {
      const script = scripts[side];
      await restore(end.dumps);
      await script.run(redis, end.keys, end.args);
      let spent = 0;
      // The warm call's push delivered first, then not counted.
      await new Promise((r) => setTimeout(r, 100));
      pushes.length = 0;
      for (let i = 0; i < N; i++) {
        await restore(end.dumps);
        const before = instructions();
        await redis.evalsha(script.sha, end.keys.length, ...end.keys, ...end.args);
        spent += instructions() - before;
      }
      await new Promise((r) => setTimeout(r, 100));
      if (pushes.length !== N) throw new Error(`${side}: ${pushes.length} of ${N} ends pushed`);
      totals[side] += spent / N / 2;
      bytes[side] += pushes.reduce((a, b) => a + b, 0) / pushes.length / 2;
      console.log(
        `format ${format}, ${side}: ${(spent / N).toFixed(0)} instructions a call, ${pushes.length} pushes`,
      );
    }
    console.log(
      `format ${format}: end script, pushed: previous ${totals.previous.toFixed(0)}, head ${totals.head.toFixed(0)} instructions a call (${(totals.head - totals.previous).toFixed(0)}); pushed message ${bytes.previous.toFixed(0)} → ${bytes.head.toFixed(0)} B`,
    );
  }
} finally {
  listener.disconnect();
  await stop();
}
process.exit(0);
