// The hand-off's direct add (handed-add.ts) and its add's options: with ARGV[4] (the gateway's JSON
// of a run's own options, run-add-store.ts) the options' bytes (ARGV[3]) are not unpacked at all —
// the job stored byte for byte as with them readable; without it, the options BullMQ's add reads
// (`delay`, `priority`, `lifo`, `de`) are read as its own text reads them (test/bench/README.md
// round 50 `submit-args`). No worker registered idle: the add alone.

import type { LuaScript } from '@islet/core/lua-script';
import { addStandardJob } from 'bullmq/dist/esm/scripts/addStandardJob-9.js';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import type { Redis } from 'ioredis';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { handOffAddScript } from './handoff-scripts.ts';
import { runJobOptions } from './jobs.ts';

const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
const prefix = 'bull:{q}:';
/** addStandardJob-9's keys, then the hand-off's three (prioritized, idle, idle args). */
const KEYS = [
  'wait',
  'paused',
  'meta',
  'id',
  'completed',
  'delayed',
  'active',
  'events',
  'marker',
  'prioritized',
  'idle',
  'idle:args',
].map((k) => `${prefix}${k}`);
const DIRECT = handOffAddScript(addStandardJob.content, moveToActive.content);
/** BullMQ's own text (a line more: no direct add is made for it). */
const TEXT = handOffAddScript(`${addStandardJob.content}\n`, moveToActive.content);
// As the gateway packs them: `attempts` first, no `jobId` (run-add-store.ts).
const { jobId: _id, ...RUN_OPTS } = runJobOptions('j1', 3);
const stored = RUN_OPTS;
/** The options' JSON as the gateway sends it (packed-options.ts `cjsonOf`: cjson's key order). */
const RUN_OPTS_JSON = `{"removeOnFail":{"age":${stored.removeOnFail.age}},"removeOnComplete":{"age":${stored.removeOnComplete.age},"count":${stored.removeOnComplete.count}},"backoff":{"delay":${stored.backoff.delay},"type":"${stored.backoff.type}"},"attempts":3}`;
/** addStandardJob's packed `args` (the de-duplication key last, BullMQ's with `opts.de`). */
const argsOf = (jobId: string, dedupeKey: string | null = null) =>
  packer.pack([prefix, jobId, 'run', 1765129953123, null, null, undefined, undefined, dedupeKey]);
const DATA = '{"tenant":"acme","enqueuedAtMs":1765129953123}';
/** `script` run with the add's arguments (packed ones as bytes: `run` sends a Buffer as it is). */
const runOf = (script: LuaScript, redis: Redis, args: (string | Buffer)[]) =>
  script.run(redis, KEYS, args as unknown as string[]);

describe("the hand-off's direct add and its options", () => {
  const r = useSuiteRedis();

  /** Every key's DUMP and its expiry after `add` on an empty server (or one job waiting), and the add's answer. */
  async function after(add: () => Promise<unknown>, waiting = false) {
    await r.a.flushall();
    // A job waiting already: a LIFO add's push goes to the other end.
    if (waiting) await r.a.rpush(`${prefix}wait`, 'j0');
    const answer = await add();
    const out: Record<string, [string, number]> = {};
    for (const k of (await r.a.keys('*')).sort())
      out[k] = [((await r.a.dumpBuffer(k)) as Buffer).toString('hex'), await r.a.pttl(k)];
    return { answer, keys: out };
  }

  it('stores the same job from ARGV[4] alone: the options (ARGV[3]) are not unpacked', async () => {
    const run = (opts: Buffer | string) => () =>
      runOf(DIRECT, r.a, [argsOf('j1'), DATA, opts, RUN_OPTS_JSON]);
    const readable = await after(run(packer.pack(RUN_OPTS)));
    // Bytes cmsgpack cannot read (0xc1 is never used): an unpack of them fails the script.
    const unreadable = await after(run(Buffer.from([0xc1])));
    expect(unreadable).toEqual(readable);
    expect(readable.answer).toBe('j1');
    expect(await r.a.hget(`${prefix}j1`, 'opts')).toBe(RUN_OPTS_JSON);
    // And what BullMQ's own text stores of the same add (it reads no ARGV[4], it encodes ARGV[3]).
    const text = await after(() => runOf(TEXT, r.a, [argsOf('j1'), DATA, packer.pack(RUN_OPTS)]));
    expect(readable).toEqual(text);
  });

  it('stores the same job from ARGV[5..8] (key, id, name, time): `args` (ARGV[1]) is not unpacked', async () => {
    const given = ['bull:{q}:j1', 'j1', 'run', '1765129953123'];
    const readable = await after(() =>
      runOf(DIRECT, r.a, [argsOf('j1'), DATA, packer.pack(RUN_OPTS), RUN_OPTS_JSON]),
    );
    // ARGV[1] bytes cmsgpack cannot read (0xc1): an unpack of them fails the script (round 51 `submit-lua`).
    const unread = await after(() =>
      runOf(DIRECT, r.a, [Buffer.from([0xc1]), DATA, packer.pack(RUN_OPTS), RUN_OPTS_JSON, ...given]),
    );
    expect(unread).toEqual(readable);
    expect(unread.answer).toBe('j1');
    expect(await r.a.hget(`${prefix}j1`, 'timestamp')).toBe('1765129953123');
    const text = await after(() => runOf(TEXT, r.a, [argsOf('j1'), DATA, packer.pack(RUN_OPTS)]));
    expect(unread).toEqual(text);
  });

  it.each([
    ['a delay', { delay: 5000 }],
    ['a priority', { priority: 7 }],
    ['LIFO', { lifo: true }],
    ['a de-duplication id', { de: { id: 'd1' } }],
  ])('without ARGV[4] reads the options as BullMQ does: %s', async (_, extra) => {
    const packed = packer.pack({ ...RUN_OPTS, ...extra });
    const args = argsOf('j2', 'de' in extra ? `${prefix}de:d1` : null);
    const direct = await after(() => runOf(DIRECT, r.a, [args, DATA, packed]), true);
    const text = await after(() => runOf(TEXT, r.a, [args, DATA, packed]), true);
    expect(direct).toEqual(text);
    expect(direct.answer).toBe('j2');
  });
});
