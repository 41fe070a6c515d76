/**
 * A run's decisions go one retention after its end (round 48 `decisions-end`), as its record does.
 * Round 47 (`decision-life`) kept the hash for the last request's wait plus one retention and left
 * the end alone, so a run answered early and ended soon kept its decisions up to a decision's wait
 * past its record (8 days against 7 with the defaults). Now every end that writes a final status
 * sets the hash's expiry to the retention (includes/transition.lua): the one-server end with and
 * without the runner's lease (finish-run-14, finish-run-release-19, whose text the fused ends
 * share: the runner's end-start-baked.test.ts), pushed or not, and the Cluster's transition-4. A
 * move to Waiting (a decision's stop; a decision round's job ending) leaves it, and so does an end
 * refused because the run already ended. Expiries are read as Redis's instants (PEXPIRETIME,
 * TIME) and compared with what set them. Real redis-server. Fails on f63d2625: the end leaves the
 * request's wait plus retention (the first three tests).
 */
import { runFixture } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { completedEnd as end } from '../test/run-ends.ts';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createDecisionStore } from './decision-store.ts';
import { journalKeys } from './keys.ts';
import type { LeaseTerms, RunLease } from './lease-scripts.ts';
import { createRunStore } from './run-store.ts';
import { createRunTransitions } from './run-transitions.ts';

const sealer = createTestSealer();
/** The retention, seconds, and a decision's wait, ms (the defaults' shape: the wait a day, far past nothing). */
const RETENTION = 3600;
const WAIT = 86_400_000;
const decisionsOf = journalKeys().decisions;
const recordOf = (id: string) => `islet:run:{${id}}`;

