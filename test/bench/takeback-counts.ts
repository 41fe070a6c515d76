/**
 * `node test/bench/takeback-counts.ts`: Redis's commands and instructions a handed trivial run with
 * the gateway's hand-off liveness check off and on (ISLET_HANDOFF_LIVE_CHECK, @islet/runs
 * handoff-live.ts; round 46 `takeback`), in one build. Per side: a redis-server under valgrind's
 * callgrind collecting inside `evalGenericCommand` (every script call with its commands: the
 * submit's, the registration's, the end's), a local cluster on it (one gateway, one read-only
 * runner) with that side's setting; `WARM` (default 20) trivial runs, then `N` (default 100)
 * sequential trivial runs, each submitted once the runner's worker is registered idle (so each is
 * handed); `INFO commandstats` reset and the counts zeroed between. Prints per run: commands by
 * name (those that differ between the sides first), script calls, instructions inside script calls
 * (`callgrind_annotate`'s total / N) and the PUBSUB command's own share. Sides in the order `SIDES`
 * (default "off on on off"). Counts: no bench lock needed.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { callgrindRedisAt } from './callgrind-redis.ts';
import { trivialRun } from './cluster-figures.ts';

const N = Number(process.env.N ?? 100);
const WARM = Number(process.env.WARM ?? 20);
const SIDES = (process.env.SIDES ?? 'off on on off').split(' ');
const IDLE = 'islet:{runs-read-only}:idle';
const out = `/tmp/takeback-counts/${Date.now()}`;
mkdirSync(out, { recursive: true });

/** `INFO commandstats` as calls by command. */
function commandStats(info: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of info.split('\n')) {
    const hit = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (hit) m.set(hit[1]!, Number(hit[2]));
  }
  return m;
}

/** A callgrind file's total and the inclusive cost of the functions whose name contains `fn`. */
function instructions(file: string, fn: string): { total: number; fn: number } {
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const total = Number(
    /([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS/.exec(text)?.[1]?.replaceAll(',', '') ?? 'NaN',
  );
  let own = 0;
  for (const line of text.split('\n'))
    if (line.includes(fn)) {
      const n = /^\s*([\d,]+)/.exec(line)?.[1];
      if (n) own = Math.max(own, Number(n.replaceAll(',', '')));
    }
  return { total, fn: own };
}

const rows: string[] = [];
for (const [i, side] of SIDES.entries()) {
  const file = `${out}/${i}-${side}.callgrind`;
  const cg = await callgrindRedisAt('evalGenericCommand', file);
  const cluster = await startCluster({
    redisUrl: cg.url,
    gateways: 1,
    runners: [{ modes: ['read-only'] }],
    env: { ISLET_HANDOFF_LIVE_CHECK: side, ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
  });
  const redis = createRedis(cluster.redisUrl);
  try {
    const run = trivialRun(cluster, 'takeback');
    const idle = async () => {
      while ((await redis.zcard(IDLE)) === 0) await new Promise((r) => setTimeout(r, 2));
    };
    for (let w = 0; w < WARM; w++) {
      await idle();
      await run();
    }
    await idle();
    await redis.config('RESETSTAT');
    cg.zero();
    for (let n = 0; n < N; n++) {
      await idle();
      await run();
    }
    const stats = commandStats(await redis.info('commandstats'));
    const line = [...stats]
      .filter(([name]) => !['info', 'config|resetstat', 'zcard'].includes(name))
      .map(([name, calls]) => `${name} ${(calls / N).toFixed(2)}`)
      .join(', ');
    const total = [...stats]
      .filter(([name]) => !['info', 'config|resetstat', 'zcard'].includes(name))
      .reduce((s, [, c]) => s + c, 0);
    rows.push(`${side}: commands a run ${(total / N).toFixed(2)} (${line})`);
  } finally {
    redis.disconnect();
    await cluster.stop();
    await cg.stop();
  }
  const { total, fn } = instructions(file, 'pubsubCommand');
  rows.push(
    `${side}: instructions in script calls a run ${(total / N).toFixed(0)}; in pubsubCommand ${(fn / N).toFixed(0)} (${file})`,
  );
  console.log(rows.slice(-2).join('\n'));
}
console.log(`--- N=${N}\n${rows.join('\n')}`);
process.exit(0);
