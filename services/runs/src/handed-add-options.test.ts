// The hand-off's direct add (handed-add.ts) and its add's options: with ARGV[4] (the gateway's JSON
// of a run's own options, run-add-store.ts) the options' bytes (ARGV[3]) are not unpacked at all —
// the job stored byte for byte as with them readable; without it, the options BullMQ's add reads
// (`delay`, `priority`, `lifo`, `de`) are read as its own text reads them (test/bench/README.md
// round 50 `submit-args`). No worker registered idle: the add alone.

import { LuaScript } from '@islet/core/lua-script';
import { addStandardJob } from 'bullmq/dist/esm/scripts/addStandardJob-9.js';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import type { Redis } from 'ioredis';
import { Packr, unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { fetchedStartArgs } from './fetched-start-args.ts';
import { handOffAddScript } from './handoff-scripts.ts';
import { HAND_OFF_FETCH_KEYS } from './handoff-terms.ts';
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

  // A worker registered idle (the full form of its terms): the add hands it the job, its hash noted
  // for the fetch's start (round 52 `submit-lean`: from ARGV[5..8], the HMSET's own table).
  const terms = {
    keys: HAND_OFF_FETCH_KEYS.map((k) => `${prefix}${k}`),
    prefix,
    token: 'tok-1',
    lockDuration: 30_000,
    name: 'w1',
    startArgs: fetchedStartArgs({
      mode: 'read-only',
      share: 0.5,
      cap: 0,
      leaseMs: 30_000,
      journalKey: (runId) => `t:${runId}:journal`,
      runKey: (runId) => `t:${runId}:run`,
      start: (runId) => ({
        streamKey: `t:${runId}:events`,
        maxLen: 100,
        type: 'started',
        sealedData: '{}',
        channel: 't:wake',
        message: `${runId}:started`,
      }),
      ttlSeconds: 60,
      nowMs: 1765129953123,
    }),
    handOff: `${prefix}handoff:w1`,
  };
  const GIVEN = ['bull:{q}:j1', 'j1', 'run', '1765129953123'];

  /** The job's hash and the handed answer (its processedOn, Redis's time, taken out), after a hand-off. */
  async function handed(script: LuaScript, args: (string | Buffer)[]) {
    await r.a.flushall();
    await r.a.zadd(`${prefix}idle`, Date.now() + 60_000, 'w1');
    await r.a.hset(`${prefix}idle:args`, 'w1', JSON.stringify(terms));
    const answer = await runOf(script, r.a, args);
    const job = await r.a.hgetall(`${prefix}j1`);
    const pushed = await r.a.zrangeBuffer(terms.handOff, 0, -1);
    expect(pushed).toHaveLength(1);
    const [token, fetched] = unpack(pushed[0] as Buffer) as [string, unknown[]];
    const fields = fetched[0] as string[];
    const at = fields.indexOf('processedOn');
    expect(at).toBeGreaterThan(0);
    expect(fields[at + 1]).toBe(job.processedOn);
    fields[at + 1] = 'T';
    job.processedOn = 'T';
    return {
      answer,
      job,
      token,
      fetched,
      wait: await r.a.lrange(`${prefix}wait`, 0, -1),
      active: await r.a.lrange(`${prefix}active`, 0, -1),
      lock: await r.a.get(`${prefix}j1:lock`),
    };
  }

  it("hands over the same job from ARGV[5..8] as from `args`, and as BullMQ's texts", async () => {
    const opts = packer.pack(RUN_OPTS);
    const given = await handed(DIRECT, [Buffer.from([0xc1]), DATA, opts, RUN_OPTS_JSON, ...GIVEN]);
    const unpacked = await handed(DIRECT, [argsOf('j1'), DATA, opts, RUN_OPTS_JSON]);
    const text = await handed(TEXT, [argsOf('j1'), DATA, opts]);
    expect(given).toEqual(unpacked);
    expect(given).toEqual(text);
    expect(given.answer).toEqual(['j1', terms.handOff, 'tok-1']);
    expect(given.active).toEqual(['j1']);
    expect(given.fetched[1]).toBe('j1');
    // The fields in the order the HMSET wrote them, the start's after them.
    expect(given.fetched[0]).toEqual([
      'name',
      'run',
      'data',
      DATA,
      'opts',
      RUN_OPTS_JSON,
      'timestamp',
      '1765129953123',
      'delay',
      '0',
      'priority',
      '0',
      'processedOn',
      'T',
      'pb',
      'w1',
      'ats',
      '1',
    ]);
  });

  it("notes the job for the hand-off's fetch from ARGV[5..8] without `jobWritten`'s copy", async () => {
    // `jobWritten` made to fail: the add from ARGV[5..8] with a worker idle never calls it.
    const head = 'local function jobWritten(cmd, key, ...)';
    expect(DIRECT.source.split(head)).toHaveLength(2);
    const failing = new LuaScript(DIRECT.source.replace(head, `${head}\n  error('copied')`));
    const opts = packer.pack(RUN_OPTS);
    const given = await handed(failing, [Buffer.from([0xc1]), DATA, opts, RUN_OPTS_JSON, ...GIVEN]);
    expect(given).toEqual(await handed(DIRECT, [Buffer.from([0xc1]), DATA, opts, RUN_OPTS_JSON, ...GIVEN]));
    // Without ARGV[5..8] the add's HMSET goes through it (as BullMQ's text's does).
    await expect(handed(failing, [argsOf('j1'), DATA, opts, RUN_OPTS_JSON])).rejects.toThrow(/copied/);
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
