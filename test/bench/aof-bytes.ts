/**
 * `node test/bench/aof-bytes.ts` (round 35, `pickup`): what a sequential trivial run writes to the
 * AOF, command by command. A local cluster as `sequential.ts` sets it up (fair share 0.5 unless
 * BENCH_TENANT_SHARE), `WARM` runs (default 50), then `RUNS` (default 100) one after another; the
 * AOF's bytes written over those runs are read back from the server's append-only file(s), parsed
 * as RESP, grouped into the scripts' MULTI … EXEC blocks, and printed per run: each block kind (by
 * its first commands) with its bytes, and inside the largest block, the bytes of each command
 * (name and first key), so what the submit's one fsync'd write carries is listed. A count: no lock
 * needed.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRedis } from '@islet/core';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 100);
const WARM = Number(process.env.WARM ?? 50);

const cluster = await startOneClientCluster(process.env.BENCH_TENANT_SHARE ?? '0.5');
const redis = createRedis(cluster.redisUrl);
try {
  const once = stampedRun(cluster, () => performance.now());
  for (let i = 0; i < WARM; i++) await once();
  const dir = ((await redis.config('GET', 'dir')) as string[])[1] as string;
  const sub = ((await redis.config('GET', 'appenddirname')) as string[])[1] ?? '';
  const aofDir = join(dir, sub);
  // The incremental file is the largest-numbered `.incr.aof` (Redis 7's multi-part AOF).
  const incr = () =>
    readdirSync(aofDir)
      .filter((f) => f.endsWith('.incr.aof'))
      .sort()
      .at(-1) as string;
  const file = join(aofDir, incr());
  const from = statSync(file).size;
  for (let i = 0; i < RUNS; i++) await once();
  const bytes = readFileSync(file).subarray(from);
  const blocks = parse(bytes);
  const byKind = new Map<string, { n: number; bytes: number; cmds: Map<string, number> }>();
  for (const b of blocks) {
    const k = kindOf(b.cmds);
    const e = byKind.get(k) ?? { n: 0, bytes: 0, cmds: new Map() };
    e.n++;
    e.bytes += b.bytes;
    for (const c of b.cmds) e.cmds.set(c.label, (e.cmds.get(c.label) ?? 0) + c.bytes);
    byKind.set(k, e);
  }
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

interface Cmd {
  label: string;
  bytes: number;
}

/** RESP arrays of bulk strings (the AOF's form), grouped into MULTI … EXEC blocks (a lone command: its own block). */
function parse(buf: Buffer): { bytes: number; cmds: Cmd[] }[] {
  const out: { bytes: number; cmds: Cmd[] }[] = [];
  let pos = 0;
  let open: { bytes: number; cmds: Cmd[] } | undefined;
  const line = () => {
    const end = buf.indexOf('\r\n', pos);
    const s = buf.toString('latin1', pos, end);
    pos = end + 2;
    return s;
  };
  while (pos < buf.length) {
    const start = pos;
    const head = line();
    if (!head.startsWith('*')) continue;
    const args: string[] = [];
    for (let i = Number(head.slice(1)); i > 0; i--) {
      const len = Number(line().slice(1));
      args.push(buf.toString('latin1', pos, pos + Math.min(len, 80)));
      pos += len + 2;
    }
    const name = (args[0] ?? '').toLowerCase();
    const key = (args[1] ?? '').replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').replace(/\d{6,}/g, '<n>');
    const cmd = { label: `${name} ${key}`, bytes: pos - start };
    if (name === 'multi') open = { bytes: cmd.bytes, cmds: [] };
    else if (name === 'exec' && open) {
      open.bytes += cmd.bytes;
      out.push(open);
      open = undefined;
    } else if (open) {
      open.bytes += cmd.bytes;
      open.cmds.push(cmd);
    } else if (name !== 'select') out.push({ bytes: cmd.bytes, cmds: [cmd] });
  }
  return out;
}

/** A block named by its commands: the submit holds the job's LPUSH and the record's create. */
function kindOf(cmds: Cmd[]): string {
  const names = cmds.map((c) => c.label);
  if (names.some((n) => /^zpopmin /.test(n)) && names.some((n) => /^(lpush|rpush) /.test(n)))
    return 'the submit (add, hand-off, start)';
  if (names.some((n) => /completed/.test(n))) return 'the end (with the completion)';
  return names.slice(0, 3).join(', ');
}
