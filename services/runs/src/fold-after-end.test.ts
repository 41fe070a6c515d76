/**
 * The fold of a tenant's pending list (includes/index-fold.lua) is a call of its own, sent by an
 * end's caller after the end's answer (run-index.ts `foldAfterEnd`), not part of the end's script:
 * the end that brings the list to FOLD_AT answers "fold due" (test/bench/README.md, round 39
 * `fold-off`). On real Redis: what the end's script runs (MONITOR), that the fold follows, that a
 * fold lost with its caller is made by the next end's caller or a read, and that two folds racing
 * count each entry once, the second writing nothing.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createRunIndex, foldPendingEnds } from './run-index.ts';
import { FINISH_TENANT, FOLD_AT, FOLD_INDEX } from './run-index-scripts.ts';
import { finishTenantCall, usageDay } from './run-index-writes.ts';
import { createRunStore } from './run-store.ts';
import { tenantNames } from './run-store-args.ts';
import { FINISH_RUN } from './run-store-scripts.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const result = { _tag: 'Completed' as const, value: 1, logs: [] };

/** Every command Redis ran while `fn` ran, in order, with whether a script ran it (MONITOR). */
async function commandsDuring(
  redis: Redis,
  fn: () => Promise<unknown>,
): Promise<{ args: string[]; lua: boolean }[]> {
  const mon = await redis.monitor();
  const seen: { args: string[]; lua: boolean }[] = [];
  const marker = `fold-after-end-${process.pid}-${Date.now()}`;
  let reached: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    reached = resolve;
  });
  mon.on('monitor', (_time: string, args: string[], source: string) => {
    if (String(args[0]).toLowerCase() === 'echo' && String(args[1]) === marker) return reached();
    seen.push({ args: args.map(String), lua: source === 'lua' });
  });
  mon.on('error', () => undefined);
  try {
    await fn();
    await redis.echo(marker);
    await done;
  } finally {
    mon.disconnect();
  }
  return seen;
}

/** The commands a script call (by its sha's EVALSHA) ran inside it. */
function inside(all: { args: string[]; lua: boolean }[], sha: string): string[][] {
  const at = all.findIndex((c) => !c.lua && c.args[0]?.toLowerCase() === 'evalsha' && c.args[1] === sha);
  if (at < 0) return [];
  const out: string[][] = [];
  for (let i = at + 1; i < all.length && all[i]!.lua; i++) out.push(all[i]!.args);
  return out;
}

