// An end's stage stamps written compact (run-timings.ts; test/bench/README.md round 38 `aof-cut`):
// the text, its bytes against the JSON form the releases before wrote, both forms read back by
// `timingsFrom` (a bench reads a record of either release), and on a real redis-server the end's
// fsync'd AOF write carrying the compact field, the pushed record carrying no `timings` at all.
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { aofCommands, newestIncrAof, runFixture, startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { createRunStore } from './run-store.ts';
import type { RunTimings } from './run-store-types.ts';
import { timingsFrom, timingsText } from './run-timings.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

/** A runner's stamps as the end hands them over (run-executor.ts), raw `wallNow` fractions. */
const stamps: RunTimings = {
  enqueued: 1796510342603.639,
  fetched: 1796510342605.1333,
  pickedUp: 1796510342605.1616,
  engineCalled: 1796510342605.2556,
  engineReturned: 1796510342608.9846,
  hostWaitMs: 0.008224000000154774,
  endSent: 1796510342609.0034,
};

/** The field as rounds 36–37 wrote it (their `timingsText`: JSON, each stamp to the µs). */
const previousText =
  '{"enqueued":1796510342603.639,"fetched":1796510342605.133,"pickedUp":1796510342605.162,' +
  '"engineCalled":1796510342605.256,"engineReturned":1796510342608.985,"hostWaitMs":0.008,' +
  '"endSent":1796510342609.004}';

const close = (got: Partial<Record<string, number>>, want: RunTimings) => {
  expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
  for (const [name, v] of Object.entries(want))
    expect(Math.abs((got[name] ?? Number.NaN) - (v as number))).toBeLessThan(0.0006);
};

describe("an end's stage stamps", () => {
  it('are written as µs from the enqueue, ~150 bytes fewer than the JSON form', () => {
    const text = timingsText(stamps);
    expect(text).toBe('1796510342603639,1494,1523,1617,5346,8,5365');
    expect(previousText.length - text.length).toBeGreaterThanOrEqual(150);
    close(timingsFrom(text), stamps);
  });

  it("read back from the previous releases' JSON form the same", () => {
    close(timingsFrom(previousText), stamps);
    // Rounds ≤ 35 wrote JSON.stringify's digits: read as they are.
    close(timingsFrom(JSON.stringify(stamps)), stamps);
  });

  it('leave absent and non-numeric stamps absent, in both forms', () => {
    const some = { enqueued: 1000.5, pickedUp: 1002, engineCalled: 1003, engineReturned: Number.NaN };
    const text = timingsText(some);
    expect(text).toBe('1000500,,1500,2500');
    expect(timingsFrom(text)).toEqual({ enqueued: 1000.5, pickedUp: 1002, engineCalled: 1003 });
    expect(timingsFrom('{"enqueued":1,"pickedUp":2,"engineCalled":3,"engineReturned":null}')).toEqual({
      enqueued: 1,
      pickedUp: 2,
      engineCalled: 3,
    });
    // A stamp before the enqueue (two processes' clocks) is a negative offset, read back as it was.
    close(timingsFrom(timingsText({ ...stamps, fetched: stamps.enqueued - 0.25 })), {
      ...stamps,
      fetched: stamps.enqueued - 0.25,
    });
    expect(timingsFrom(undefined)).toEqual({});
    expect(timingsFrom('')).toEqual({});
    expect(timingsFrom('{not json')).toEqual({});
  });

  it("go into the end's AOF write compact and stay out of the pushed record", async () => {
    // `always`: each write is in the AOF before its reply (with `everysec` Redis may hold a write back
    // while a slow background fsync runs, and the file read right after misses it: CI, under load).
    const server = await startRedis({ appendFsync: 'always' });
    const redis = createRedis(server.url);
    const sub = createRedis(server.url);
    try {
      const file = newestIncrAof(join(server.dir, 'appendonlydir'));
      const runs = createRunStore(redis, sealer);
      const run = runFixture('t1', { tenant: 't1', pushEnd: true });
      await runs.create(run);
      await sub.psubscribe('*');
      const pushed = new Promise<string>((resolve) =>
        sub.on('pmessage', (_p, _c, message: string) => {
          if (message.startsWith('t1 end')) resolve(message);
        }),
      );
      const from = statSync(file).size;
      const result = { _tag: 'Completed' as const, value: 1, logs: [] };
      await runs.finish(run, { status: 'Completed', result, text: '1', timings: stamps });
      const text = timingsText(stamps);
      expect(await redis.hget(keys.run('t1'), 'timings')).toBe(text);
      // The record's HSET in the AOF carries the compact text as its `timings`.
      const hsets = Array.from(aofCommands((await readFile(file)).subarray(from)), ({ args }) => args).filter(
        (a) => a[0]?.toUpperCase() === 'HSET' && a[1] === keys.run('t1'),
      );
      expect(hsets).toHaveLength(1);
      const at = hsets[0]!.indexOf('timings');
      expect(at).toBeGreaterThan(1);
      expect(hsets[0]![at + 1]).toBe(text);
      expect(timingsFrom(hsets[0]![at + 1])).toEqual(timingsFrom(text));
      // The push (the gateway's answer) holds the record less `timings`, as before.
      const end = await pushed;
      expect(end).toContain('"status","Completed"');
      expect(end).not.toContain('timings');
      expect(end).not.toContain(text);
    } finally {
      sub.disconnect();
      redis.disconnect();
      await server.stop();
    }
  });
});
