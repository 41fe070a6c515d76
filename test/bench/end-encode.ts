/**
 * `node test/bench/end-encode.ts`: µs to build and encode a script call shaped as a sequential
 * run's fused end with BullMQ's completion (32 keys, 105 arguments, BullMQ's packed options a
 * Buffer among them), ioredis's own `Command` (buffer mode: a copy call per part) against core's
 * `OneCopyCommand` (one conversion per stretch of text), no socket. Hot: `N` in a row after as
 * many to warm up, median of `ROUNDS`; spaced: one every `GAP_MS` (default 3) as a sequential
 * runner makes them, p50 of `SPACED` (default 300); the two alternate, round by round.
 */
import { OneCopyCommand } from '@islet/core/lua-script';
import { Command } from 'ioredis';

const N = Number(process.env.N ?? 5000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const SPACED = Number(process.env.SPACED ?? 300);
const GAP_MS = Number(process.env.GAP_MS ?? 3);

const id = '3f1c0b8e-8a77-4c55-9d0e-2b1f3f1d9a10';
const keys = [
  ...Array.from(
    { length: 14 },
    (_, i) =>
      `bull:{runs-read-only}:${['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'completed', 'job', 'metrics', 'marker'][i]}`,
  ),
  `islet:run:{${id}}`,
  `islet:run:{${id}}:events`,
  `islet:journal:{${id}}`,
  ...Array.from({ length: 15 }, (_, i) => `islet:tenant:{t:dev}:part-${i}`),
];
const sealed = (n: number) => `v1.k1.${'Qx9'.repeat(Math.ceil(n / 3)).slice(0, n)}`;
const args = (): (string | number | Buffer)[] => [
  'f'.repeat(40),
  keys.length,
  ...keys,
  // BullMQ's: job id, time, field, return value, target, fetch-next, its options packed.
  id,
  Date.now(),
  'returnvalue',
  '"completed"',
  'completed',
  1,
  Buffer.from([0x89, 0xa5, 0x74, 0x6f, 0x6b, 0x65, 0x6e, 0xd9, 0x24, ...Buffer.from(`${id}:1`), 0xc3]),
  // The end's: its event and push terms, the tenant half, the stored bytes, the lease's release.
  ...Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? i * 1000 : `term-${i}-${id.slice(0, 8)}`)),
  // The record's fields: status, the sealed result and text, kind, timings, updatedAt.
  'status',
  'Completed',
  'result',
  sealed(180),
  'kind',
  'none',
  'text',
  sealed(60),
  'timings',
  JSON.stringify({ enqueued: 1, pickedUp: 2.5, engineCalled: 3.25, engineReturned: 4.125, endSent: 5.5 }),
  'updatedAt',
  String(Date.now()),
  // The fetch-next's start, then the counts.
  ...Array.from({ length: 24 }, (_, i) => `start-${i}`),
  14,
  8,
];

const encode = (Make: typeof Command) => () => new Make('evalsha', args()).toWritable({});
const sides: [string, () => unknown][] = [
  ["ioredis's Command (buffer mode)", encode(Command)],
  ['OneCopyCommand', encode(OneCopyCommand)],
];
const same = Buffer.from(sides[0]![1]() as Buffer).length === Buffer.from(sides[1]![1]() as Buffer).length;
if (!same) throw new Error('the two encodings differ in length');

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const hot = new Map<string, number[]>();
const spaced = new Map<string, number[]>();
for (let r = 0; r < ROUNDS; r++)
  for (const [name, op] of r % 2 ? [...sides].reverse() : sides) {
    for (let i = 0; i < N; i++) op();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) op();
    hot.set(name, [...(hot.get(name) ?? []), Number(process.hrtime.bigint() - t0) / 1000 / N]);
    const each: number[] = [];
    for (let i = 0; i < SPACED / ROUNDS; i++) {
      await new Promise((res) => setTimeout(res, GAP_MS));
      const t = process.hrtime.bigint();
      op();
      each.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    spaced.set(name, [...(spaced.get(name) ?? []), ...each]);
  }
for (const [name] of sides)
  console.log(
    `${name.padEnd(34)} hot ${p50(hot.get(name)!).toFixed(2)} µs (rounds: ${hot
      .get(name)!
      .map((x) => x.toFixed(1))
      .join(
        ' ',
      )}), one each ${GAP_MS} ms p50 ${p50(spaced.get(name)!).toFixed(1)} µs [${spaced.get(name)!.length}]`,
  );
