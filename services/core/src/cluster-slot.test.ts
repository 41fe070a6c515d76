/**
 * `keySlot` (cluster-slot.ts): the slot cluster-key-slot gives every key, without its byte array;
 * put behind ioredis's `getSlot` when a process makes its first Cluster client, and a script call's
 * slot read from its first key without ioredis's key walk. On a real 3-master cluster: every
 * command of Islet's key shapes and of arbitrary text reaches its slot's master at once (no MOVED).
 */
import { createRequire } from 'node:module';
import { type RedisCluster, startRedisCluster } from '@islet/testkit';
import { Command } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { keySlot, keySlotInUse, useKeySlot } from './cluster-slot.ts';
import { LuaScript, OneCopyCommand } from './lua-script.ts';
import { createRedis, type Redis, redisNodes } from './redis.ts';

const requireIoredis = createRequire(createRequire(import.meta.url).resolve('ioredis'));
const generate = requireIoredis('cluster-key-slot') as (key: string | Buffer) => number;

/** A small seeded generator: the same keys every run. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Keys of Islet's shapes, edge cases of the tag rule, and text of every width. */
const shaped = [
  '',
  'a',
  '{',
  '}',
  '{}',
  '{}a}',
  'a{}b{c}',
  '{{a}}',
  'x{a}{b}',
  '{a',
  'a}b{c',
  'run:{0193a7c4-5e1f-7a2b-9c3d-4e5f6a7b8c9d}',
  'run:{0193a7c4-5e1f-7a2b-9c3d-4e5f6a7b8c9d}:events',
  'bull:{islet-runs}:wait',
  'bull:{islet-runs}:0193a7c4-5e1f',
  'tenant:{acme}:inflight',
  'ключ',
  '{ключ}x',
  'a{☃}b',
  '{𝄞}',
  '𝄞{𝄞}𝄞',
  'é{é}',
  '\ud800',
  '{\ud800}',
  'a\udc00{b}',
  '\ud83d\ude00{\ud83d}',
  '{\u07ff\u0800\uffff}',
];

describe('keySlot', () => {
  it("gives cluster-key-slot's slot for every key shape, text and Buffer", () => {
    for (const key of shaped) {
      expect(keySlot(key), key).toBe(generate(key));
      const bytes = Buffer.from(key);
      expect(keySlot(bytes), key).toBe(generate(bytes));
    }
  });

  it("gives cluster-key-slot's slot for 20,000 random keys of any code unit, with braces", () => {
    const next = seeded(51);
    const units = [0x7b, 0x7d, 0x61, 0x3a, 0x7f, 0x80, 0x7ff, 0x800, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xffff];
    for (let n = 0; n < 20_000; n++) {
      const length = Math.floor(next() * 24);
      let key = '';
      for (let i = 0; i < length; i++)
        key += String.fromCharCode(
          next() < 0.5 ? (units[Math.floor(next() * units.length)] as number) : Math.floor(next() * 0x10000),
        );
      expect(keySlot(key)).toBe(generate(key));
      const bytes = Buffer.from(
        Array.from({ length }, () =>
          next() < 0.2 ? 0x7b + 2 * Math.floor(next() * 2) : Math.floor(next() * 256),
        ),
      );
      expect(keySlot(bytes)).toBe(generate(bytes));
    }
  });

  it("reads a script call's slot from its first key, without ioredis's key walk", () => {
    const call = new OneCopyCommand('evalsha', ['0'.repeat(40), '2', 'run:{r1}', 'run:{r1}:events', 'x']);
    const walk = vi.spyOn(call, 'getKeys');
    expect(call.getSlot()).toBe(generate('run:{r1}'));
    expect(walk).not.toHaveBeenCalled();
    // No key: no slot (any node), as ioredis's.
    expect(new OneCopyCommand('eval', ['return 1', '0']).getSlot()).toBe(
      new Command('eval', ['return 1', '0']).getSlot(),
    );
    // Another command, or a key prefix's: ioredis's reading (its keys).
    const prefixed = new OneCopyCommand('evalsha', ['0'.repeat(40), '1', '{k}', 'a'], { keyPrefix: 'p:' });
    expect(prefixed.getSlot()).toBe(generate('p:{k}'));
    expect(new OneCopyCommand('get', ['{k}x']).getSlot()).toBe(generate('{k}x'));
  });
});

describe('useKeySlot with an ioredis it was not written against', () => {
  // Runs before any Cluster client of this file is made (the describe below makes the first).
  it("leaves ioredis's own getSlot in place", () => {
    useKeySlot('5.99.0');
    expect(keySlotInUse()).toBe(false);
  });
});

