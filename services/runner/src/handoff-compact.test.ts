/**
 * A registration's compact form (`@islet/runs` handoff-terms.ts): a runner at its defaults
 * (ISLET_HANDOFF_COMPACT_TERMS `on` since the release after 9ec25e04) registers only what differs between workers, and a gateway's add
 * that holds its mode's names (handoff-add-store.ts `handingAdds(queue, mode)`) reads it and the
 * full form alike; an add without them takes a compact registration for unusable and the job waits
 * for the worker's own fetch (nothing lost, run once). Real redis-server, BullMQ, fair share, run
 * store; what happened read from the stored registration, MONITOR and the worker's counters.
 */
import { keys } from '@islet/core';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { addOn, handingQueue, prefix } from '../test/handing-queue.ts';
import {
  handOff,
  mode,
  onRunnerHarness,
  type RunnerUnderTest,
  until,
  untilIdle,
} from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('handoff-compact-test', (up) => {
  ({ redis } = up);
});
const { newRun, monitor, setUp, warmUp } = h;

/** A lock unlike the lease's 30 s: a term read from the wrong place shows. */
const LOCK = { ISLET_RUNNER_LOCK_DURATION_MS: '25000' };
/** The runner's defaults: the compact form (nothing set). */
const compactOn = { handOff: true, env: LOCK };
const fullForm = { handOff: true, env: { ...LOCK, ISLET_HANDOFF_COMPACT_TERMS: 'off' } };

/** The commands the add's script sent before `id`'s work, with ids, tokens, times and seals made alike. */
function scriptCommands(seen: string[][], sent: string[][], id: string, workerId: string): string[] {
  const work = seen.findIndex((c) => c[0] === 'echo' && c[1]?.startsWith(`work ${id} `));
  const own = new Set(sent);
  return seen
    .slice(0, work)
    .filter((c) => !own.has(c))
    .map((c) =>
      c
        .join(' ')
        // Seals and the worker's id first: a uuid or a seal's text may hold a short run id such as `b1`.
        .replace(/v1\.[\w.-]+/g, '<sealed>')
        .split(workerId)
        .join('<worker>')
        .split(id)
        .join('<run>')
        .replace(/:h:\d+/g, ':h:<n>')
        .replace(/\d{13}(\.\d+)?/g, '<time>'),
    );
}

/** Adds `id` on `q` to `t`'s idle worker; the stored registration it met and the job's lock as set. */
async function handTo(t: RunnerUnderTest, q: Queue, id: string) {
  await untilIdle(redis, t);
  const registration = (await redis.hget(handOff.idleArgs, t.worker().id)) ?? '';
  const before = { handOffs: t.worker().handOffs, fetches: t.worker().redisFetches };
  await newRun(id);
  const m = await monitor();
  try {
    const done = t.outcomes.length;
    await addOn(q, id, 1, true);
    await until(`${id} to complete`, async () => t.outcomes.length === done + 1);
  } finally {
    await m.stop();
  }
  return {
    registration,
    handed: t.worker().handOffs - before.handOffs,
    fetched: t.worker().redisFetches - before.fetches,
    locks: m.seen.filter((c) => c[0] === 'set' && c[1] === `${prefix}${id}:lock`),
    script: scriptCommands(m.seen, m.sent, id, t.worker().id),
  };
}

describe("a registration's compact form", () => {
  it('a runner at its defaults (ISLET_HANDOFF_COMPACT_TERMS on) registers only what differs; an add holding its names hands it the job under its token and lock', async () => {
    const t = await setUp('compact', true, undefined, compactOn);
    const q = handingQueue(redis);
    try {
      await warmUp(t, 'kw');
      const got = await handTo(t, q, 'k1');
      const terms = JSON.parse(got.registration) as unknown[];
      // id, token, lock ms, name, hand-off key, share, cap, lease ms, journal ttl, stream length, sealed event.
      expect(Array.isArray(terms)).toBe(true);
      expect(terms).toHaveLength(11);
      expect(String(terms[0])).toMatch(/^h2:[0-9a-f]{16}$/);
      expect(terms[4]).toBe(`${prefix}handoff:${t.worker().id}`);
      // None of the mode's names: no queue key, no pool key, no key part.
      expect(got.registration).not.toContain(`${prefix}wait`);
      expect(got.registration).not.toContain('{pool:');
      expect(got.handed).toBe(1);
      expect(got.fetched).toBe(0);
      // BullMQ's fetch in the add's script locked the job with the registration's token and lock.
      expect(terms[2]).toBe(25000);
      expect(got.locks).toEqual([['set', `${prefix}k1:lock`, terms[1], 'PX', '25000']]);
      expect(await redis.hget(keys.run('k1'), 'status')).toBe('Completed');
      expect(await redis.hget(keys.run('k1'), 'attempts')).toBe('1');
      expect(t.outcomes.filter((o) => o === 'completed 1')).toHaveLength(2);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await q.close();
      await t.close();
    }
  });

  it('the same add reads the full form (the flag off) and sends the very commands it sends for the compact one', async () => {
    const q = handingQueue(redis);
    try {
      const compact = await setUp('both-c', true, undefined, compactOn);
      let c: Awaited<ReturnType<typeof handTo>>;
      try {
        await warmUp(compact, 'bcw');
        c = await handTo(compact, q, 'b1');
      } finally {
        await compact.close();
      }
      const full = await setUp('both-f', true, undefined, fullForm);
      try {
        await warmUp(full, 'bfw');
        const f = await handTo(full, q, 'b2');
        const terms = JSON.parse(f.registration) as { token: string; lockDuration: number; keys: string[] };
        expect(terms.keys).toHaveLength(11);
        expect(f.handed).toBe(1);
        expect(f.fetched).toBe(0);
        expect(f.locks).toEqual([['set', `${prefix}b2:lock`, terms.token, 'PX', '25000']]);
        expect(await redis.hget(keys.run('b2'), 'status')).toBe('Completed');
        // The fetch, lock, lease and attempt start alike: every term read from where it belongs.
        expect(c.registration.startsWith('[')).toBe(true);
        expect(c.handed).toBe(1);
        expect(f.script.length).toBeGreaterThan(5);
        expect(c.script).toEqual(f.script);
      } finally {
        await full.close();
      }
    } finally {
      await q.close();
    }
  });

  it("an add without the mode's names takes a compact registration for unusable: the worker fetches the job, run once", async () => {
    const t = await setUp('unnamed', true, undefined, compactOn);
    const q = handingQueue(redis, { withNames: false });
    try {
      await warmUp(t, 'uw');
      const got = await handTo(t, q, 'u1');
      expect(got.registration.startsWith('[')).toBe(true);
      expect(got.handed).toBe(0);
      expect(got.fetched).toBe(1);
      expect(await redis.hget(keys.run('u1'), 'status')).toBe('Completed');
      expect(await redis.hget(keys.run('u1'), 'attempts')).toBe('1');
      expect(t.outcomes.filter((o) => o === 'completed 1')).toHaveLength(2);
    } finally {
      await q.close();
      await t.close();
    }
  });
});
