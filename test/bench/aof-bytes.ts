/**
 * `node test/bench/aof-bytes.ts` (round 35, `pickup`): what a sequential trivial run writes to the
 * AOF, command by command. A local cluster as `sequential.ts` sets it up (fair share 0.5 unless
 * BENCH_TENANT_SHARE), `WARM` runs (default 50), then `RUNS` (default 100) one after another; the
 * AOF's bytes written over those runs are read back from the server's append-only file(s), parsed
 * as RESP, grouped into the scripts' MULTI … EXEC blocks, and printed per run: each block kind (by
 * its first commands) with its bytes, and inside the largest block, the bytes of each command
 * (name and first key), so what the submit's one fsync'd write carries is listed; then the writes
 * and the 4 KB blocks of the file each crosses (`crossings`). `DUMP=1`: the last run's commands
 * whole. A count: no lock needed.
 */
import { readFileSync, statSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { aofCommands } from '@islet/testkit';
import { aofFileOf, byKindOf, crossings, parse } from './aof-writes.ts';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 100);
const WARM = Number(process.env.WARM ?? 50);

const cluster = await startOneClientCluster(process.env.BENCH_TENANT_SHARE ?? '0.5');
const redis = createRedis(cluster.redisUrl);
try {
  const once = stampedRun(cluster, () => performance.now());
  for (let i = 0; i < WARM; i++) await once();
  const file = await aofFileOf(redis);
  const from = statSync(file).size;
  for (let i = 0; i < RUNS; i++) await once();
  const bytes = readFileSync(file).subarray(from);
  const blocks = parse(bytes);
  if (process.env.DUMP) dump(bytes);
  crossings(blocks, from, RUNS);
  const byKind = byKindOf(blocks);
  console.log(`AOF over ${RUNS} runs: ${bytes.length} B, ${(bytes.length / RUNS).toFixed(0)} B a run`);
  for (const [k, e] of [...byKind].sort((a, b) => b[1].bytes - a[1].bytes)) {
    console.log(`  ${k}: ${(e.n / RUNS).toFixed(2)} a run, ${(e.bytes / e.n).toFixed(0)} B each`);
    for (const [c, n] of [...e.cmds].sort((a, b) => b[1] - a[1]))
      console.log(`      ${(n / e.n).toFixed(0).padStart(6)} B  ${c}`);
  }
} finally {
  redis.disconnect();
  await cluster.stop();
}

/** `DUMP=1`: the last run's commands written whole (each argument's bytes), to read what they repeat. */
function dump(buf: Buffer): void {
  const all = Array.from(aofCommands(buf), (c) => c.args);
  // The last run: from the last block holding a ZPOPMIN's submit onwards.
  let at = all.length - 1;
  while (at > 0 && !(all[at]![0]!.toLowerCase() === 'incr')) at--;
  for (const a of all.slice(at - 1)) console.log(JSON.stringify(a));
}
