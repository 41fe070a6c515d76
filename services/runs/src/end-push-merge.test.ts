/**
 * The pushed end's record when the end's script read the record first (`before`,
 * includes/finish-run.lua): includes/transition.lua applies the write to that read in place, as
 * HSET applies it to the hash (round 35, `end-gw`: the fields from ARGV and a name table of the
 * write's names, not copies). Whatever the write names — fields the record has, new ones, one
 * named twice — the record pushed is the hash as stored after the write, each field once, less the
 * write's `timings` (the runner's stage stamps, which no reader of a push reads; round 37) and less
 * the fields its submit wrote (round 41 `push-lean`: `code` here), tagged `end2`.
 */
import { readFileSync } from 'node:fs';
import { channels, createRedis } from '@islet/core';
import { fieldsOf, LuaScript } from '@islet/core/lua-script';
import { startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { pushedEnd } from '../test/pushed-end.ts';
import { compactLua } from './lua-scripts.ts';

// Its include (includes/event-add.lua) first, as lua-scripts.ts inlines it.
const transition = [
  readFileSync(new URL('./lua/includes/event-add.lua', import.meta.url), 'utf8'),
  readFileSync(new URL('./lua/includes/transition.lua', import.meta.url), 'utf8'),
]
  .join('\n')
  // The include's parameters (run-store-scripts.ts fills them in), written apart: not templates.
  .replaceAll('$' + '{END_PUSH_MAX_BYTES}', String(32 * 1024))
  .replaceAll('$' + '{END3_MIN_BYTES}', String(1024));
// The record read whole first, then the write with it as `before`, as finish-run.lua calls it.
const driver = new LuaScript(
  compactLua(`${transition}
local before = redis.call('HGETALL', KEYS[1])
local status = writeTransition(1, 1, 7, true, 'Running', before, false)
return status`),
);

// The record not read first (transition-4.lua: an end on a Cluster): read by HGETALL.
const unread = new LuaScript(
  compactLua(`${transition}
return writeTransition(1, 1, 7, true, 'Running', nil, false)`),
);

describe("the pushed end's record with the record read first", () => {
  it('is the hash as the write leaves it, each field once, for fields kept, replaced, added and named twice', async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      await redis.hset('r', {
        id: 'm1',
        status: 'Running',
        kind: 'old',
        code: 'c',
        updatedAt: '1',
        session: 's',
      });
      await redis.hset('j', '#attempt', '1');
      const write = [
        ['status', 'Completed'],
        ['updatedAt', '2'],
        ['result', 'first'],
        ['kind', 'none'],
        // Named twice: the last value wins, as in HSET, and the field is pushed once.
        ['result', 'second'],
        ['updatedAt', '3'],
        ['text', 't'],
        // Stored, not pushed: no reader of a push reads the runner's stage stamps.
        ['timings', '{"endSent":1}'],
      ].flat();
      const args = ['m1', channels.runEvents, 'status', 'sealed', '100', '60', ...write];
      const [record, journal] = await pushedEnd(redis, redis, 'm1', async () =>
        expect(await driver.run(redis, ['r', 'e', 'j'], args)).toBe('Completed'),
      );
      const stored = await redis.hgetall('r');
      expect(stored).toEqual({
        id: 'm1',
        status: 'Completed',
        kind: 'none',
        code: 'c',
        session: 's',
        updatedAt: '3',
        result: 'second',
        text: 't',
        timings: '{"endSent":1}',
      });
      const { timings: _stamps, code: _code, session: _session, ...pushedFields } = stored;
      expect(fieldsOf(record)).toEqual(pushedFields);
      const names = record.filter((_, i) => i % 2 === 0);
      expect(new Set(names).size).toBe(names.length);
      expect(names).toHaveLength(Object.keys(pushedFields).length);
      expect(fieldsOf(journal)).toEqual({ '#attempt': '1' });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
  it('read by the script itself (no record read first): the same fields, the end2 tag', async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      await redis.hset('r', { id: 'm2', status: 'Running', pick: 'p', description: 'd', attempts: '1' });
      const write = ['status', 'Cancelled', 'ended', 'e', 'updatedAt', '5', 'kind', 'abort'];
      const args = ['m2', channels.runEvents, 'status', 'sealed', '100', '60', ...write];
      const [record] = await pushedEnd(redis, redis, 'm2', async () =>
        expect(await unread.run(redis, ['r', 'e', 'j'], args)).toBe('Cancelled'),
      );
      expect(fieldsOf(record)).toEqual({
        id: 'm2',
        status: 'Cancelled',
        attempts: '1',
        ended: 'e',
        updatedAt: '5',
        kind: 'abort',
      });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
