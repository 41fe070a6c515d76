/**
 * A run's decisions live as long as the run needs them (round 47 `decision-life`). The decisions
 * hash used to get one retention from each write (the request, every settle), so with a retention
 * below a decision's wait a pending decision vanished before it was answered (gateway
 * decision-life.test.ts: the answer a 404, a held call Cancelled), and an answered one before a
 * long run's end. Now nothing depends on the run's end (6b60376a's ends do not touch the hash): the
 * request keeps it for the decision's wait plus one retention (lua/request-decision-1.lua, the
 * argument decision-store.ts sends); an answer never shortens that and lengthens one with less
 * than a retention left (lua/settle-decision-2.lua); an expiry, which ends the run, keeps it one
 * retention from then. Expiries are read as Redis's instants (PEXPIRETIME, TIME) and compared with
 * each other and with what set them, not with a clock bound. Real redis-server; 6b60376a's scripts
 * from git beside this release's. All 5 fail on 6b60376a's decision-store.ts and scripts.
 */
import { describe, expect, it } from 'vitest';
import { previousScript } from '../test/previous-runs.ts';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createDecisionStore } from './decision-store.ts';
import { journalKeys } from './keys.ts';

const PREVIOUS = '6b60376a';
const PREV_REQUEST = previousScript(PREVIOUS, 'lua/request-decision-1.lua');
const PREV_SETTLE = previousScript(PREVIOUS, 'lua/settle-decision-2.lua');
/** The retention, seconds: a sleep outlives it. */
const RETENTION = 1;
/** A decision's wait, ms: far longer than the retention. */
const WAIT = 60_000;
const sealer = createTestSealer();
const k = journalKeys();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a run's decisions", () => {
  const r = useSuiteRedis();
  let clock = Date.now();
  const store = () =>
    createDecisionStore({
      redis: r.a,
      sealer,
      expireAfterMs: WAIT,
      ttlSeconds: RETENTION,
      now: () => clock,
    });
  const expiresAt = (key: string) => r.a.call('PEXPIRETIME', key) as Promise<number>;
  const redisNow = async () => {
    const [s, us] = (await r.a.time()) as [number | string, number | string];
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  const ask = (runId: string, index = 0) =>
    store().request({
      tenant: 't1',
      mode: 'read-only',
      runId,
      index,
      toolCallId: 'tc',
      code: 'return 1',
      approval: 'hold',
      call: { connectionId: 'bank', tool: 'pay', arguments: { cents: 1 } },
    });
  const allow = (runId: string, index = 0) =>
    store().answer('t1', runId, index, { allow: true, by: 'key-1' });

  it('a pending decision is kept for its wait plus one retention: it outlives the retention and is answered', async () => {
    clock = Date.now();
    const { decision } = await ask('pending-past-retention');
    const at = await expiresAt(k.decisions('pending-past-retention'));
    expect(at).toBeGreaterThanOrEqual(decision.request.expiresAt + RETENTION * 1000);
    await sleep(RETENTION * 1000 + 500);
    expect((await store().listRun('pending-past-retention')).map((d) => d.state)).toEqual(['pending']);
    expect(await allow('pending-past-retention')).toMatchObject({ ok: true, stillPending: 0 });
  });

  it("an answer keeps the request's expiry: a run living past a retention after it still reads its answer", async () => {
    clock = Date.now();
    await ask('answered-then-long');
    const key = k.decisions('answered-then-long');
    const requested = await expiresAt(key);
    expect((await allow('answered-then-long')).ok).toBe(true);
    expect(await expiresAt(key)).toBe(requested);
    await sleep(RETENTION * 1000 + 500);
    // A stopped run's replay (or the run's page) after the retention: the answer is there.
    expect((await store().get('answered-then-long', 0))?.state).toBe('allowed');
  });

  it('a later decision of the same run moves the expiry on by its own wait', async () => {
    clock = Date.now();
    await ask('two-decisions', 0);
    await allow('two-decisions', 0);
    const firstAt = await expiresAt(k.decisions('two-decisions'));
    await sleep(RETENTION * 1000 + 100);
    clock = Date.now();
    const second = await ask('two-decisions', 4);
    const at = await expiresAt(k.decisions('two-decisions'));
    expect(at).toBeGreaterThanOrEqual(second.decision.request.expiresAt + RETENTION * 1000);
    expect(at).toBeGreaterThan(firstAt);
    expect((await store().listRun('two-decisions')).map((d) => d.state)).toEqual(['allowed', 'pending']);
  });

  it('an expiry ends the run: its decisions and the wake-up list are kept one retention from it, then gone', async () => {
    clock = Date.now();
    await ask('expires');
    const key = k.decisions('expires');
    const requested = await expiresAt(key);
    clock += WAIT + 1;
    const before = await redisNow();
    const expired = await store().expireDue();
    const after = await redisNow();
    // (The due index is every run's: the earlier tests' still pending ones are past due too.)
    expect(expired.filter((d) => d.runId === 'expires').map((d) => d.state)).toEqual(['expired']);
    const [hashAt, wakeAt] = await Promise.all([expiresAt(key), expiresAt(k.decisionAnswered('expires', 0))]);
    // One retention from the settle (EXPIRE's whole seconds from Redis's clock inside the script).
    for (const at of [hashAt, wakeAt]) {
      expect(at).toBeGreaterThanOrEqual(before + RETENTION * 1000);
      expect(at).toBeLessThanOrEqual(after + RETENTION * 1000);
    }
    expect(hashAt).toBeLessThan(requested);
    await sleep(RETENTION * 1000 + 500);
    expect(await r.a.exists(key, k.decisionAnswered('expires', 0))).toBe(0);
  });

  it(`beside ${PREVIOUS}: its request's one retention is lengthened by an answer here; its answer after a request here shortens to one retention`, async () => {
    clock = Date.now();
    // Requested by a 6b60376a process (its arguments: the retention alone), answered here.
    const stored = JSON.stringify({
      tenant: 't1',
      mode: 'read-only',
      state: 'pending',
      req: sealer.seal('{}'),
    });
    const oldKey = k.decisions('asked-on-previous');
    await PREV_REQUEST.run(r.a, [oldKey], ['0', stored, RETENTION]);
    const before = await redisNow();
    const settled = (await store().answer('t1', 'asked-on-previous', 0, { allow: true, by: 'k' })) as {
      ok: boolean;
    };
    expect(settled.ok).toBe(true);
    expect(await expiresAt(oldKey)).toBeGreaterThanOrEqual(before + RETENTION * 1000);
    // Requested here, answered by a 6b60376a process: its settle sets one retention from the
    // answer (its own behaviour during the roll), never no expiry.
    await ask('asked-here');
    const hereKey = k.decisions('asked-here');
    const requested = await expiresAt(hereKey);
    const reply = (await PREV_SETTLE.run(
      r.a,
      [hereKey, k.decisionAnswered('asked-here', 0)],
      ['0', 't1', 'allowed', '', RETENTION],
    )) as [string];
    expect(reply[0]).toBe('ok');
    const answeredAt = await expiresAt(hereKey);
    expect(answeredAt).toBeGreaterThan(0);
    expect(answeredAt).toBeLessThan(requested);
  });
});
