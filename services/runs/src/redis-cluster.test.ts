/**
 * The run package's stores on Redis Cluster: the run store (records, events, in-flight and session
 * indexes, admission, skills), decisions (run slot + tenant index + global expiry index
 * + the queue's paused set), run policies and the call journal, through a Cluster client on a real
 * six-node cluster and through a plain client on a slot-checking node (cross-slot work fails there
 * with CROSSSLOT). Also the decisions' recovery path: an index entry lost between the run-slot
 * script and the index writes is restored when the run asks again.
 */

import { createRedis, keys, type Redis } from '@islet/core';
import type { BindingOutcome } from '@islet/protocol';
import { pausedRunsKey } from '@islet/protocol';
import { runFixture, startRedisCluster, startSlotCheckingRedis } from '@islet/testkit';
import { onRedisClients } from '@islet/testkit/redis-clients';
import { describe, expect, it } from 'vitest';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';
import { createDecisionStore } from './decision-store.ts';
import { journalKeys } from './keys.ts';
import { createRunIndex, foldPendingEnds } from './run-index.ts';
import { FOLD_AT } from './run-index-scripts.ts';
import { usageDay } from './run-index-writes.ts';
import { createRunPolicyStore } from './run-policy-store.ts';
import { createRunStore, type StoredRun } from './run-store.ts';
import { createStreamListenersStore } from './stream-listeners-store.ts';

const sealer = createTestSealer();
let seq = 0;
const result = (value: unknown): BindingOutcome => ({ type: 'result', valueJson: JSON.stringify(value) });

async function exerciseJournalStores(redis: Redis, prefix: string): Promise<void> {
  const k = journalKeys(prefix);
  const tenant = `t-${seq++}`;
  const run = `run-${Date.now()}-${seq++}`;
  const decisions = createDecisionStore({ redis, sealer, keyPrefix: prefix });
  const ask = (runId: string, index: number) => ({
    tenant,
    mode: 'read-only' as const,
    runId,
    index,
    toolCallId: 'call-1',
    code: 'await apps.mail.send_email({})',
    approval: 'stop' as const,
    call: { connectionId: 'conn-1', tool: 'send_email', arguments: {} },
  });
  expect((await decisions.request(ask(run, 1))).created).toBe(true);
  expect((await decisions.request(ask(run, 2))).created).toBe(true);
  expect(await decisions.countPending(tenant)).toBe(2);
  expect(await redis.zscore(pausedRunsKey('read-only'), run)).not.toBeNull();
  expect((await decisions.listPending(tenant)).map((d) => d.index)).toEqual([1, 2]);
  // A waiter on a duplicated connection (BLPOP on the run's slot) wakes on the answer.
  const waiting = decisions.waitForAnswer(run, 1, { timeoutMs: 10_000 });
  const answered = await decisions.answer(tenant, run, 1, { allow: true, by: 'ann' });
  expect(answered).toMatchObject({ ok: true, stillPending: 1 });
  expect((await waiting)?.state).toBe('allowed');
  expect(await decisions.countPending(tenant)).toBe(1);

  // Recovery: the script recorded decision 2 but the index writes were lost (a crash): asking
  // again (the run's next execution) puts them back, and expiry then finds it.
  await redis.zrem(k.tenantDecisions(tenant), `${run}\n2`);
  await redis.zrem(k.decisionsDue(), `${run}\n2`);
  expect(await decisions.countPending(tenant)).toBe(0);
  expect((await decisions.request(ask(run, 2))).created).toBe(false);
  expect(await decisions.countPending(tenant)).toBe(1);
  expect(await redis.zscore(k.decisionsDue(), `${run}\n2`)).not.toBeNull();
  expect(await decisions.closeRun(run)).toBe(1);
  expect(await decisions.countPending(tenant)).toBe(0);
  await decisions.unmarkPaused(run, 'read-only');

  const expiring = createDecisionStore({ redis, sealer, keyPrefix: prefix, expireAfterMs: 1 });
  const late = `run-late-${seq++}`;
  await expiring.request(ask(late, 0));
  await new Promise((r) => setTimeout(r, 5));
  expect((await expiring.expireDue()).map((d) => d.runId)).toContain(late);

  const policies = createRunPolicyStore(redis, prefix);
  await policies.set(tenant, { style: 'code-mode', fourEyes: true });
  expect(await policies.effective(tenant)).toMatchObject({ style: 'code-mode', fourEyes: true });
  expect(await redis.exists(k.runPolicy(tenant))).toBe(1);

  const journal = createCallJournal({ redis, sealer, keyPrefix: prefix });
  // The record and the journal share the run's slot: one script reads and counts both.
  await redis.hset(`${prefix}run:{${run}}`, { id: run, status: 'Running' });
  expect((await journal.beginAttempt(run, `${prefix}run:{${run}}`)).attempt).toBe(1);
  // A first start writes no journal (the record counts it); the second numbers past the record.
  expect((await journal.beginAttempt(run, `${prefix}run:{${run}}`)).attempt).toBe(2);
  expect((await journal.claim(run, 2, { index: 0, binding: 'notes.read', argsJson: '{}' })).kind).toBe('new');
  await journal.markSent(run, 0);
  expect(await journal.complete(run, 0, result('x'))).toEqual({ deliverySeq: 1, stored: true });
  expect(await journal.claim(run, 3, { index: 0, binding: 'notes.read', argsJson: '{}' })).toEqual({
    kind: 'done',
    outcome: result('x'),
    deliverySeq: 1,
  });
}

