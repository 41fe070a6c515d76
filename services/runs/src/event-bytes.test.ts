// A run's events in the AOF (includes/event-add.lua, test/bench/README.md round 36 `aof-trim`):
// where the stream is known to hold a few entries (a new run's first event, its first attempt's
// start, the pushed end of a first attempt that sent no call) appended without MAXLEN (Redis
// propagates an XADD given MAXLEN with `MAXLEN = <length>`, 26 bytes more an event); everywhere
// else, and under a small cap, with it as before; the stream the same. Read from a real
// redis-server's AOF; no command added (no XLEN).
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { aofCommands, newestIncrAof, runFixture, startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { createCallJournal } from './call-journal.ts';
import { createRunLifecycle } from './run-lifecycle.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const result = { _tag: 'Completed' as const, value: 1, logs: [] };

describe("a run's events in the AOF", () => {
  it('go without MAXLEN where the stream holds a few, with it elsewhere; the stream is the same', async () => {
    // `always`: each write is in the AOF before its reply (with `everysec` Redis may hold a write back
    // while a slow background fsync runs, and the file read right after misses it: CI, under load).
    const server = await startRedis({ appendFsync: 'always' });
    const redis = createRedis(server.url);
    try {
      const file = newestIncrAof(join(server.dir, 'appendonlydir'));
      /** Whether each XADD of a run's stream from byte `from` on went with MAXLEN. */
      const trims = async (from: number) =>
        Array.from(aofCommands((await readFile(file)).subarray(from)), ({ args }) => args)
          .filter((a) => a[0]?.toUpperCase() === 'XADD' && a[1]?.endsWith(':events'))
          .map((a) => {
            // The bare form: `XADD <key> <id> <field> <value> …`.
            if (!a.includes('MAXLEN')) expect(a[2]).toMatch(/^\d+-\d+$/);
            return a.includes('MAXLEN');
          });
      const counts = async () => {
        const info = await redis.info('commandstats');
        return Number(/cmdstat_xlen:calls=(\d+)/.exec(info)?.[1] ?? 0);
      };
      const journal = createCallJournal({ redis, sealer });
      const plain = createRunStore(redis, sealer);
      const lifecycle = createRunLifecycle({ runs: plain, journal });

      // A waited-for run whose first attempt sent no call (a sequential client's every run): its
      // create's, start's and end's events, none with MAXLEN.
      let from = statSync(file).size;
      const waited = runFixture('w1', { tenant: 't1', pushEnd: true });
      await plain.create(waited);
      expect((await lifecycle.beginAttempt('w1')).attempt).toBe(1);
      await plain.finish(waited, { status: 'Completed', result, text: '1', sentNoCall: true });
      expect(await trims(from)).toEqual([false, false, false]);
      expect((await plain.readEvents('w1')).map((e) => e.type)).toEqual(['status', 'status', 'end']);

      // A run with a second attempt and an end after a call: those two keep MAXLEN.
      from = statSync(file).size;
      const retried = runFixture('r1', { tenant: 't1', pushEnd: true });
      await plain.create(retried);
      expect((await lifecycle.beginAttempt('r1')).attempt).toBe(1);
      expect((await lifecycle.beginAttempt('r1')).attempt).toBe(2);
      await plain.finish(retried, { status: 'Completed', result, text: '1', sentNoCall: false });
      expect(await trims(from)).toEqual([false, false, true, true]);

      // An end nobody waits for keeps it too (its calls are not known there).
      from = statSync(file).size;
      const unwaited = runFixture('u1', { tenant: 't1' });
      await plain.create(unwaited);
      await lifecycle.beginAttempt('u1');
      await plain.finish(unwaited, { status: 'Completed', result, text: '1' });
      expect(await trims(from)).toEqual([false, false, true]);

      // A small cap (tests'): always trimmed, as before.
      from = statSync(file).size;
      const small = createRunStore(redis, sealer, { maxEventsPerRun: 2 });
      const capped = runFixture('c1', { tenant: 't1', pushEnd: true });
      await small.create(capped);
      await small.finish(capped, { status: 'Completed', result, text: '1', sentNoCall: true });
      expect(await trims(from)).toEqual([true, true]);
      // No length read for any of it.
      expect(await counts()).toBe(0);
      expect(await redis.xlen(keys.runEvents('w1'))).toBe(3);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
