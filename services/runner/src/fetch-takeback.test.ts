/**
 * The take-back a worker owes after a pop that brought no hand-off, sent with its fused fetch
 * (round 49 `fetch-takeback`: `@islet/runs` FETCH_TAKE_BACK before the fused fetch's text, taken by
 * fetch-start-store.ts `startingClient`'s `takeBack`). Real redis-server, BullMQ, run store: a
 * registration still standing is removed and the fetch fetches; a job handed to the worker in
 * between is that fetch's answer, under the fetch's token, nothing else fetched; whoever removes the
 * answer owns the job (the gateway's reclaim first: the fetch gets the job back from the wait list,
 * once); an answer whose lock is not its token any more is dropped; another worker's fetch never
 * takes a job handed to this one.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import {
  createCallJournal,
  createRunLifecycle,
  createRunStore,
  handOffKeys,
  reclaimHandedScript,
} from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { Queue } from 'bullmq';
import { moveJobFromActiveToWait } from 'bullmq/dist/esm/scripts/moveJobFromActiveToWait-9.js';
import { version } from 'bullmq/dist/esm/version.js';
import type { Redis } from 'ioredis';
import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { handingAdds } from '../../gateway/src/handoff-add-store.ts';
import { addOn } from '../test/handing-queue.ts';
import { onQueueServer } from '../test/queue-server.ts';
import { onRunnerHarness, until, untilIdle } from '../test/runner-harness.ts';
import { type FetchTakeBack, isFetchTakeBackSha, startingClient } from './fetch-start-store.ts';
import { FETCH_KEY_NAMES } from './handoff-store.ts';

const mode = 'read-only';
const { redis, queue } = await onQueueServer('fetch-takeback-test');

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const terms = { mode, share: 0.5, cap: 0, leaseMs: 30_000 };
const own = () => handOffKeys(queue.toKey(''), 'w1');
const owed = (): FetchTakeBack => {
  const k = own();
  return { keys: [k.idle, k.idleArgs, k.handOff], workerId: 'w1' };
};
const RECLAIM = reclaimHandedScript(moveJobFromActiveToWait.content);
/** The gateway's reclaim of the job handed under `token` (handoff-reclaim-store.ts's keys). */
const reclaim = (token: string) => {
  const k = queue.keys;
  const keys = [k.active, k.wait, k.stalled, k.paused, k.meta, k.limiter, k.prioritized, k.marker, k.events];
  return RECLAIM.run(redis, [own().handOff, ...keys].map(String), [token, queue.toKey('')]);
};

/** The runner's fused fetch under `token`, carrying the take-back `takeBack` gives (none: the plain one). */
async function fetchAs(token: string, takeBack?: () => FetchTakeBack | undefined): Promise<unknown[]> {
  const life = createRunLifecycle({
    runs: createRunStore(redis, sealer),
    journal: createCallJournal({ redis, sealer }),
  });
  const fetchKeys = FETCH_KEY_NAMES.map((k) => queue.keys[k] ?? '');
  const bull = [queue.toKey(''), Date.now(), pack({ token, lockDuration: 30_000, name: 'vm' })];
  const client = startingClient(
    redis as never,
    () => life.fetchedStart(terms),
    () => undefined,
    () => undefined,
    { deferMs: 60_000 },
    takeBack,
  );
  return (await client.runCommand(`moveToActive:${version}`, [...fetchKeys, ...bull])) as unknown[];
}

/** Fresh state: a slot in the pool, runs `ids` created and queued in that order. */
async function queued(...ids: string[]) {
  await redis.flushall();
  await redis.hset(keys.poolSlots(mode), 'r1', `100:${Date.now() + 3_600_000}`);
  for (const id of ids) {
    await createRunStore(redis, sealer).create(runFixture(id, { mode }));
    await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: Date.now() }, { jobId: id });
  }
}

/**
 * What a submit's hand-off leaves for `w1` (handoff-scripts.ts): its registration removed, the job
 * fetched for it under the registration's token, the fetch's answer on its hand-off key.
 */
async function handedTo(token: string): Promise<unknown[]> {
  const answer = await fetchAs(token);
  await redis.zadd(own().handOff, 0, pack([token, answer]));
  return answer;
}

