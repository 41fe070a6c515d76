/**
 * The admission reads the session's owner in its MGET. A create and an end announce a tenant's feed and a session's new runs only while an events
 * stream's marker says one listens (stream-listeners-store.ts), at no command of their own: the
 * markers are read in the admission's MGET, and the end learns from its record's `quiet` what its
 * create saw. Commands counted with `INFO commandstats`, on a real Redis.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createCallJournal } from './call-journal.ts';
import { createRunStore } from './run-store.ts';
import { createStreamListenersStore } from './stream-listeners-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const result = { _tag: 'Completed' as const, value: 1, logs: [] };
const end = { status: 'Completed' as const, result, text: 'ok' };

/** Calls of each command Redis ran so far (a script's own commands included). */
async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm))
    out.set(m[1]!, Number(m[2]));
  return out;
}

/** Commands run while `body` ran: per name, and in all. */
type Counted = Record<string, number> & { all: number };
async function counted(redis: Redis, body: () => Promise<unknown>): Promise<Counted> {
  const before = await commandCalls(redis);
  await body();
  const after = await commandCalls(redis);
  const out: Counted = { all: 0 };
  for (const [name, n] of after) {
    const d = n - (before.get(name) ?? 0);
    if (d > 0 && name !== 'info') {
      out[name] = d;
      out.all += d;
    }
  }
  return out;
}

/** The gateway's submit: admitted, its job sent behind the record (the one-script path). */
const admission = (storage: boolean) => ({
  maxInFlight: 100,
  sessionTtlSeconds: 60,
  ...(storage ? { storage: { limitBytes: 1e12 } } : {}),
});
const enqueue = async () => undefined;

describe('announcements only while a stream listens', () => {
  for (const storage of [true, false]) {
    it(`a create publishes nothing without a listener, its end only on its own channel (${storage ? 'with' : 'without'} a storage share)`, () =>
      withRedis(async (redis) => {
        const runs = createRunStore(redis, sealer);
        const listeners = createStreamListenersStore(redis);
        const run = (id: string) => runFixture(id, { tenant: 'tq', session: 'sq', createdAt: Date.now() });
        // Warm: the scripts loaded, the stored-bytes counter made (its expiry set once).
        await runs.create(run('w0'), admission(storage), enqueue);
        await runs.finish(run('w0'), end);
        // Nobody listens.
        const quietCreate = await counted(redis, () => runs.create(run('q1'), admission(storage), enqueue));
        const quietEnd = await counted(redis, () => runs.finish(run('q1'), end));
        expect(quietCreate.publish).toBeUndefined();
        expect(quietEnd.publish).toBe(1);
        expect(await redis.hget(keys.run('q1'), 'quiet')).toBe('1');
        // The feed holds both entries all the same (what a stream reads after subscribing).
        const feed = await redis.xrange(keys.tenantFeed('tq'), '-', '+');
        expect(feed.map(([, f]) => f[3])).toEqual(['w0', 'w0', 'q1', 'q1']);
        // A tenant stream and a session stream listen.
        await listeners.markFeed('tq');
        await listeners.markSession('tq', 'sq');
        const loudCreate = await counted(redis, () => runs.create(run('l1'), admission(storage), enqueue));
        const loudEnd = await counted(redis, () => runs.finish(run('l1'), end));
        expect(loudCreate.publish).toBe(2);
        expect(loudEnd.publish).toBe(2);
        expect(await redis.hget(keys.run('l1'), 'quiet')).toBeNull();
        // The markers cost no command: the admission's MGET reads them (its only one without a share).
        expect(quietCreate.mget).toBe(1);
        expect(loudCreate.mget).toBe(1);
        // The session's owner is read in it too: no GET of its own.
        expect(quietCreate.get).toBeUndefined();
        expect(loudCreate.all - quietCreate.all).toBe(2);
        expect(loudEnd.all - quietEnd.all).toBe(1);
        // Only the session listened to: the feed stays quiet, the session's new run is published.
        await redis.del(keys.tenantFeedListeners('tq'));
        const sessionOnly = await counted(redis, () => runs.create(run('s1'), admission(storage), enqueue));
        expect(sessionOnly.publish).toBe(1);
        expect(await redis.hget(keys.run('s1'), 'quiet')).toBe('1');
      }));
  }

  it('a stream that starts mid-run gets the run from the mark; creates without an admission announce as ever', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const listeners = createStreamListenersStore(redis);
      const run = (id: string) => runFixture(id, { tenant: 'tm', session: 'sm', createdAt: Date.now() });
      await runs.create(run('m1'), admission(true), enqueue);
      await runs.create(run('m2'), admission(true), enqueue);
      await runs.finish(run('m2'), end);
      // The runs then in flight come with the mark, in the same transaction.
      expect(await listeners.markFeed('tm')).toEqual(['m1']);
      expect(await redis.pttl(keys.tenantFeedListeners('tm'))).toBeGreaterThan(0);
      // m1 was created unannounced: its end announces on its own channel, not the feed's.
      const sub = new Redis(redis.options.port ?? 6379, redis.options.host ?? '127.0.0.1');
      try {
        const heard: string[] = [];
        sub.on('message', (channel: string, message: string) =>
          heard.push(`${channel} ${message.split(' ')[0]}`),
        );
        await sub.subscribe('islet:run-events', 'islet:tenant-feed');
        await runs.finish(run('m1'), end);
        // A create without an admission (skills' and internal paths) publishes as it did.
        await runs.create(run('m3'));
        await expect.poll(() => heard).toEqual(['islet:run-events m1', 'islet:tenant-feed tm']);
      } finally {
        sub.disconnect();
      }
    }));

  it('a quiet run keeps its mark across a Redis SIGKILL, and its end is in the feed after the restart', async () => {
    const server = await startRedis({ appendFsync: 'always' });
    const redis = new Redis(server.url);
    redis.on('error', () => undefined); // refused while the server is down; it reconnects
    try {
      const runs = createRunStore(redis, sealer);
      const listeners = createStreamListenersStore(redis);
      const run = (id: string) => runFixture(id, { tenant: 'tk', session: 'sk', createdAt: Date.now() });
      await runs.create(run('k1'), admission(true), enqueue);
      await server.kill();
      await server.restart();
      expect(await redis.hget(keys.run('k1'), 'quiet')).toBe('1');
      expect(await listeners.markFeed('tk')).toEqual(['k1']);
      await server.kill();
      await server.restart();
      // The marker came back with the AOF: a create now announces.
      const create = await counted(redis, () => runs.create(run('k2'), admission(true), enqueue));
      expect(create.publish).toBe(1);
      expect(await runs.finish(run('k1'), end)).toBe(true);
      const feed = await redis.xrange(keys.tenantFeed('tk'), '-', '+');
      expect(feed.map(([, f]) => f[3])).toEqual(['k1', 'k2', 'k1']);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});

describe("an attempt's start publishes its progress only while a stream may follow the run", () => {
  it('no marker at the create and none followed: no PUBLISH; a followed run, a watched create and a create without an admission publish', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const journal = createCallJournal({ redis, sealer });
      const listeners = createStreamListenersStore(redis);
      const run = (id: string) => runFixture(id, { tenant: 'tp', session: 'sp', createdAt: Date.now() });
      const start = (id: string) => journal.beginAttempt(id, keys.run(id), runs.attemptStartEvent(id));
      await runs.create(run('w0'), admission(true), enqueue);
      await start('w0');
      const sub = new Redis(redis.options.port ?? 6379, redis.options.host ?? '127.0.0.1');
      try {
        const heard: string[] = [];
        sub.on('message', (_channel: string, message: string) => heard.push(message));
        await sub.subscribe('islet:run-progress');
        // Nobody listened at the create, nobody follows: the start writes its event, publishes nothing.
        await runs.create(run('u1'), admission(true), enqueue);
        expect(await redis.hget(keys.run('u1'), 'unwatched')).toBe('1');
        const unwatched = await counted(redis, () => start('u1'));
        expect(unwatched.publish).toBeUndefined();
        expect((await start('u1')).attempt).toBe(2);
        const events = await runs.readEvents('u1');
        expect(events.map((e) => [e.type, e.data.attempt])).toEqual([
          ['status', undefined],
          ['status', 1],
          ['status', 2],
        ]);
        // A run's own stream marks it before it subscribes: its next start publishes.
        await listeners.followRuns(['u1', 'gone']);
        expect(await redis.exists(keys.run('gone'))).toBe(0);
        const followed = await counted(redis, () => start('u1'));
        expect(followed.publish).toBe(1);
        // A tenant stream's mark follows the runs then in flight; a session stream's marker at the
        // create leaves the run watched (its record without `unwatched`).
        await runs.create(run('u2'), admission(true), enqueue);
        expect(await listeners.markFeed('tp')).toEqual(['w0', 'u1', 'u2']);
        expect((await counted(redis, () => start('u2'))).publish).toBe(1);
        await redis.del(keys.tenantFeedListeners('tp'));
        await listeners.markSession('tp', 'sp');
        await runs.create(run('s1'), admission(true), enqueue);
        expect(await redis.hget(keys.run('s1'), 'unwatched')).toBeNull();
        expect((await counted(redis, () => start('s1'))).publish).toBe(1);
        // A create without an admission (skills', internal) did not look: its starts publish.
        await runs.create(run('i1'));
        expect((await counted(redis, () => start('i1'))).publish).toBe(1);
        await expect.poll(() => heard).toEqual(['u1 running', 'u2 running', 's1 running', 'i1 running']);
      } finally {
        sub.disconnect();
      }
    }));
});

