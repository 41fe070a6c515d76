/**
 * Numbers the end's script hands to Redis as their text (round 35, `end-lua`: a Lua number argument
 * costs Redis a `%.17g` print, ~2,500 instructions): the stored bytes' INCRBY (includes/charge.lua,
 * also in the admission), a first completion's `atm` (bull-quiet.ts `bullAttempts`) and the
 * completion's `LREM active -1` (bull-quiet.ts `quietComplete`), the base marker's `ZADD marker 0 0`
 * of a fetch (`quietFetch`, and the completion's fetch of the next job). Each against the number path it
 * replaced, on real Redis: the commands Redis runs (MONITOR, every argument) are the same, and so
 * are the values left.
 */
import { readFileSync } from 'node:fs';
import { LuaScript } from '@islet/core/lua-script';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { luaDuring } from '../test/lua-during.ts';
import { onRedisServer } from '../test/test-redis.ts';
import { BULL_QUIET_PRELUDE, quietComplete, quietFetch } from './bull-quiet.ts';
import { compactLua } from './lua-scripts.ts';

const charge = readFileSync(new URL('./lua/includes/charge.lua', import.meta.url), 'utf8');
const direct = new LuaScript(compactLua(`${charge}\nchargeBytes(KEYS[1], ARGV[1], ARGV[2])\nreturn 1`));
// The number path as it was before (the base's charge.lua): INCRBY of tonumber(bytes).
const asNumber = new LuaScript(
  compactLua(`local n = tonumber(ARGV[1])
if n > 0 and redis.call('INCRBY', KEYS[1], n) == n then redis.call('EXPIREAT', KEYS[1], ARGV[2]) end
return 1`),
);
const attempts = new LuaScript(
  compactLua(`${BULL_QUIET_PRELUDE}
local atm = ARGV[1] ~= '-' and ARGV[1] or false
return redis.call('HSET', KEYS[1], 'atm', bullAttempts(KEYS[1], atm))`),
);
// bullAttempts before: the count as a Lua number.
const attemptsAsNumber = new LuaScript(
  compactLua(`local atm = ARGV[1] ~= '-' and ARGV[1] or false
local n = tonumber(atm or '0')
if n and n == math.floor(n) and n >= 0 and n < 2 ^ 52 then n = n + 1
else n = redis.call('HINCRBY', KEYS[1], 'atm', 1) end
return redis.call('HSET', KEYS[1], 'atm', n)`),
);
const lremText = new LuaScript(`return redis.call("LREM", KEYS[1], "-1", ARGV[1])`);
const lremNumber = new LuaScript(`return redis.call("LREM", KEYS[1], -1, ARGV[1])`);
const markerText = new LuaScript(`return redis.call("ZADD", KEYS[1], "0", "0")`);
const markerNumber = new LuaScript(`return redis.call("ZADD", KEYS[1], 0, "0")`);

let redis: Redis;
onRedisServer(
  (client) => {
    redis = client;
  },
  { appendOnly: false },
);

/** The commands the scripts `fn` runs sent from Lua, every argument. */
const inner = (fn: () => Promise<unknown>): Promise<string[][]> => luaDuring(redis, fn);

describe('numbers handed to Redis as their text', () => {
  it("a charge's INCRBY sends the digits Redis printed for the number, whatever text the bytes came as", async () => {
    for (const bytes of ['389', '5', '1e3', '0389', '12345678901234', '1234567890123456', '+7']) {
      await redis.del('a', 'b');
      const got = await inner(() => direct.run(redis, ['a'], [bytes, '4000000000']));
      const want = await inner(() => asNumber.run(redis, ['b'], [bytes, '4000000000']));
      expect(
        got.map((c) => c.slice(2)),
        bytes,
      ).toEqual(want.map((c) => c.slice(2)));
      expect(got[0]?.[0]?.toLowerCase()).toBe('incrby');
      expect(await redis.get('a'), bytes).toBe(await redis.get('b'));
      expect(await redis.expiretime('a')).toBe(await redis.expiretime('b'));
    }
    // Zero or less charges nothing, as before.
    await redis.del('a');
    expect(await inner(() => direct.run(redis, ['a'], ['0', '4000000000']))).toEqual([]);
    // A counter already there: no expiry set again.
    await redis.set('a', '10');
    const again = await inner(() => direct.run(redis, ['a'], ['389', '4000000000']));
    expect(again.map((c) => c[0]?.toLowerCase())).toEqual(['incrby']);
    expect(await redis.get('a')).toBe('399');
  });

  it("a completion's attempts made: the same HSET as the number gave, first completion or not", async () => {
    for (const atm of ['-', '0', '1', '41', 'x']) {
      await redis.del('j1', 'j2');
      if (atm === 'x') await redis.hset('j1', 'atm', '2');
      if (atm === 'x') await redis.hset('j2', 'atm', '2');
      const got = await inner(() => attempts.run(redis, ['j1'], [atm]));
      const want = await inner(() => attemptsAsNumber.run(redis, ['j2'], [atm]));
      expect(
        got.map((c) => c.slice(2)),
        atm,
      ).toEqual(want.map((c) => c.slice(2)));
      expect(await redis.hget('j1', 'atm')).toBe(await redis.hget('j2', 'atm'));
    }
  });

  it("the completion's removal from active sends the count as Redis printed the number", async () => {
    const text = quietComplete(moveToFinished.content);
    expect(text).toContain('rcall("LREM", KEYS[2], "-1", jobId)');
    expect(text).not.toContain('rcall("LREM", KEYS[2], -1, jobId)');
    await redis.del('l');
    await redis.rpush('l', 'x', 'y', 'x');
    const got = await inner(() => lremText.run(redis, ['l'], ['x']));
    await redis.rpush('l', 'x');
    const want = await inner(() => lremNumber.run(redis, ['l'], ['x']));
    expect(got.map((c) => c.slice(1))).toEqual(want.map((c) => c.slice(1)));
    expect(await redis.lrange('l', 0, -1)).toEqual(['x', 'y']);
  });

  it("a fetch's base marker sends its score as Redis printed the number", async () => {
    for (const text of [quietFetch(moveToActive.content), quietComplete(moveToFinished.content)]) {
      expect(text).toContain('rcall("ZADD", markerKey, "0", "0")');
      expect(text).not.toContain('rcall("ZADD", markerKey, 0, "0")');
    }
    await redis.del('m1', 'm2');
    const got = await inner(() => markerText.run(redis, ['m1'], []));
    const want = await inner(() => markerNumber.run(redis, ['m2'], []));
    expect(got.map((c) => c.slice(2))).toEqual(want.map((c) => c.slice(2)));
    expect(await redis.zrange('m1', 0, -1, 'WITHSCORES')).toEqual(
      await redis.zrange('m2', 0, -1, 'WITHSCORES'),
    );
  });
});