function newRun(tenant: string, session = 's1', createdAt = Date.now()): StoredRun {
  const id = `run-${process.pid}-${Date.now()}-${seq++}`;
  return runFixture(id, { tenant, session, createdAt });
}

/** Every operation of the run store; each asserts what it did. */
async function exerciseRunStore(redis: Redis, subscriber: Redis): Promise<void> {
  const tenant = `t-${seq++}`;
  const runs = createRunStore(redis, sealer, { retentionSeconds: 60 });
  const heard: string[] = [];
  subscriber.on('message', (_channel: string, message: string) => heard.push(message));
  await subscriber.subscribe('islet:session-runs');
  const a = newRun(tenant);
  const b = newRun(tenant);
  await runs.create(a);
  // Admission (session owner, quota, in-flight add) is one tenant-slot script.
  const admission = { maxInFlight: 2, sessionTtlSeconds: 60 };
  expect(await runs.create({ ...b, principal: 'bob' }, admission)).toBe('created');
  expect(await runs.create({ ...newRun(tenant), principal: 'eve' }, admission)).toBe('session-taken');
  expect(await runs.create({ ...newRun(tenant), principal: 'bob' }, admission)).toBe('over-quota');
  expect(await runs.inFlightCount(tenant)).toBe(2);
  // `then` (the gateway's enqueue) runs after the record is stored: on one server it is sent right
  // behind the record's write, unawaited, and still finds the record; a refused run never gets it.
  const followed = { ...newRun(tenant), session: 's-followed' };
  let seen: string | null | undefined;
  const roomy = { maxInFlight: 10, sessionTtlSeconds: 60 };
  expect(
    await runs.create({ ...followed, principal: 'bob' }, roomy, async () => {
      seen = await redis.hget(keys.run(followed.id), 'id');
    }),
  ).toBe('created');
  expect(seen).toBe(followed.id);
  let called = false;
  const refused = { maxInFlight: 1, sessionTtlSeconds: 60 };
  expect(
    await runs.create({ ...newRun(tenant), session: 's-followed', principal: 'bob' }, refused, async () => {
      called = true;
    }),
  ).toBe('over-quota');
  expect(called).toBe(false);
  // The storage share is read in the same tenant-slot script (its counters share the slot).
  await redis.set(keys.storedBytes(tenant, Math.floor(Date.now() / 1000 / 8)), '5');
  const full: { limitBytes: number; usedBytes?: number } = { limitBytes: 5 };
  expect(
    await runs.create(
      { ...newRun(tenant), session: 's-followed', principal: 'bob' },
      { ...roomy, storage: full },
    ),
  ).toBe('over-storage');
  expect(full.usedBytes).toBe(5);
  await runs.finish(followed, {
    status: 'Completed',
    result: { _tag: 'Completed', value: 1, logs: [] },
    text: '1',
  });
  expect(await runs.inFlightCount(tenant)).toBe(2);
  expect((await runs.listSession(tenant, 's1', undefined, 10)).ids.sort()).toEqual([a.id, b.id].sort());
  expect(await runs.setStatus(a, 'Waiting', { why: 'x' })).toBe(true);
  await runs.appendEvent(a.id, 'log', { line: 'hello' });
  await runs.requestCancel(a.id);
  expect((await runs.get(a.id))?.cancelRequested).toBe(true);
  // Skills share the quota with runs in one tenant-slot script: 2 runs + 1 skill = 3 = the limit.
  expect(await runs.reserveSkill(tenant, 'skill-1', 60_000, 3)).toBe(true);
  expect(await runs.reserveSkill(tenant, 'skill-2', 60_000, 3)).toBe(false);
  expect(await runs.inFlightCount(tenant)).toBe(3);
  await runs.releaseSkill(tenant, 'skill-1');
  const end = {
    status: 'Completed' as const,
    result: { _tag: 'Completed' as const, value: 1, logs: [] },
    text: '1',
  };
  expect(await runs.finish(a, end)).toBe(true);
  expect(await runs.finish(a, { ...end, status: 'Cancelled' })).toBe(false);
  expect(await runs.inFlightCount(tenant)).toBe(1);
  expect((await runs.readEvents(a.id)).map((e) => e.type)).toEqual(['status', 'status', 'log', 'end']);
  expect(await redis.ttl(keys.run(a.id))).toBeGreaterThan(0);
  expect(await runs.finish(b, { ...end, status: 'Failed' })).toBe(true);
  expect(await runs.inFlightCount(tenant)).toBe(0);
  // The index's readers fold the tenant's pending creates and ends first (one tenant-slot script;
  // the usage and health keys the entries name share the slot).
  const index = createRunIndex(redis, sealer);
  const today = usageDay(Date.now());
  expect((await index.usage(tenant, today, today))[0]?.runs).toEqual({ Completed: 2, Failed: 1 });
  expect((await index.listRuns(tenant, { limit: 10, statuses: ['Failed'] })).items.map((s) => s.id)).toEqual([
    b.id,
  ]);
  expect(await foldPendingEnds(redis, tenant)).toBe(0);
  // The end that fills the pending list is answered with its fold due (finish-tenant-9's 2), and
  // the run store sends the fold after it, a tenant-slot script of its own.
  for (let i = 0; i < FOLD_AT / 2; i++) {
    const r = { ...newRun(tenant), session: 's-many' };
    await runs.create(r);
    await runs.finish(r, end);
  }
  await expect.poll(() => redis.llen(keys.indexPending(tenant))).toBe(0);
  expect(await redis.hget(keys.indexSessionStats(tenant), 's-many\nCompleted')).toBe(String(FOLD_AT / 2));
  // The session stream's wake-up came through the subscriber (pub/sub on the same client kind).
  await expect.poll(() => heard.filter((m) => m === keys.sessionRuns(tenant, 's1')).length).toBe(2);
  // An admitted create announces the tenant's feed only while a stream's marker is set: the
  // admission reads it in its MGET, by a name derived from a declared key (the tenant's slot).
  const quiet = `t-${seq++}`;
  await subscriber.subscribe('islet:tenant-feed');
  expect(await runs.create({ ...newRun(quiet), principal: 'bob' }, roomy)).toBe('created');
  await createStreamListenersStore(redis).markFeed(quiet);
  expect(await runs.create({ ...newRun(quiet), principal: 'bob' }, roomy)).toBe('created');
  // A barrier published from the tenant's node behind them: all before it has arrived.
  await redis.eval("return redis.call('PUBLISH', 'islet:tenant-feed', 'barrier')", 1, keys.tenantFeed(quiet));
  await expect.poll(() => heard.includes('barrier')).toBe(true);
  expect(heard.filter((m) => m === quiet).length).toBe(1);
  await subscriber.unsubscribe('islet:session-runs', 'islet:tenant-feed');
}

describe('journal stores on a slot-checking node', () => {
  const node = onRedisClients(startSlotCheckingRedis, (n) => createRedis(n.url));

  it('the run store: every operation stays in one slot', async () => {
    await exerciseRunStore(node.redis, node.subscriber);
  });

  it('decisions, run policies and the call journal stay in one slot per command (default and custom prefix)', async () => {
    await exerciseJournalStores(node.redis, 'islet:');
    await exerciseJournalStores(node.redis, 'other:');
  });
});

describe('journal stores on a real Redis Cluster', () => {
  const rc = onRedisClients(
    () => startRedisCluster(),
    (c) => createRedis({ ISLET_REDIS_MODE: 'cluster', ISLET_REDIS_URL: c.seeds }),
  );

  it('the run store works across the masters', async () => {
    await exerciseRunStore(rc.redis, rc.subscriber);
  });

  it('decisions, run policies and the call journal work through the Cluster client', async () => {
    await exerciseJournalStores(rc.redis, 'islet:');
    // A run's decisions and journal share its slot; its tenant's index lives elsewhere by design.
    const k = journalKeys();
    expect(await rc.server.masterOf(k.decisions('r1'))).toBe(await rc.server.masterOf(k.journal('r1')));
  });
});
