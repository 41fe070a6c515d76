/**
 * `node test/bench/end-script-cost.ts`: Redis's own time for one run's end script
 * (`finish-run-14`, an end pushed to its waiter, one subscriber on the end channel), and for
 * variants of it with one part taken out, to find what costs. The end of a trivial run is written
 * once through the run store, its EVALSHA captured, and then replayed `CALLS` times (default
 * 300) in each of `ROUNDS` rounds (default 7, the best round kept) on the state as it was before the end (every key restored from a DUMP in between);
 * Redis's time is `INFO commandstats`' usec for EVALSHA (no SLOWLOG: logging every command a
 * script runs costs time of its own). No fsync, no network: the script alone.
 */
import { channels, createRedis, generateSealKey, sealerFromConfig } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { createCallJournal, createRunStore } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import { luaSource } from '../../services/runs/src/lua-scripts.ts';
import { FINISH_TENANT_PARAMS } from '../../services/runs/src/run-index-scripts.ts';
import { begunRun, capturedEnd } from './begun-run.ts';

const CALLS = Number(process.env.CALLS ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const server = await startRedis({ appendOnly: false });
const redis = createRedis(server.url);
const listener = createRedis(server.url);
try {
  await listener.subscribe(channels.runEvents);
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
  const runs = createRunStore(redis, sealer);
  const journal = createCallJournal({ redis, sealer });
  const now = Date.now();
  const run = await begunRun(runs, journal, 'bench-run-0001', now);
  const names = await redis.keys('*');
  const dumps = await Promise.all(names.map(async (k) => [k, await redis.dumpBuffer(k)] as const));
  const { keys, args } = await capturedEnd(redis, runs, run, now);
  const params = { END_PUSH_MAX_BYTES: 32 * 1024, ...FINISH_TENANT_PARAMS };
  const full = luaSource('finish-run-14', params);

  const restore = async () => {
    const p = redis.pipeline().flushall();
    for (const [k, v] of dumps) if (v) p.restore(k, 0, v, 'REPLACE');
    await p.exec();
  };
  const variants: {
    label: string;
    script: LuaScript;
    argv: (string | number)[];
    best: number;
    slowlog?: boolean;
    commands?: string;
  }[] = [];
  const measure = async (label: string, source: string, argv = args, slowlog = false) => {
    variants.push({ label, script: new LuaScript(source), argv, best: Number.POSITIVE_INFINITY, slowlog });
  };
  // Rounds of every variant in turn, each variant's best round kept: the machine is shared, so a
  // round another process slowed down does not count.
  const runAll = async () => {
    for (let round = 0; round < ROUNDS; round++)
      for (const v of variants) {
        await restore();
        await v.script.run(redis, keys, v.argv);
        await redis.config('RESETSTAT');
        await redis.config('SET', 'slowlog-log-slower-than', v.slowlog ? '0' : '10000');
        await redis.slowlog('RESET');
        for (let i = 0; i < CALLS; i++) {
          await restore();
          await redis.evalsha(v.script.sha, keys.length, ...keys, ...v.argv);
        }
        const stats = await redis.info('commandstats');
        const m = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(stats);
        if (!m) continue;
        const us = Number(m[2]) / Number(m[1]);
        if (us >= v.best) continue;
        v.best = us;
        // The commands the script ran (commandstats counts them too), without the restore's.
        v.commands = [...stats.matchAll(/^cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)/gm)]
          .filter(([, name]) => !['evalsha', 'flushall', 'restore', 'config', 'slowlog'].includes(name ?? ''))
          .map(
            ([, name, calls, usec]) =>
              `${name} ${(Number(usec) / CALLS).toFixed(1)}/${Number(calls) / CALLS}`,
          )
          .join(', ');
      }
    for (const v of variants) console.log(`${v.best.toFixed(1).padStart(7)} us/call  ${v.label}`);
    console.log(`commands of "${variants[0]?.label}" (us per call / calls): ${variants[0]?.commands}`);
  };
  // A variant whose text the scripts no longer hold is skipped (said so), not fatal: the parts
  // moved between rounds (round 22 took the summary's decode out of the end).
  const without = (what: string, from: string, to: string) => {
    if (full.includes(from)) return full.replace(from, to);
    console.log(`variant "${what}": text not in finish-run-14 any more, skipped`);
    return undefined;
  };
  const measureIf = async (label: string, source: string | undefined) => {
    if (source !== undefined) await measure(label, source);
  };
  await restore();
  const before = await redis.hgetall(`islet:run:{${run.id}}`);
  const sizes = Object.entries(before)
    .map(([f, v]) => `${f} ${v.length}`)
    .join(', ');
  console.log(
    `finish-run-14, ${CALLS} calls each, ${keys.length} keys, ${args.length} args; record: ${sizes}`,
  );
  await measure('as written (pushed end)', full);
  await measure('as written, SLOWLOG logging every command (as script-cost.ts runs)', full, args, true);
  const noPush = [...args];
  noPush[6] = '0';
  await measure('end not pushed (ARGV[7] = 0)', full, noPush);
  await measureIf('push without cjson.encode', without('push', 'cjson.encode({run, journal})', "'x'"));
  const summary = without(
    'summary',
    'local s = cjson.decode(raw)',
    "local s = { status = 'Running', createdAt = 0, sessionId = '' }",
  );
  await measureIf(
    'tenant half without the summary decode/encode',
    summary?.replace(
      "redis.call('HSET', summaries, id, cjson.encode(s))",
      "redis.call('HSET', summaries, id, 'x')",
    ),
  );
  await measureIf(
    'no health counters',
    without('health', "if redis.call('HINCRBY', health,", "if false and redis.call('HINCRBY', health,"),
  );
  await measureIf(
    'no feed append',
    without('feed', "feedAppend(KEYS[k + 7], 'run', id, ARGV[a + 8], quiet)", ''),
  );
  await measureIf(
    'no events XADD (its id made up)',
    without(
      'events',
      "redis.call('XADD', KEYS[k + 1], 'MAXLEN', '~', ARGV[a + 4], '*', 'type', ARGV[a + 2], 'data', ARGV[a + 3])",
      "'1-1'",
    ),
  );
  await measure('return at once', `do return 1 end\n${full}`);
  await runAll();
} finally {
  listener.disconnect();
  redis.disconnect();
  await server.stop();
}
