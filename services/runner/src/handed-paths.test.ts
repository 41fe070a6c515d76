/**
 * The hand-off's direct add and fetch (`@islet/runs` handed-add.ts, handed-fetch.ts) against
 * BullMQ's own addStandardJob and moveToActive texts: the same registration and the same add, once
 * through each script, each from the same keys
 * (DUMP and RESTORE of all of them), run the same commands inside the script (MONITOR; Redis's
 * times masked) and hand the worker the same answer. Real redis-server, real BullMQ, run store and
 * fair share.
 */
import { keys } from '@islet/core';
import type { LuaScript } from '@islet/core/lua-script';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import {
  ADD_STANDARD_JOB_SHA1,
  handedAdd,
  handedFetch,
  handOffAddScript,
  handOffKeys,
  MOVE_TO_ACTIVE_SHA1,
  runJobOptions,
} from '@islet/runs';
import { Queue, type RedisClient } from 'bullmq';
import { addStandardJob } from 'bullmq/dist/esm/scripts/addStandardJob-9.js';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import type { Redis } from 'ioredis';
import { unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { handOff, mode, onRunnerHarness, untilIdle } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('handed-paths-test', (up) => {
  ({ redis } = up);
});
const { newRun, monitor, setUp, warmUp } = h;
const prefix = `${QUEUE_PREFIX}:${runQueueName(mode)}:`;

/** Every key's DUMP. */
async function dumpAll(): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const k of await redis.keys('*')) {
    const v = await redis.dumpBuffer(k);
    if (v) out.set(k, v);
  }
  return out;
}

/** Times (Redis's and the add's, ms: 13 digits) masked, deep. */
function masked(v: unknown): unknown {
  if (typeof v === 'string') return v.replace(/\d{13}/g, 'T');
  if (typeof v === 'number') return v > 1e12 ? 'T' : v;
  if (Array.isArray(v)) return v.map(masked);
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, masked(x)]));
  return v;
}

/** A queue whose standard add runs `script` (the hand-off's add, with the queue's hand-off keys). */
function queueWith(script: LuaScript): Queue {
  const q = new Queue(runQueueName(mode), { connection: redis.duplicate(), prefix: QUEUE_PREFIX });
  const scripts = (q as unknown as { scripts: { execCommand: unknown } }).scripts;
  const { idle, idleArgs } = handOffKeys(q.keys[''] ?? '', '');
  scripts.execCommand = (client: RedisClient, name: string, args: unknown[]) => {
    if (name !== 'addStandardJob') throw new Error(`unexpected ${name}`);
    return script.run(
      client as unknown as Redis,
      [...(args.slice(0, 9) as string[]), q.keys.prioritized ?? '', idle, idleArgs],
      args.slice(9) as (string | number)[],
    );
  };
  return q;
}

/** BullMQ's own texts with a line more: no direct path is taken for them. */
const addText = `${addStandardJob.content}\n`;
const fetchText = `${moveToActive.content}\n`;

