/**
 * `node test/bench/end-push-cost.ts` (round 37, `end-open`): Redis instructions of a waited run's
 * end script (`finish-run-13`, its end pushed), the head's against the same script pushing the end's
 * `timings` as the base did (the head's text with its `name ~= 'timings'` check taken out), in one
 * redis-server under callgrind (`redis-callgrind.sh`: script calls only). The end of a trivial run
 * with the runner's stage stamps is written once through the run store, its EVALSHA captured, and
 * replayed `N` times a phase (default 200; every key restored from a DUMP before each call, outside
 * the count), phases ABBA; one subscriber on the end channel. A count: no lock needed.
 */
import { generateSealKey, sealerFromConfig } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { createCallJournal, createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { luaSource } from '../../services/runs/src/lua-scripts.ts';
import { FINISH_TENANT_PARAMS } from '../../services/runs/src/run-index-scripts.ts';
import { PROGRAM } from './baselines.ts';
import { callgrindRedis, endPushListener } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 200);
const { r: redis, instructions, stop } = await callgrindRedis('end-push-cost');
const { listener, pushes, subscribed } = endPushListener(redis);
try {
  await redis.ping();
  await subscribed;
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
  const runs = createRunStore(redis, sealer);
  const journal = createCallJournal({ redis, sealer });
  const now = Date.now();
  const run = runFixture('bench-run-0001', {
    createdAt: now,
    tenant: 'dev',
    session: 'bench',
    code: PROGRAM,
    description: 'Measure a trivial program',
    pushEnd: true,
  });
  await runs.create(run);
  await journal.beginAttempt(run.id, `islet:run:{${run.id}}`, runs.attemptStartEvent(run.id));
  const names = await redis.keys('*');
  const dumps = await Promise.all(names.map(async (k) => [k, await redis.dumpBuffer(k)] as const));
  let captured: (string | number)[] = [];
  const evalsha = redis.evalsha.bind(redis);
  redis.evalsha = ((...args: (string | number)[]) => {
    captured = args;
    return evalsha(...(args as Parameters<typeof evalsha>));
  }) as typeof redis.evalsha;
  // A runner's stamps as the end writes them (run-store-args.ts `timingsText`).
  const at = (ms: number) => now + ms + 0.123;
  await runs.finish(run, {
    status: 'Completed',
    result: { _tag: 'Completed', value: 12, logs: [] },
    text: '12',
    timings: {
      enqueued: at(0),
      fetched: at(1),
      pickedUp: at(2),
      engineCalled: at(3),
      engineReturned: at(4),
      endSent: at(5),
    },
    usage: { bindingCalls: 0, cpuMs: 1 },
  });
  redis.evalsha = evalsha;
  const [, numKeys, ...rest] = captured;
  const keys = rest.slice(0, Number(numKeys)).map(String);
  const args = rest.slice(Number(numKeys));
  const head = luaSource('finish-run-13', { END_PUSH_MAX_BYTES: 32 * 1024, ...FINISH_TENANT_PARAMS });
  const check = " and name ~= 'timings'";
  if (!head.includes(check)) throw new Error("the head's end script has no timings check");
  const scripts = { base: new LuaScript(head.replace(check, '')), head: new LuaScript(head) };
  const restore = async () => {
    const p = redis.pipeline().flushall();
    for (const [k, v] of dumps) if (v) p.restore(k, 0, v, 'REPLACE');
    await p.exec();
  };
  const totals = { base: 0, head: 0 };
  const bytes = { base: 0, head: 0 };
  for (const side of ['base', 'head', 'head', 'base'] as const) {
    const script = scripts[side];
    await restore();
    await script.run(redis, keys, args);
    let spent = 0;
    pushes.length = 0;
    for (let i = 0; i < N; i++) {
      await restore();
      const before = instructions();
      await redis.evalsha(script.sha, keys.length, ...keys, ...args);
      spent += instructions() - before;
    }
    await new Promise((r) => setTimeout(r, 100));
    totals[side] += spent / N / 2;
    bytes[side] += pushes.reduce((a, b) => a + b, 0) / Math.max(1, pushes.length) / 2;
    console.log(`${side}: ${(spent / N).toFixed(0)} instructions a call, ${pushes.length} pushes`);
  }
  console.log(
    `end script, pushed: base ${totals.base.toFixed(0)}, head ${totals.head.toFixed(0)} instructions a call (${(totals.head - totals.base).toFixed(0)}); pushed message ${bytes.base.toFixed(0)} → ${bytes.head.toFixed(0)} B`,
  );
} finally {
  listener.disconnect();
  await stop();
}
process.exit(0);
