import { channels, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { journalKeys } from './keys.ts';
import { type RunLease, releaseCall } from './lease-scripts.ts';
import { finishTenantCall } from './run-index-writes.ts';
import { createRunStore } from './run-store.ts';
import { tenantNames } from './run-store-args.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

/** Every command's name and arguments sent on `redis` during `body`, as ioredis will write them. */
async function sentDuring(redis: Redis, body: () => Promise<unknown>): Promise<unknown[][]> {
  const sent: unknown[][] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string; args: unknown[] }) => {
    sent.push([command.name as unknown].concat(command.args));
    return send(command as never);
  }) as typeof redis.sendCommand;
  try {
    await body();
  } finally {
    redis.sendCommand = send;
  }
  return sent;
}

/** Arrays of 2 or more elements walked by the iterator protocol during `body`. */
async function longIterations(body: () => Promise<unknown>): Promise<number[]> {
  const iterate = Array.prototype[Symbol.iterator];
  const long: number[] = [];
  Array.prototype[Symbol.iterator] = function (this: unknown[]) {
    if (this.length >= 2) long.push(this.length);
    return iterate.call(this);
  } as typeof iterate;
  try {
    await body();
  } finally {
    Array.prototype[Symbol.iterator] = iterate;
  }
  return long;
}

const done = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: 1, logs: [] },
  text: '1',
};

function heldLease(tenant: string, handed: { keys: string[]; args: (string | number)[] }[]): RunLease {
  return {
    mode: 'read-only',
    tenant,
    jobId: 'job-1',
    share: 1,
    cap: 0,
    leaseMs: 30_000,
    acquired: () => undefined,
    held: () => true,
    released: () => undefined,
    // Seen, not taken: the end runs its own script, with the same keys and arguments.
    deferEnd: (k, a) => {
      handed.push({ keys: k, args: a });
      return undefined;
    },
  };
}

describe("a run's end with the slot lease: its script call built without spreads", () => {
  it('sends the keys and arguments in the layout the base built by spreads, and walks no long array through its iterator', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealerFromConfig(base));
      const warm = runFixture('e0', { tenant: 't1' });
      await runs.create(warm);
      // Warmed with a lease too: the end's script is known to the server (no NOSCRIPT, no EVAL).
      await runs.finish({ ...warm, lease: heldLease('t1', []) }, { ...done, onEnded: () => undefined });

      const run = runFixture('e1', { tenant: 't1' });
      await runs.create(run);
      const handed: { keys: string[]; args: (string | number)[] }[] = [];
      const lease = heldLease('t1', handed);
      let ended: boolean | undefined;
      let sent: unknown[][] = [];
      const long = await longIterations(async () => {
        sent = await sentDuring(redis, () =>
          runs.finish({ ...run, lease }, { ...done, onEnded: (e: boolean) => (ended = e) }),
        );
      });
      expect(ended).toBe(true);
      expect((await runs.get('e1'))?.status).toBe('Completed');
      // Until round 37 (`end-spreads`): the end's lists spread, into the hand-over and again into
      // the script's call, and core's `send` spread them into ioredis's call (on the base: arrays
      // of 9, 9, 2, 13, 5, 18, 5, 10, 13, … elements, 33 arguments among them).
      expect(long).toEqual([]);

      // The one script call: EVALSHA sha, its key count, the keys, the arguments, as handed over.
      const script = sent.filter((c) => c[0] === 'evalsha' || c[0] === 'eval');
      expect(script).toHaveLength(1);
      const [, , count, ...rest] = script[0] as [string, string, number, ...unknown[]];
      const h = handed[0] as { keys: string[]; args: (string | number)[] };
      expect(Number(count)).toBe(h.keys.length);
      expect(rest).toEqual([...h.keys, ...h.args].map(String));

      // The base's layout: the record's three keys, the tenant half's, the charge's, (round 48) the
      // run's decisions, the release's; the end's seven arguments, the tenant half's, the charge's
      // two, the release's, the fields.
      const endedAt = Number(h.args[9]);
      const tenant = finishTenantCall('t1', tenantNames('t1').inFlight, {
        id: 'e1',
        status: 'Completed',
        endedAt,
        kind: 'none',
        usage: { outputBytes: 1 },
      });
      const release = releaseCall(lease);
      const n = tenant.keys.length;
      expect(h.keys.slice(0, 2)).toEqual([keys.run('e1'), keys.runEvents('e1')]);
      expect(h.keys.slice(3, 3 + n)).toEqual(tenant.keys);
      expect(h.keys[4 + n]).toBe(journalKeys().decisions('e1'));
      expect(h.keys.slice(5 + n)).toEqual(release.keys);
      expect(h.keys).toHaveLength(5 + n + release.keys.length);
      const a = tenant.args.length;
      expect(h.args.slice(0, 3)).toEqual(['e1', channels.runEvents, 'end']);
      // The end's mode: not pushed, a call maybe sent, decisions not ruled out (the `d`:
      // run-store-args.ts `endModeArg`).
      expect(h.args[6]).toBe('0d');
      expect(h.args.slice(7, 7 + a)).toEqual(tenant.args);
      expect(h.args.slice(9 + a, 9 + a + release.args.length)).toEqual(release.args);
      const fields = h.args.slice(9 + a + release.args.length);
      expect(fields.length % 2).toBe(0);
      expect(fields.at(-2)).toBe('updatedAt');
    });
  });

  it('hands the script its lists as made for a hand-over that declined: built once, not twice', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealerFromConfig(base));
      const run = runFixture('e2', { tenant: 't2' });
      await runs.create(run);
      const handed: { keys: string[]; args: (string | number)[] }[] = [];
      const scripted: { keys: string[]; args: (string | number)[] }[] = [];
      const runScript = LuaScript.prototype.run;
      LuaScript.prototype.run = function (this: LuaScript, r, k, a) {
        scripted.push({ keys: k, args: a });
        return runScript.call(this, r, k, a);
      };
      try {
        await runs.finish({ ...run, lease: heldLease('t2', handed) }, { ...done, onEnded: () => undefined });
      } finally {
        LuaScript.prototype.run = runScript;
      }
      expect((await runs.get('e2'))?.status).toBe('Completed');
      expect(handed).toHaveLength(1);
      expect(scripted).toHaveLength(1);
      // The very lists handed over (until round 38, `tidy`: a second copy of each, equal).
      expect(scripted[0]?.keys).toBe(handed[0]?.keys);
      expect(scripted[0]?.args).toBe(handed[0]?.args);
    });
  });
});