describe("the hand-off's direct add and fetch", () => {
  it('are written against one BullMQ text each: another text runs as it is', () => {
    expect(handedFetch(moveToActive.content)).toBeDefined();
    expect(handedFetch(fetchText)).toBeUndefined();
    expect(handedAdd(addStandardJob.content)).toBeDefined();
    expect(handedAdd(addText)).toBeUndefined();
    expect([MOVE_TO_ACTIVE_SHA1, ADD_STANDARD_JOB_SHA1].map((s) => s.length)).toEqual([40, 40]);
    const direct = handOffAddScript(addStandardJob.content, moveToActive.content).source;
    expect(direct).toContain(
      'local fetched = handedFetch(KEYS, ARGV)\nif not fetched then\nlocal function bullFetch()',
    );
    expect(direct).toContain('local handed = handedAdd(KEYS, ARGV)');
    const text = handOffAddScript(addText, fetchText).source;
    expect(text).not.toContain('handedFetch');
    expect(text).not.toContain('handedAdd');
  });

  it.each([
    ['alone in the queue', 'alone'],
    ['alone, its worker named (`pb` written)', 'named'],
    ['alone, its worker unnamed', 'unnamed'],
    ['with a prioritized job behind it (the base marker left set)', 'behind'],
    ['the queue paused (the job on the paused list, no fetch)', 'paused'],
    ["a duplicate of a job there (the add's text runs)", 'duplicate'],
  ])(
    "send what BullMQ's texts send through the hand-off, in their order, and hand the same answer: %s",
    async (_, setting) => {
      const direct = handOffAddScript(addStandardJob.content, moveToActive.content);
      const text = handOffAddScript(addText, fetchText);
      // Each direct path alike on its own: the direct add with BullMQ's fetch text.
      const addOnly = handOffAddScript(addStandardJob.content, fetchText);
      // A worker's registration (a real runner's, after a run), kept under an id no one pops.
      // The full form: these scripts are made without the mode's names (a compact one is not theirs).
      const t = await setUp('direct', true, undefined, {
        handOff: true,
        env: { ISLET_HANDOFF_COMPACT_TERMS: 'off' },
      });
      let terms: Record<string, unknown>;
      try {
        await warmUp(t, 'dw');
        await untilIdle(redis, t);
        terms = JSON.parse((await redis.hget(handOff.idleArgs, t.worker().id)) ?? '{}');
      } finally {
        await t.close();
      }
      const ghost = handOffKeys(prefix, 'ghost');
      const name = setting === 'named' ? 'w1' : setting === 'unnamed' ? '' : terms.name;
      await redis.hset(handOff.idleArgs, 'ghost', JSON.stringify({ ...terms, name, handOff: ghost.handOff }));
      await newRun('d1');
      // A job BullMQ's fetch would take after the wait list's: the look behind the handed job finds it.
      if (setting === 'behind') await redis.zadd(`${prefix}prioritized`, 1, 'p1');
      if (setting === 'paused') await redis.hset(`${prefix}meta`, 'paused', '1');
      if (setting === 'duplicate') await redis.hset(`${prefix}d1`, 'name', 'run', 'timestamp', '1');
      const state = await dumpAll();
      const addThrough = async (script: LuaScript) => {
        await redis.flushall();
        for (const [k, v] of state) await redis.restore(k, 0, v, 'REPLACE');
        const now = Number((await redis.time())[0]) * 1000;
        await redis.zadd(handOff.idle, now + 60_000, 'ghost');
        const q = queueWith(script);
        // Its connection's own writes (BullMQ's meta) before MONITOR starts: none of them in what it sees.
        await q.waitUntilReady();
        await redis.echo('ready');
        const m = await monitor();
        try {
          await q.add('run', { runId: 'd1', tenant: 'acme', enqueuedAtMs: 1 }, runJobOptions('d1', 1));
        } finally {
          await m.stop();
          await q.close();
        }
        const inside = m.seen.filter((c) => !m.sent.includes(c));
        const [handed] = await redis.zrangeBuffer(ghost.handOff, 0, -1);
        return { inside: masked(inside), answer: masked(handed ? unpack(handed) : undefined) };
      };
      try {
        const a = await addThrough(direct);
        const b = await addThrough(text);
        const c = await addThrough(addOnly);
        expect(a.inside).toEqual(b.inside);
        expect(a.answer).toEqual(b.answer);
        expect(c.inside).toEqual(b.inside);
        expect(c.answer).toEqual(b.answer);
        const sent = a.inside as string[][];
        if (setting === 'paused') {
          expect(sent).toContainEqual(['lpush', `${prefix}paused`, 'd1']);
          expect(a.answer).toBeUndefined();
          return;
        }
        if (setting === 'duplicate') {
          expect(sent.some((c) => c[0] === 'hmset')).toBe(false);
          return;
        }
        // The job was handed: pushed onto active, locked with the registration's token, started.
        expect(sent).toContainEqual(['lpush', `${prefix}active`, 'd1']);
        expect(sent).toContainEqual([
          'set',
          `${prefix}d1:lock`,
          terms.token,
          'PX',
          String(terms.lockDuration),
        ]);
        expect((a.answer as unknown[])[0]).toBe(terms.token);
        const start = sent.find((c) => c[0] === 'hset' && c[1] === `${prefix}d1`);
        if (setting === 'named')
          expect(start).toEqual(['hset', `${prefix}d1`, 'processedOn', 'T', 'pb', 'w1', 'ats', '1']);
        if (setting === 'unnamed')
          expect(start).toEqual(['hset', `${prefix}d1`, 'processedOn', 'T', 'ats', '1']);
        // Behind it another job: the base marker set (held, then written), else removed.
        expect(sent).toContainEqual(
          setting === 'behind' ? ['zadd', `${prefix}marker`, '0', '0'] : ['zrem', `${prefix}marker`, '0'],
        );
        expect(await redis.exists(keys.run('d1'))).toBe(1);
      } finally {
        await redis.flushall();
      }
    },
  );
});
