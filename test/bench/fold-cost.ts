/**
 * `node test/bench/fold-cost.ts` (round 38, `tail99`): what the end that folds the tenant's pending
 * index (includes/finish-tenant.lua → includes/index-fold.lua, once the list holds FOLD_AT entries:
 * every FOLD_AT / 2 runs at one create and one end a run) costs Redis against an end that does not,
 * in counts: the script's instructions (a redis-server under callgrind, `redis-callgrind.sh`: only
 * script calls counted) and the bytes the end appends to the AOF (a redis-server with
 * `appendfsync always`, the file's size around each end). `RUNS` (default 4 × FOLD_AT / 2) runs of
 * one tenant, each created and ended through the run store as the gateway and runner do, with a
 * trivial program's record, `DEPTH` (default 1) in flight. A count: no lock needed. Since round 39
 * (`fold-off`) the fold is a call of its own after the end (run-index.ts `foldAfterEnd`): held
 * here until the end is measured, then measured on its own ("the fold sent after it"; 0 where the
 * base folds inside the end).
 */
import { statSync } from 'node:fs';
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { createRunStore } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import type { Command, Redis } from 'ioredis';
import { FOLD_AT, FOLD_INDEX } from '../../services/runs/src/run-index-scripts.ts';
import { aofFileOf } from './aof-writes.ts';
import { pct } from './baselines.ts';
import { callgrindRedis } from './callgrind-redis.ts';
import { foldRun } from './fold-fixture.ts';

const RUNS = Number(process.env.RUNS ?? 2 * FOLD_AT);
/** Runs in flight: each run is ended after `DEPTH - 1` later runs were created (16 clients: 16). */
const DEPTH = Number(process.env.DEPTH ?? 1);
const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

/**
 * The store's client: every call as the given client's, but a fold-index-5 call (since round 39
 * `fold-off` sent by the end's caller after the end's answer, run-index.ts `foldAfterEnd`) is held
 * until `release`, so the end is measured alone and the fold after it on its own.
 */
function holdingFolds(redis: Redis) {
  const held: Command[] = [];
  const client = new Proxy(redis, {
    get(target, name) {
      if (name === 'sendCommand')
        return (command: Command) => {
          if (command.name === 'evalsha' && String(command.args[0]) === FOLD_INDEX.sha) {
            held.push(command);
            return command.promise;
          }
          return target.sendCommand(command);
        };
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const release = async () => {
    const sent = held.splice(0);
    for (const command of sent) redis.sendCommand(command);
    await Promise.all(sent.map((c) => c.promise));
    return sent.length;
  };
  return { client, release };
}

/**
 * Each end's measure (`measure` read around `finish`), whether it folded the list or had its
 * fold sent after it, and that fold's own measure (0 when it folded inside the end).
 */
async function ends(redis: Redis, measure: () => number | Promise<number>) {
  // The fold script known to the server first, so its calls go as EVALSHA (NOSCRIPT's retry is
  // an EVAL this does not hold).
  await FOLD_INDEX.run(
    redis,
    ['{t:none}:index:pending', '{t:none}:s', '{t:none}:e', '{t:none}:ss', '{t:none}:st'],
    [],
  );
  const { client, release } = holdingFolds(redis);
  // The store's own default unless ISLET_WRITE_FORMAT names one (round 40 `format-two`; the default
  // is 2 since round 41 `format-default`, 1 before): each side of an ABBA writes what its users get.
  const format = process.env.ISLET_WRITE_FORMAT;
  const runs = createRunStore(client, sealer, (format ? { writeFormat: format } : {}) as never);
  const out: { folded: boolean; n: number; fold: number }[] = [];
  const inFlight: ReturnType<typeof foldRun>[] = [];
  for (let i = 0; i < RUNS + DEPTH - 1; i++) {
    if (i < RUNS) {
      const run = foldRun(i);
      await runs.create(run, { maxInFlight: 1000, sessionTtlSeconds: 60 });
      inFlight.push(run);
    }
    if (inFlight.length < DEPTH && i < RUNS) continue;
    const run = inFlight.shift()!;
    const before = await measure();
    const pending = await redis.llen(keys.indexPending('dev'));
    await runs.finish(run, {
      status: 'Completed',
      result: { _tag: 'Completed', value: 12, logs: [] },
      text: '12',
      usage: { bindingCalls: 0, cpuMs: 1 },
    });
    const mid = await measure();
    const inEnd = (await redis.llen(keys.indexPending('dev'))) < pending;
    const after = (await release()) > 0;
    const fold = after ? (await measure()) - mid : 0;
    out.push({ folded: inEnd || after, n: mid - before, fold });
  }
  return out;
}

function report(label: string, xs: { folded: boolean; n: number; fold: number }[]): void {
  const folded = xs.filter((x) => x.folded).map((x) => x.n);
  const plain = xs.filter((x) => !x.folded).map((x) => x.n);
  const after = xs.filter((x) => x.folded).map((x) => x.fold);
  const both = xs.filter((x) => x.folded).map((x) => x.n + x.fold);
  const mean = (a: number[]) => a.reduce((s, x) => s + x, 0) / a.length;
  console.log(
    `${label}: an end that folds or is due a fold ${pct(folded, 50).toFixed(0)} p50 (${folded.length} ends), ` +
      `one that does not ${pct(plain, 50).toFixed(0)} p50 (${plain.length} ends); the fold sent after it ` +
      `${pct(after, 50).toFixed(0)} p50, end + fold ${pct(both, 50).toFixed(0)} p50; ` +
      `mean a run ${mean(xs.map((x) => x.n + x.fold)).toFixed(0)}, of it the folds' ${(
        (both.reduce((s, x) => s + x, 0) - both.length * pct(plain, 50)) / xs.length
      ).toFixed(0)}`,
  );
}

const cg = await callgrindRedis('fold-cost');
cg.r.on('error', () => undefined); // refused until valgrind has the server up
try {
  for (let i = 0; ; i++)
    try {
      await cg.r.ping();
      break;
    } catch (e) {
      if (i > 60) throw e;
    }
  report('instructions of the end script', await ends(cg.r, cg.instructions));
} finally {
  await cg.stop();
}
const server = await startRedis({ appendFsync: 'always' });
const redis = createRedis(server.url);
try {
  const file = await aofFileOf(redis);
  report("bytes of the end's AOF write", await ends(redis, () => statSync(file).size));
} finally {
  redis.disconnect();
  await server.stop();
}