describe("the pending list's fold, after the end's answer", () => {
  it('the end that fills the list writes no fold in its script; its caller sends fold-index-5 after it', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const index = createRunIndex(redis, sealer);
      const run = (id: string) => runFixture(id, { tenant: 'ta', session: 'sa', createdAt: Date.now() });
      const n = FOLD_AT / 2;
      for (let i = 0; i < n - 1; i++) {
        await runs.create(run(`a${i}`));
        await runs.finish(run(`a${i}`), { status: 'Completed', result, text: 'x' });
      }
      // Loaded once, so its first call is an EVALSHA MONITOR shows as such.
      expect(await foldPendingEnds(redis, 'ta')).toBe(FOLD_AT - 2);
      for (let i = n - 1; i < 2 * n - 1; i++) {
        await runs.create(run(`a${i}`));
        if (i < 2 * n - 2) await runs.finish(run(`a${i}`), { status: 'Completed', result, text: 'x' });
      }
      expect(await redis.llen(keys.indexPending('ta'))).toBe(FOLD_AT - 1);
      const last = run(`a${2 * n - 2}`);
      const seen = await commandsDuring(redis, async () => {
        expect(await runs.finish(last, { status: 'Completed', result, text: 'x' })).toBe(true);
        await expect.poll(() => redis.llen(keys.indexPending('ta'))).toBe(0);
      });
      const pending = keys.indexPending('ta');
      const end = inside(seen, FINISH_RUN.sha);
      // The end appended its entry and did not read or trim the list (no fold in it).
      expect(end.some((c) => c[0]?.toLowerCase() === 'rpush' && c[1] === pending)).toBe(true);
      expect(end.filter((c) => c[1] === pending).map((c) => c[0]?.toLowerCase())).toEqual(['rpush']);
      // The fold came as a call of its own, after the end, and took the whole list.
      const fold = inside(seen, FOLD_INDEX.sha);
      expect(fold.filter((c) => c[1] === pending).map((c) => c[0]?.toLowerCase())).toEqual([
        'llen',
        'lrange',
        'ltrim',
      ]);
      const endAt = seen.findIndex((c) => !c.lua && c.args[1] === FINISH_RUN.sha);
      const foldAt = seen.findIndex((c) => !c.lua && c.args[1] === FOLD_INDEX.sha);
      expect(endAt).toBeGreaterThanOrEqual(0);
      expect(foldAt).toBeGreaterThan(endAt);
      const today = usageDay(Date.now());
      expect((await index.usage('ta', today, today))[0]?.runs).toEqual({ Completed: 2 * n - 1 });
    }));

  it("an end at the fold size answers 2 and leaves the list whole; a fold lost with its caller is made by the next end's caller, or by a read", () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const index = createRunIndex(redis, sealer);
      const run = (id: string) => runFixture(id, { tenant: 'tb', session: 'sb', createdAt: Date.now() });
      // The end script as a caller that died right after its answer would have left it: no fold sent.
      const crashedEnd = async (id: string) => {
        const call = finishTenantCall('tb', tenantNames('tb').inFlight, {
          id,
          status: 'Completed',
          endedAt: Date.now(),
          kind: 'none',
          usage: { outputBytes: 1 },
        });
        return FINISH_TENANT.run(redis, call.keys, call.args);
      };
      for (let i = 0; i < FOLD_AT / 2; i++) await runs.create(run(`b${i}`));
      for (let i = 0; i < FOLD_AT / 2 - 1; i++) expect(await crashedEnd(`b${i}`)).toBe(1);
      expect(await crashedEnd(`b${FOLD_AT / 2 - 1}`)).toBe(2);
      expect(await redis.llen(keys.indexPending('tb'))).toBe(FOLD_AT);
      // The next end past the size is due a fold too, and its caller sends it.
      await runs.create(run('b-next'));
      expect(await runs.finish(run('b-next'), { status: 'Completed', result, text: 'x' })).toBe(true);
      await expect.poll(() => redis.llen(keys.indexPending('tb'))).toBe(0);
      const today = usageDay(Date.now());
      expect((await index.usage('tb', today, today))[0]?.runs).toEqual({ Completed: FOLD_AT / 2 + 1 });

      // Lost again: the next read folds first and sees every end.
      for (let i = 0; i < FOLD_AT / 2; i++) await runs.create(run(`c${i}`));
      for (let i = 0; i < FOLD_AT / 2; i++) await crashedEnd(`c${i}`);
      expect(await redis.llen(keys.indexPending('tb'))).toBe(FOLD_AT);
      const listed = await index.listSessions('tb', { limit: 5 });
      expect(listed.items[0]?.runs).toMatchObject({ total: FOLD_AT + 1, active: 0, Completed: FOLD_AT + 1 });
      expect(await redis.exists(keys.indexPending('tb'))).toBe(0);
    }));

  it("two folds racing count each entry once; one that finds nothing to do reads the list's length or range and writes nothing", () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const index = createRunIndex(redis, sealer);
      const run = (id: string) => runFixture(id, { tenant: 'tr', session: 'sr', createdAt: Date.now() });
      for (let i = 0; i < 10; i++) {
        await runs.create(run(`r${i}`));
        await runs.finish(run(`r${i}`), { status: 'Failed', result, text: '', kind: 'timeout' });
      }
      const other = redis.duplicate();
      try {
        const took = await Promise.all([foldPendingEnds(redis, 'tr'), foldPendingEnds(other, 'tr')]);
        expect(took.sort((x, y) => x - y)).toEqual([0, 20]);
      } finally {
        other.disconnect();
      }
      const stats = async () =>
        new Map(
          [...(await redis.info('commandstats')).matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)].map(
            (m) => [m[1]!, Number(m[2])] as const,
          ),
        );
      const ranDuring = async (fn: () => Promise<unknown>) => {
        const before = await stats();
        await fn();
        const after = await stats();
        return [...after]
          .filter(([name, calls]) => calls > (before.get(name) ?? 0) && name !== 'info' && name !== 'evalsha')
          .map(([name]) => name)
          .sort();
      };
      // A reader's fold with nothing pending: one LRANGE.
      expect(await ranDuring(async () => expect(await foldPendingEnds(redis, 'tr')).toBe(0))).toEqual([
        'lrange',
      ]);
      // An end's caller's fold (FOLD_AT at least) on a list a fold just emptied and a create refilled a
      // little: one LLEN, the entries left for the next fold.
      await runs.create(run('r-late'));
      expect(
        await ranDuring(async () => expect(await foldPendingEnds(redis, 'tr', FOLD_AT)).toBe(0)),
      ).toEqual(['llen']);
      expect(await redis.llen(keys.indexPending('tr'))).toBe(1);
      const today = usageDay(Date.now());
      expect((await index.usage('tr', today, today))[0]?.runs).toEqual({ Failed: 10 });
    }));
});
