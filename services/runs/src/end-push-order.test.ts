/**
 * A run's end pushed to its waiter goes behind a PING from the same connection (core's
 * `LuaScript.runAnsweredLast`: both in one socket write), so Redis, which writes its clients'
 * pending output newest first after the turn's fsync, writes the push before the end's answer. Real
 * redis-server with its AOF; the calls as MONITOR shows them (the command before each end's, and
 * its client). The order the two arrive in is asserted through the runner's worker in
 * runner/src/end-push-first.test.ts; here, with MONITOR's connection in the same process, a
 * socket read just before stays on the poll's level-triggered ready list and is read first often
 * enough under load that the arrival order says little.
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
  it("goes behind a PING in the same connection's write; an end nobody waits on goes alone", async () => {
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
      const from: string[] = [];
      mon.on('monitor', (_t: string, args: string[], source: string) => {
        seen.push(args);
        from.push(source);
      });
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
      expect(order.filter((e) => e.startsWith('push ')).sort()).toEqual([
        'push w0',
        'push w1',
        'push w2',
        'push w3',
      ]);
      await new Promise((r) => setTimeout(r, 50));
      // The end's call (w0's: its EVAL after the NOSCRIPT; the last call naming the run's record)
      // right behind a PING from the same client, or not.
      const before = (id: string) => {
        const at = seen.findLastIndex((c) => /^eval(sha)?$/i.test(c[0] ?? '') && c.includes(keys.run(id)));
        const prev = seen[at - 1]?.[0]?.toLowerCase();
        return prev === 'ping' && from[at - 1] === from[at] ? 'ping' : prev;
      };
      expect([before('w1'), before('w2'), before('w3')]).toEqual(['ping', 'ping', 'ping']);
      expect(seen.filter((c) => c[0]?.toLowerCase() === 'ping')).toHaveLength(4);
      expect(before('n1')).not.toBe('ping');
    } finally {
      mon.disconnect();
      sub.disconnect();
      redis.disconnect();
      await server.stop();
    }
  });
});
