// A tenant's feed in the AOF (includes/feed.lua, test/bench/README.md round 38 `aof-cut`): a run's
// create and end append their feed entries without MAXLEN (Redis writes an XADD given MAXLEN with
// its trim made exact, `MAXLEN = <length>`, 28 bytes of each of the submit's and the end's fsync'd
// writes); the fold of the tenant's pending list trims the feed instead, an XTRIM written to the
// AOF only when it removes entries; a decision's entry keeps its MAXLEN. Read from a real
// redis-server's AOF. The feed's readers meet the same stream: entries in order, `type` and `id`.
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { aofCommands, newestIncrAof, runFixture, startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { foldPendingEnds } from './run-index.ts';
import { FEED_APPEND, FOLD_AT } from './run-index-scripts.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const result = { _tag: 'Completed' as const, value: 1, logs: [] };
/** includes/feed.lua's cap (run-index-scripts.ts `FEED_MAX_LEN`). */
const FEED_MAX_LEN = 1000;

describe("a tenant's feed in the AOF", () => {
  it("a run's create and end append bare; the fold trims, written only when it removes", async () => {
    // `always`: each write is in the AOF before its reply (with `everysec` Redis may hold a write back
    // while a slow background fsync runs, and the file read right after misses it: CI, under load).
    const server = await startRedis({ appendFsync: 'always' });
    const redis = createRedis(server.url);
    try {
      const file = newestIncrAof(join(server.dir, 'appendonlydir'));
      const feed = keys.tenantFeed('tf');
      /** The AOF's commands on the feed from byte `from` on. */
      const feedWrites = async (from: number) =>
        Array.from(aofCommands((await readFile(file)).subarray(from)), ({ args }) => args).filter(
          (a) => a[1] === feed,
        );
      const runs = createRunStore(redis, sealer);

      // A run's create and end: two bare XADDs (`XADD <key> <id> type run id <run>`), nothing else.
      let from = statSync(file).size;
      const run = runFixture('f1', { tenant: 'tf' });
      await runs.create(run);
      await runs.finish(run, { status: 'Completed', result, text: '1' });
      const bare = await feedWrites(from);
      expect(bare.map((a) => [a[0]?.toUpperCase(), a.length, ...a.slice(3)])).toEqual([
        ['XADD', 7, 'type', 'run', 'id', 'f1'],
        ['XADD', 7, 'type', 'run', 'id', 'f1'],
      ]);
      // The fold of those two entries trims a feed that is short: nothing written.
      from = statSync(file).size;
      expect(await foldPendingEnds(redis, 'tf')).toBe(2);
      expect(await feedWrites(from)).toEqual([]);
      expect(await redis.xlen(feed)).toBe(2);

      // Over its cap (entries another release appended, or runs whose entries wait in the pending
      // list): the next fold trims it to about the cap, and that XTRIM is in the AOF, made exact.
      const fill = async () => {
        const p = redis.pipeline();
        for (let i = 0; i < FEED_MAX_LEN + 300; i++) p.xadd(feed, '*', 'type', 'run', 'id', `x${i}`);
        await p.exec();
      };
      await fill();
      from = statSync(file).size;
      const later = runFixture('f2', { tenant: 'tf' });
      await runs.create(later);
      expect(await redis.xlen(feed)).toBe(FEED_MAX_LEN + 303);
      expect(await foldPendingEnds(redis, 'tf')).toBe(1);
      const length = await redis.xlen(feed);
      expect(length).toBeGreaterThanOrEqual(FEED_MAX_LEN);
      expect(length).toBeLessThan(FEED_MAX_LEN + 100);
      const trimmed = await feedWrites(from);
      expect(trimmed.map((a) => a[0]?.toUpperCase())).toEqual(['XADD', 'XTRIM']);
      expect(trimmed[1]!.slice(2)).toEqual(['MAXLEN', '=', String(length)]);
      // The newest entries stay, in order, as a reader resumes them.
      const last = await redis.xrevrange(feed, '+', '-', 'COUNT', 2);
      expect(last.map(([, f]) => f)).toEqual([
        ['type', 'run', 'id', 'f2'],
        ['type', 'run', 'id', `x${FEED_MAX_LEN + 299}`],
      ]);

      // An end that brings the list to its fold size has it folded (its caller's fold, after the
      // end's answer), and the fold trims the feed.
      await fill();
      const before = await redis.xlen(feed);
      expect(before).toBeGreaterThan(FEED_MAX_LEN + 200);
      const batch = Array.from({ length: FOLD_AT / 2 }, (_, i) => runFixture(`b${i}`, { tenant: 'tf' }));
      for (const r of batch) await runs.create(r);
      for (const r of batch) await runs.finish(r, { status: 'Completed', result, text: '1' });
      await expect.poll(() => redis.llen(keys.indexPending('tf'))).toBe(0);
      expect(await redis.xlen(feed)).toBeLessThan(FEED_MAX_LEN + 100);

      // A decision's entry on its own keeps MAXLEN (it appends no pending entry).
      from = statSync(file).size;
      await FEED_APPEND.run(redis, [feed], ['decision', 'f2:0', 'tf']);
      const decision = await feedWrites(from);
      expect(decision).toHaveLength(1);
      expect(decision[0]!.slice(2, 4)).toEqual(['MAXLEN', '=']);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