describe("a run's decisions at its end", () => {
  const r = useSuiteRedis();
  const runs = () => createRunStore(r.a, sealer, { retentionSeconds: RETENTION });
  const decisions = () =>
    createDecisionStore({ redis: r.a, sealer, expireAfterMs: WAIT, ttlSeconds: RETENTION });
  const expiresAt = (key: string) => r.a.call('PEXPIRETIME', key) as Promise<number>;
  const redisNow = async () => {
    const [s, us] = (await r.a.time()) as [number | string, number | string];
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };

  /** A run created, a decision asked on its call `index` and answered: the hash's expiry as the request set it. */
  async function askedAndAnswered(id: string, index = 0) {
    const run = runFixture(id, { tenant: 't1' });
    await runs().create(run);
    await decisions().request({
      tenant: 't1',
      mode: 'read-only',
      runId: id,
      index,
      toolCallId: 'tc',
      code: 'return 1',
      approval: 'stop',
      ...(index === -1
        ? { escalation: { mode: 'workspace-write', justification: 'needs it' } }
        : { call: { connectionId: 'bank', tool: 'pay', arguments: { cents: 1 } } }),
    });
    expect((await decisions().answer('t1', id, index, { allow: true, by: 'key-1' })).ok).toBe(true);
    const asked = await expiresAt(decisionsOf(id));
    // The request's: the wait plus one retention (an answer never shortens it).
    expect(asked).toBeGreaterThanOrEqual((await redisNow()) + WAIT);
    return { run, asked };
  }

  /** After an end begun at `from`: the hash goes one retention from the end, at or before the record. */
  async function expectRetentionFromEnd(id: string, from: number) {
    const [decisionsAt, recordAt] = await Promise.all([expiresAt(decisionsOf(id)), expiresAt(recordOf(id))]);
    expect(decisionsAt).toBeGreaterThanOrEqual(from + RETENTION * 1000);
    expect(decisionsAt).toBeLessThanOrEqual(recordAt);
    expect(await r.a.pttl(decisionsOf(id))).toBeLessThanOrEqual(RETENTION * 1000);
    // Still there: the end expires, it does not delete.
    expect(await r.a.hexists(decisionsOf(id), '0')).toBe(1);
  }

  it('the one-server end (finish-run-14), pushed or not, sets one retention from the end', async () => {
    for (const pushEnd of [false, true]) {
      const id = `one-${pushEnd}`;
      const { run } = await askedAndAnswered(id);
      const from = await redisNow();
      expect(await runs().finish({ ...run, pushEnd }, end)).toBe(true);
      await expectRetentionFromEnd(id, from);
    }
  });

  it("the end with the runner's lease (finish-run-release-19) and a wider-access run that sent no call", async () => {
    const id = 'leased';
    const { run } = await askedAndAnswered(id);
    const terms: LeaseTerms = {
      mode: 'read-only',
      tenant: 't1',
      jobId: id,
      share: 0.5,
      cap: 0,
      leaseMs: 30_000,
    };
    let released = false;
    const lease: RunLease = {
      ...terms,
      acquired: () => undefined,
      held: () => true,
      released: () => {
        released = true;
      },
    };
    const from = await redisNow();
    expect(await runs().finish({ ...run, lease }, end)).toBe(true);
    expect(released).toBe(true);
    await expectRetentionFromEnd(id, from);
    // Wider access asks before anything runs (index -1); its one attempt may send no call, so the
    // end neither reads nor expires a journal (`sentNoCall`), but it does expire the decisions.
    const wide = 'wide';
    const asked = await askedAndAnswered(wide, -1);
    await r.a.hset(recordOf(wide), 'attempts', '1');
    const wideFrom = await redisNow();
    expect(await runs().finish({ ...asked.run, pushEnd: true }, { ...end, sentNoCall: true })).toBe(true);
    const [decisionsAt, recordAt] = await Promise.all([
      expiresAt(decisionsOf(wide)),
      expiresAt(recordOf(wide)),
    ]);
    expect(decisionsAt).toBeGreaterThanOrEqual(wideFrom + RETENTION * 1000);
    expect(decisionsAt).toBeLessThanOrEqual(recordAt);
    expect(await r.a.exists(journalKeys().journal(wide))).toBe(0);
  });

  it("the Cluster's end (transition-4) sets it; a move to Waiting or Running leaves the request's", async () => {
    const id = 'cluster';
    const { run, asked } = await askedAndAnswered(id);
    const { transition, setStatus } = createRunTransitions(r.a, {
      maxEvents: '1000',
      retention: String(RETENTION),
      seal: (v) => sealer.seal(JSON.stringify(v)),
    });
    // A decision's stop and its round's job ending move the run to Waiting, its replay to Running:
    // no end, the hash keeps the request's expiry.
    expect(await setStatus(run, 'Waiting')).toBe(true);
    expect(await setStatus(run, 'Running')).toBe(true);
    expect(await expiresAt(decisionsOf(id))).toBe(asked);
    const from = await redisNow();
    expect(await transition(run, { status: 'Failed' }, { type: 'end', data: { status: 'Failed' } })).toBe(
      true,
    );
    await expectRetentionFromEnd(id, from);
  });

  it('an end refused (the run already ended) leaves the expiry the first end set', async () => {
    const id = 'twice';
    const { run } = await askedAndAnswered(id);
    expect(await runs().finish(run, end)).toBe(true);
    const first = await expiresAt(decisionsOf(id));
    // Another expiry in between (as a settle after the end would set): the refused end keeps it.
    await r.a.pexpire(decisionsOf(id), RETENTION * 2000);
    const kept = await expiresAt(decisionsOf(id));
    expect(kept).toBeGreaterThan(first);
    expect(await runs().finish(run, { ...end, status: 'Failed' as const })).toBe(false);
    expect(await expiresAt(decisionsOf(id))).toBe(kept);
  });

  it('a run with no decision: the end creates no hash', async () => {
    const id = 'none';
    const run = runFixture(id, { tenant: 't1' });
    await runs().create(run);
    expect(await runs().finish(run, end)).toBe(true);
    expect(await r.a.exists(decisionsOf(id))).toBe(0);
  });
});