describe('keySlot on a 3-master Redis Cluster', () => {
  let cluster: RedisCluster;
  let redis: Redis;
  const movedOn = async () => {
    let moved = 0;
    for (const node of await redisNodes(redis)) {
      const stats = await node.info('errorstats');
      moved += Number(/errorstat_MOVED:count=(\d+)/.exec(stats)?.[1] ?? 0);
    }
    return moved;
  };

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
    redis = createRedis({ ISLET_REDIS_MODE: 'cluster', ISLET_REDIS_URL: cluster.seeds });
    await redis.set('warm', '1');
  }, 60_000);

  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('is what every command of a Cluster client routes by: no MOVED over keys of every shape', async () => {
    expect(keySlotInUse()).toBe(true);
    const before = await movedOn();
    const next = seeded(7);
    // Keys cluster-key-slot reads as Redis does: not a lone surrogate (sent as U+FFFD's bytes) nor an
    // empty tag followed by a `}` (Redis hashes the whole key), where ioredis's first guess was
    // already MOVED before this change.
    const agreed = shaped.filter((k) => k !== '' && Buffer.from(k).toString() === k && !k.includes('{}'));
    const keys = [...agreed, ...Array.from({ length: 300 }, (_, n) => `run:{${n}-${next()}}:é☃𝄞${n}`)];
    const script = new LuaScript("redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])");
    for (const key of keys) {
      expect(await redis.set(key, key)).toBe('OK');
      expect(await redis.get(key)).toBe(key);
      expect(await script.run(redis, [key], [`${key}!`])).toBe(`${key}!`);
      expect((await redis.getBuffer(Buffer.from(key)))?.toString()).toBe(`${key}!`);
    }
    // Each key's slot is the one its master serves.
    for (const key of keys.slice(0, 40)) expect(keySlot(key)).toBe(await redis.cluster('KEYSLOT', key));
    expect(await movedOn()).toBe(before);
  });

  it("reads any script call's slot from its first key (ioredis's Script, BullMQ's), without the key walk", async () => {
    expect(keySlotInUse()).toBe(true);
    // As ioredis's `Script.execute` makes BullMQ's calls: a plain `Command`, the count a number.
    const call = new Command('evalsha', [
      '0'.repeat(40),
      2,
      'bull:{islet-runs}:wait',
      'bull:{islet-runs}:x',
      'a',
    ]);
    const walk = vi.spyOn(call, 'getKeys');
    expect(call.getSlot()).toBe(generate('bull:{islet-runs}:wait'));
    expect(walk).not.toHaveBeenCalled();
    // The memo: asked again, the same slot.
    expect(call.getSlot()).toBe(generate('bull:{islet-runs}:wait'));
    // EVAL, a Buffer key, a text count.
    const bytes = Buffer.from('run:{é}:x');
    const evalCall = new Command('eval', ['return 1', '1', bytes]);
    const evalWalk = vi.spyOn(evalCall, 'getKeys');
    expect(evalCall.getSlot()).toBe(generate(bytes));
    expect(evalWalk).not.toHaveBeenCalled();
    // No key: no slot (any node), as ioredis's own reading.
    expect(new Command('evalsha', ['0'.repeat(40), 0, 'a']).getSlot()).toBeNull();
    // A key prefix's call: its keys walked by ioredis's constructor, the prefixed key's slot.
    expect(new Command('evalsha', ['0'.repeat(40), 1, '{k}', 'a'], { keyPrefix: 'p:' }).getSlot()).toBe(
      generate('p:{k}'),
    );
    // Another command: ioredis's key walk.
    const get = new Command('get', ['{k}x']);
    const getWalk = vi.spyOn(get, 'getKeys');
    expect(get.getSlot()).toBe(generate('{k}x'));
    expect(getWalk).toHaveBeenCalledTimes(1);
    // On the cluster: a command defined as BullMQ defines its scripts (ioredis's `Script`), over keys
    // of every width, each at its slot's master at once (no MOVED).
    const before = await movedOn();
    const scripted = redis as Redis & { isletSetGet(key: string, value: string): Promise<string> };
    redis.defineCommand('isletSetGet', {
      numberOfKeys: 1,
      lua: "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])",
    });
    const next = seeded(11);
    for (let n = 0; n < 120; n++) {
      const key = `bull:{q-${n}-${next()}}:é☃𝄞`;
      expect(await scripted.isletSetGet(key, `${n}`)).toBe(`${n}`);
    }
    expect(await movedOn()).toBe(before);
  });
});