describe("the admission's one MGET", () => {
  it("counts skills in the quota only while one's reservation may be live (their marker, set with the set's own expiry)", () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const run = (id: string) => runFixture(id, { tenant: 'ts', session: 'ss', createdAt: Date.now() });
      const quota = { ...admission(true), maxInFlight: 2 };
      await runs.create(run('w0'), quota, enqueue);
      await runs.finish(run('w0'), end);
      // No skill ever reserved: the runs alone are counted, no ZCOUNT, no GET.
      const plain = await counted(redis, () => runs.create(run('a1'), quota, enqueue));
      expect(plain.zcount).toBeUndefined();
      expect(plain.get).toBeUndefined();
      expect(plain.zcard).toBe(1);
      // A skill reserved: its marker expires with the set, and the admission counts it.
      expect(await runs.reserveSkill('ts', 'sk1', 60_000, 10)).toBe(true);
      const expiry = async (k: string) => Number(await redis.call('PEXPIRETIME', k));
      expect(await expiry(keys.skillsInFlightLive('ts'))).toBe(await expiry(keys.skillsInFlight('ts')));
      expect(await expiry(keys.skillsInFlightLive('ts'))).toBeGreaterThan(0);
      let answer = '';
      const counting = await counted(redis, async () => {
        answer = await runs.create(run('a2'), quota, enqueue);
      });
      expect(answer).toBe('over-quota');
      expect(counting.zcount).toBe(1);
      // Released: counted again (none live), so the run fits.
      await runs.releaseSkill('ts', 'sk1');
      expect(await runs.create(run('a2'), quota, enqueue)).toBe('created');
      expect(await runs.create(run('a3'), quota, enqueue)).toBe('over-quota');
    }));
});
