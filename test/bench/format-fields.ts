/**
 * `node test/bench/format-fields.ts` (round 42 `format-next`): what a sequential trivial run writes
 * to the AOF, field by field, in the process's stored format (`ISLET_WRITE_FORMAT`, default 2). A
 * local cluster as `aof-bytes.ts` sets it up, `WARM` runs (default 30), then `RUNS` (default 20);
 * the AOF those runs appended is parsed as RESP and every command of Islet's own keys (the run's
 * record, events, journal, its tenant's pending list, feed and index; BullMQ's job hash apart) is
 * taken apart: a hash write's field name and value, a stream entry's, a pending-list entry's JSON
 * members (`"k":value,`), each with its AOF bytes (a bulk string's `$<n>\r\n…\r\n`), averaged over
 * the runs. Which of them a reader needs is the write-up's (test/bench/README.md round 42). A count:
 * no lock needed.
 */
import { readFileSync, statSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { aofCommands } from '@islet/testkit';
import { aofFileOf } from './aof-writes.ts';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 20);
const WARM = Number(process.env.WARM ?? 30);

/** Every command in `buf` as its arguments (RESP arrays of bulk strings, as the AOF holds them). */
function commands(buf: Buffer): string[][] {
  return Array.from(aofCommands(buf), (c) => c.args);
}

/** A bulk string's bytes in the AOF. */
const bulk = (s: string) => s.length + String(s.length).length + 5;

/** The key with a run's or a number's parts made general (one row for every run). */
const general = (key: string) =>
  key
    .replace(/\{[0-9a-f-]{36}\}/g, '{<id>}')
    .replace(/:[0-9a-f-]{36}/g, ':<id>')
    .replace(/:\d{3,}/g, ':<n>');

const rows = new Map<string, number>();
const add = (row: string, bytes: number) => rows.set(row, (rows.get(row) ?? 0) + bytes);

/** One command's bytes by field: its name and key once, then each field (or JSON member). */
function takeApart(args: string[]): void {
  const name = (args[0] ?? '').toLowerCase();
  const key = general(args[1] ?? '');
  const head = `${name} ${key}`;
  const whole = String(args.length).length + 3 + args.reduce((n, a) => n + bulk(a), 0);
  if ((name === 'hset' || name === 'hmset') && key.startsWith('islet:run:')) {
    add(`${head} (command, key)`, whole - args.slice(2).reduce((n, a) => n + bulk(a), 0));
    for (let i = 2; i + 1 < args.length; i += 2)
      add(`${head} ${args[i]}`, bulk(args[i]!) + bulk(args[i + 1]!));
    return;
  }
  if (name === 'xadd') {
    // XADD key [NOMKSTREAM] [MAXLEN ...] id field value ...: the pairs are the args after the id.
    let at = 2;
    while (at < args.length && !/^\d+-\d+$|^\*$/.test(args[at]!)) at++;
    add(`${head} (command, key, id)`, whole - args.slice(at + 1).reduce((n, a) => n + bulk(a), 0));
    for (let i = at + 1; i + 1 < args.length; i += 2)
      add(`${head} ${args[i]}`, bulk(args[i]!) + bulk(args[i + 1]!));
    return;
  }
  if (name === 'rpush' && key.endsWith(':index:pending')) {
    for (const entry of args.slice(2)) {
      const parsed = JSON.parse(entry) as Record<string, unknown>;
      const kind = parsed.t === 'c' ? 'create' : 'end';
      add(`${head} ${kind} (command, key, braces)`, whole - entry.length);
      for (const [k, v] of Object.entries(parsed))
        add(`${head} ${kind} ${k}`, JSON.stringify({ [k]: v }).length - 1);
    }
    return;
  }
  add(head, whole);
}

const cluster = await startOneClientCluster(process.env.BENCH_TENANT_SHARE ?? '0.5');
const redis = createRedis(cluster.redisUrl);
try {
  const once = stampedRun(cluster, () => performance.now());
  for (let i = 0; i < WARM; i++) await once();
  const file = await aofFileOf(redis);
  const from = statSync(file).size;
  for (let i = 0; i < RUNS; i++) await once();
  const bytes = readFileSync(file).subarray(from);
  for (const args of commands(bytes)) {
    const key = args[1] ?? '';
    // Islet's own keys of the run and its tenant (BullMQ's are the queue's, not a stored format of ours).
    if (/^islet:run:|^islet:tenant:|^islet:journal:/.test(key)) takeApart(args);
  }
  console.log(
    `format ${process.env.ISLET_WRITE_FORMAT ?? '(default)'}: AOF ${(bytes.length / RUNS).toFixed(0)} B a run over ${RUNS} runs; Islet's run and tenant keys by field, B a run:`,
  );
  for (const [row, n] of [...rows].sort((a, b) => a[0].localeCompare(b[0])))
    console.log(`${(n / RUNS).toFixed(1).padStart(8)}  ${row}`);
} finally {
  redis.disconnect();
  await cluster.stop();
}
