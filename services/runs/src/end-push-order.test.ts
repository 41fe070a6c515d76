/**
 * A run's end pushed to its waiter is written to the waiter's connection before the end's answer
 * to the process that wrote it (core's `LuaScript.runAnsweredLast`: the end's call behind a PING in
 * one socket write). Real redis-server with its AOF fsynced at every write, as deployed; the order
 * in which this process hears the two (each on its own socket, read in the order they became
 * readable), and the calls as MONITOR shows them.
 */
import { channels, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const end = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: 1, logs: [] },
  text: 'ok',
};

describe("a pushed end's order", () => {
  it("reaches the waiter's connection before the end's answer; an end nobody waits on goes alone", async () => {
    const server = await startRedis({ appendOnly: true });
    const redis = new Redis(server.url);
    const sub = new Redis(server.url);
    const mon = await new Redis(server.url).monitor();
    try {
      const runs = createRunStore(redis, sealer);
      const order: string[] = [];
      sub.on('message', (_c: string, m: string) => {
        const [id, tag] = m.split(' ');
        if (tag === 'end') order.push(`push ${id}`);
      });
      await sub.subscribe(channels.runEvents);
      const seen: string[][] = [];
      mon.on('monitor', (_t: string, args: string[]) => seen.push(args));
      for (const id of ['w0', 'w1', 'w2', 'w3', 'n1']) {
        const waited = id.startsWith('w');
        const run = runFixture(id, { tenant: 't1', ...(waited ? { pushEnd: true } : {}) });
        await runs.create(run);
        expect(await runs.finish(run, end)).toBe(true);
        order.push(`answer ${id}`);
        if (waited)
          for (let i = 0; i < 200 && !order.includes(`push ${id}`); i++)
            await new Promise((r) => setTimeout(r, 5));
      }
      // w0 loads the script (EVALSHA's NOSCRIPT, then EVAL apart). Of the later waited ends, the
      // push reached this process first in all but at most one: its two sockets are read in the
      // order they became readable, but a socket already on the poll's ready list (level-triggered,
      // read just before) can be read first under load, so one end in a few may read reversed.
      // On the base every end's answer was written first.
      const pushFirst = ['w1', 'w2', 'w3'].filter(
        (id) => order.indexOf(`push ${id}`) < order.indexOf(`answer ${id}`),
      );
      expect(pushFirst.length).toBeGreaterThanOrEqual(2);
      expect(order).not.toContain('push n1');
      await new Promise((r) => setTimeout(r, 50));
      // The end's call (the last call naming the run's record) right behind a PING, or not.
      const before = (id: string) => {
        const at = seen.findLastIndex((c) => c[0]?.toLowerCase() === 'evalsha' && c.includes(keys.run(id)));
        return seen[at - 1]?.[0]?.toLowerCase();
      };
      expect([before('w1'), before('w2'), before('w3')]).toEqual(['ping', 'ping', 'ping']);
      expect(before('n1')).not.toBe('ping');
    } finally {
      mon.disconnect();
      sub.disconnect();
      redis.disconnect();
      await server.stop();
    }
  });
});
