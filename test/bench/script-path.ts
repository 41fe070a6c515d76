/**
 * `node test/bench/script-path.ts`: Redis's own time, inner commands and AOF bytes of each
 * top-level call on a sequential client's path (the submit's script, the end's, the idle
 * registration, the blocking pop), on a local cluster set up as `sequential.ts`'s. `WARM` runs
 * (default 300), then `RUNS` (default 500) with SLOWLOG at 0 (every command logged, the ones a
 * script runs included, each before the script that ran it): per call shape, its count a run, its
 * duration p50 / mean (µs, Redis's `call()` time, its commands' included), its inner commands a
 * run, their summed duration; then the AOF written over the same runs, split into its
 * MULTI … EXEC blocks (a script's effects; one block a script) by the block's first command and
 * key shape: blocks a run, bytes a block, commands a block, and (`DUMP=1`) one block of each shape
 * printed (`DUMP=full`: its arguments uncut). `SLOW=0` skips the SLOWLOG (the AOF only: SLOWLOG's own copies cost Redis time).
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRedis } from '@islet/core';
import { aofCommands, newestIncrAof } from '@islet/testkit';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const WARM = Number(process.env.WARM ?? 300);
const RUNS = Number(process.env.RUNS ?? 500);
/** Concurrent clients (default 1: the sequential path; 16: the cluster bench's load). */
const CLIENTS = Number(process.env.CLIENTS ?? 1);

const cluster = await startOneClientCluster('0.5');
const admin = createRedis(cluster.redisUrl);
const one = trivialRun(cluster, 'Benchmark a trivial program');

const key = (k: string | undefined) =>
  (k ?? '').replace(/\{[^}]*\}/g, '{…}').replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>');
const shape = (args: string[]) => {
  const name = (args[0] ?? '').toLowerCase();
  if (name === 'evalsha' || name === 'eval') return `${name} ${key(args[3])} ${key(args[4])}`;
  return name;
};

async function aofFile() {
  const [, dir] = (await admin.config('GET', 'dir')) as string[];
  const [, sub] = (await admin.config('GET', 'appenddirname')) as string[];
  const d = join(dir ?? '', sub ?? '');
  return newestIncrAof(d);
}

await burst(one, WARM, CLIENTS);
const file = await aofFile();
const slow = process.env.SLOW !== '0';
if (slow) {
  await admin.config('SET', 'slowlog-max-len', String(RUNS * 120));
  await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.slowlog('RESET');
}
const from = statSync(file).size;
await burst(one, RUNS, CLIENTS);
const to = statSync(file).size;
if (slow) {
  await admin.config('SET', 'slowlog-log-slower-than', '10000');
  const entries = ((await admin.slowlog('GET', -1)) as [number, number, number, string[], string, string][])
    .slice()
    .reverse();
  await admin.slowlog('RESET');
  const calls = new Map<
    string,
    { n: number; us: number[]; inner: Map<string, number>; innerUs: number; argc: number }
  >();
  // SLOWLOG keeps 32 arguments; the last then says how many more there were.
  const argc = (args: string[]) => {
    const more = /^\.\.\. \((\d+) more arguments\)$/.exec(args[args.length - 1] ?? '');
    return more ? args.length - 1 + Number(more[1]) : args.length;
  };
  let pending: { name: string; us: number }[] = [];
  for (const [, , us, args, addr] of entries) {
    const s = shape(args);
    if (s === 'slowlog' || s === 'config') continue;
    // A script's commands are logged by the Lua client (no address), before their script.
    if (!addr || addr.startsWith('?')) {
      pending.push({ name: s, us });
      continue;
    }
    const c = calls.get(s) ?? {
      n: 0,
      us: [] as number[],
      inner: new Map<string, number>(),
      innerUs: 0,
      argc: 0,
    };
    c.n++;
    c.argc += argc(args);
    c.us.push(us);
    for (const p of pending) {
      c.inner.set(p.name, (c.inner.get(p.name) ?? 0) + 1);
      c.innerUs += p.us;
    }
    pending = [];
    calls.set(s, c);
  }
  console.log(`SLOWLOG over ${RUNS} runs (µs of Redis's call(), a script's commands included):`);
  for (const [s, c] of [...calls].sort(
    (a, b) => b[1].us.reduce((x, y) => x + y, 0) - a[1].us.reduce((x, y) => x + y, 0),
  )) {
    const sorted = c.us.slice().sort((a, b) => a - b);
    const p50 = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
    const innerN = [...c.inner.values()].reduce((a, b) => a + b, 0);
    console.log(
      `  ${(c.n / RUNS).toFixed(2)} a run  ${s.padEnd(64)} ${(c.argc / c.n).toFixed(0)} arguments; p50 ${p50} mean ${mean.toFixed(1)} µs; ` +
        `inner ${(innerN / c.n).toFixed(1)} commands, ${(c.innerUs / c.n).toFixed(1)} µs`,
    );
    if (innerN)
      console.log(
        `      ${[...c.inner]
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${(v / c.n).toFixed(1)}`)
          .join(', ')}`,
      );
  }
}
const buf = readFileSync(file).subarray(from, to);
type Block = { n: number; bytes: number; cmds: number; names: Map<string, number>; dump?: string[][] };
const blocks = new Map<string, Block>();
let cur: { args: string[][]; bytes: number } | undefined;
const close = (args: string[][], bytes: number) => {
  const first = args.find((a) => !['multi', 'select'].includes((a[0] ?? '').toLowerCase())) ?? [];
  const s = `${(first[0] ?? '').toLowerCase()} ${key(first[1])}`;
  const b: Block = blocks.get(s) ?? { n: 0, bytes: 0, cmds: 0, names: new Map<string, number>() };
  b.n++;
  b.bytes += bytes;
  b.cmds += args.length;
  for (const a of args) {
    const n = (a[0] ?? '').toLowerCase();
    b.names.set(n, (b.names.get(n) ?? 0) + 1);
  }
  b.dump ??= args;
  blocks.set(s, b);
};
for (const { args, bytes } of aofCommands(buf)) {
  const name = (args[0] ?? '').toLowerCase();
  if (name === 'multi') cur = { args: [args], bytes };
  else if (cur) {
    cur.args.push(args);
    cur.bytes += bytes;
    if (name === 'exec') {
      close(cur.args, cur.bytes);
      cur = undefined;
    }
  } else close([args], bytes);
}
console.log(`AOF over ${RUNS} runs: ${((to - from) / RUNS).toFixed(0)} B a run`);
for (const [s, b] of [...blocks].sort((x, y) => y[1].bytes - x[1].bytes)) {
  console.log(
    `  ${(b.n / RUNS).toFixed(2)} a run  ${s.padEnd(56)} ${(b.bytes / b.n).toFixed(0)} B, ${(b.cmds / b.n).toFixed(1)} commands: ` +
      [...b.names].map(([k, v]) => `${k} ${(v / b.n).toFixed(1)}`).join(', '),
  );
  if ((process.env.DUMP === '1' || process.env.DUMP === 'full') && b.dump)
    for (const a of b.dump)
      console.log(
        `      ${a.map((x) => (x.length > 80 && process.env.DUMP !== 'full' ? `${x.slice(0, 60)}…(${x.length})` : x)).join(' ')}`,
      );
}
admin.disconnect();
await cluster.stop();
process.exit(0);