describe("the take-back sent with the worker's fetch", () => {
  it('a registration still standing: removed (with its terms) in the fetch, which fetches as it would', async () => {
    await queued('s1');
    const k = own();
    await redis.zadd(k.idle, Date.now() + 60_000, 'w1');
    await redis.hset(k.idleArgs, 'w1', '{}');
    let asked = 0;
    const reply = await fetchAs('w1:f1', () => {
      asked++;
      return owed();
    });
    // Asked once, as the fetch went: the take-back in that call, none of its own.
    expect(asked).toBe(1);
    expect(reply[1]).toBe('s1');
    expect(Array.isArray(reply[4])).toBe(true);
    expect(await redis.exists(k.idle, k.idleArgs, k.handOff)).toBe(0);
    expect(await redis.get(`${queue.toKey('')}s1:lock`)).toBe('w1:f1');
  });

  it('a job handed to the worker after its pop: the fetch takes it under its own token and fetches nothing else', async () => {
    await queued('h1', 'n1');
    const handed = await handedTo('w1:h:0');
    expect(handed[1]).toBe('h1');
    const reply = await fetchAs('w1:f2', owed);
    // The submit's answer, as it made it: its job, its run's start, what it saw behind it.
    expect(reply).toEqual(handed);
    expect(await redis.get(`${queue.toKey('')}h1:lock`)).toBe('w1:f2');
    expect(await redis.exists(own().handOff)).toBe(0);
    // The job behind it still waits, its run not started: this call fetched nothing of its own.
    expect(await queue.getJobState('n1')).toBe('waiting');
    expect(await redis.hget(keys.run('n1'), 'attempts')).not.toBe('1');
    expect(await redis.hget(keys.run('h1'), 'attempts')).toBe('1');
    // Owed no more: the next fetch is the plain one and takes n1.
    const next = await fetchAs('w1:f3', () => undefined);
    expect(next[1]).toBe('n1');
  });

  it("the gateway's reclaim first: the fetch finds no answer and gets the job back from the wait list, once", async () => {
    await queued('g1');
    await handedTo('w1:h:1');
    const back = (await reclaim('w1:h:1')) as unknown[];
    expect(back[0]).toBe(1);
    const reply = await fetchAs('w1:f4', owed);
    expect(reply[1]).toBe('g1');
    expect(await redis.get(`${queue.toKey('')}g1:lock`)).toBe('w1:f4');
    expect(await redis.lrange(queue.keys.active ?? '', 0, -1)).toEqual(['g1']);
    // And the reverse: the fetch took it first, the reclaim finds nothing.
    await queued('g2');
    await handedTo('w1:h:2');
    expect((await fetchAs('w1:f5', owed))[1]).toBe('g2');
    expect(await reclaim('w1:h:2')).toBe(0);
    expect(await redis.get(`${queue.toKey('')}g2:lock`)).toBe('w1:f5');
  });

  it("an answer whose lock is not its token any more is dropped; the fetch goes on to the queue's next job", async () => {
    await queued('x1', 'x2');
    await handedTo('w1:h:3');
    // The job given back meanwhile and taken by another worker: its lock is that one's.
    await redis.set(`${queue.toKey('')}x1:lock`, 'w9:other', 'PX', 30_000);
    const reply = await fetchAs('w1:f6', owed);
    expect(reply[1]).toBe('x2');
    expect(await redis.exists(own().handOff)).toBe(0);
    expect(await redis.get(`${queue.toKey('')}x1:lock`)).toBe('w9:other');
  });

  it("another worker's fetch never takes a job handed to this one; this one's take-back does", async () => {
    await queued('t1', 't2');
    const handed = await handedTo('w1:h:4');
    // w2 woken too: its own take-back (its registration gone with nothing handed) and fetch take t2.
    const w2 = handOffKeys(queue.toKey(''), 'w2');
    const other = await fetchAs('w2:f1', () => ({
      keys: [w2.idle, w2.idleArgs, w2.handOff],
      workerId: 'w2',
    }));
    expect(other[1]).toBe('t2');
    expect(await redis.zcard(own().handOff)).toBe(1);
    expect(await fetchAs('w1:f7', owed)).toEqual(handed);
    expect(await redis.get(`${queue.toKey('')}t1:lock`)).toBe('w1:f7');
  });
});

it("the take-back's fetch is told from the plain one's script", () => {
  expect(isFetchTakeBackSha('0'.repeat(40))).toBe(false);
});

describe('a worker woken by the marker while registered', () => {
  let hr: Redis;
  const h = onRunnerHarness('fetch-takeback-test', (up) => {
    ({ redis: hr } = up);
  });
  type Counted = { handOffWait: { takeBacks: number; fusedTakeBacks: number; owed: boolean } };

  it('sends no take-back of its own; its fetch carries it; a job handed in between runs once', async () => {
    const t = await h.setUp('fused', true, undefined, { handOff: true });
    // One connection for both adds: the plain one's marker wakes the worker first (Redis serves a
    // blocked client after each command), then the handing one finds its registration standing.
    const conn = hr.duplicate();
    const plain = new Queue(runQueueName(mode), { connection: conn, prefix: QUEUE_PREFIX });
    const handing = new Queue(runQueueName(mode), { connection: conn, prefix: QUEUE_PREFIX });
    handingAdds(handing, mode, { reclaimMs: 0 });
    try {
      await h.warmUp(t, 'fw');
      await untilIdle(hr, t);
      const wait = (t.worker() as unknown as Counted).handOffWait;
      const before = { takeBacks: wait.takeBacks, fused: wait.fusedTakeBacks };
      await h.newRun('m1');
      await addOn(plain, 'm1');
      await until('m1 to complete', async () => (await hr.hget(keys.run('m1'), 'status')) === 'Completed');
      expect(wait.fusedTakeBacks).toBeGreaterThan(before.fused);
      expect(wait.takeBacks).toBe(before.takeBacks);
      await untilIdle(hr, t);
      await h.newRun('m2');
      await h.newRun('m3');
      await Promise.all([addOn(plain, 'm2'), addOn(handing, 'm3')]);
      for (const id of ['m2', 'm3'])
        await until(`${id} to complete`, async () => (await hr.hget(keys.run(id), 'status')) === 'Completed');
      for (const id of ['m1', 'm2', 'm3']) expect(await hr.hget(keys.run(id), 'attempts')).toBe('1');
      expect(wait.takeBacks).toBe(before.takeBacks);
      expect(wait.owed).toBe(false);
      await untilIdle(hr, t);
      expect(
        await hr.exists(handOffKeys(`${QUEUE_PREFIX}:${runQueueName(mode)}:`, t.worker().id).handOff),
      ).toBe(0);
    } finally {
      await plain.close();
      await handing.close();
      conn.disconnect();
      await t.close();
    }
  });
});
