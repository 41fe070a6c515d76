/**
 * A run's decisions across a roll (round 47 `decision-life`), beside 6b60376a. This release's
 * request keeps a run's decisions hash for the decision's wait plus one retention (6b60376a's: one
 * retention from the request); its answer never shortens that and lengthens one with less than a
 * retention left; nothing of either release's end touches the hash. A stopped run (approval
 * `stop`) asks on one release (its runner's gateway), is answered on the other's gateway, which
 * queues it again: the other release's runner replays it, its gateway reads the answer and sends
 * the call, the run ends there. Each direction: the call delivered once, the run Completed, the
 * hash never without an expiry and gone no later than the run's record (one retention after the
 * end, as the record). Asked here: the hash outlives the decision's own expiry (fails with 6b60376a
 * as the head: its request's one retention ends before the decision's wait). Asked on 6b60376a:
 * its one retention, lengthened by the answer here to one retention from the answer. Real
 * processes, one redis-server, real BullMQ; a 60 s retention (the config's floor) and a 10 min wait.
 */
import { type createRedis, keys } from '@islet/core';
import type { Cluster } from '@islet/devstack';
import { journalKeys } from '@islet/runs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type startAppServer, until, untilEnded } from './helpers.ts';
import { connectApp, echoArguments, hasCommit, type MixedReleases, startMixed } from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_DECISION_LIFE_PREVIOUS_RELEASE ?? '6b60376a';
const present = hasCommit(PREVIOUS);
const RETENTION_S = 60;
const WAIT_MS = 600_000;
/** Both releases: the same retention and wait; a submit taken by a runner's own fetch. */
const ENV = {
  ISLET_RUN_RETENTION_SECONDS: String(RETENTION_S),
  ISLET_DECISION_EXPIRE_MS: String(WAIT_MS),
  ISLET_IDLE_HANDOFF: 'off',
};
const code = 'const r = await apps.bank.pay({ cents: 100 }); return r.structuredContent.cents';

let mixed: MixedReleases | undefined;
let head: Cluster | undefined;
let prev: Cluster | undefined;
let app: Awaited<ReturnType<typeof startAppServer>> | undefined;
let redis: ReturnType<typeof createRedis> | undefined;
let connectionId = '';
const decisionsOf = journalKeys().decisions;
const expiresAt = (key: string) => redis!.call('PEXPIRETIME', key) as Promise<number>;
const redisNow = async () => {
  const [s, us] = (await redis!.time()) as [number | string, number | string];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
};

/**
 * A run asked on `asker` (the other's runner stopped), answered on `answerer`'s gateway and
 * replayed by its runner (the asker's stopped). What the test reads of the hash and the record.
 */
async function askedThenAnswered(asker: Cluster, answerer: Cluster, label: string) {
  await answerer.killRunner(0, 'SIGKILL');
  const res = await api(asker.url, asker.devKey)('POST', '/v1/runs', {
    code,
    description: `decision life ${label}`,
    sessionId: `dl-${label}`,
    turnId: 't',
    callId: 'c',
    connections: [connectionId],
    approval: 'stop',
  });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const id = res.body.id as string;
  const key = decisionsOf(id);
  const decision = await until(
    async () => {
      const list = await api(asker.url, asker.devKey)('GET', '/v1/decisions');
      return (list.body.items as Array<{ id: string; expiresAt: number }>).find((d) => d.id === `${id}:0`);
    },
    60_000,
    50,
  );
  await until(
    async () => (await api(asker.url, asker.devKey)('GET', `/v1/code-runs/${id}`)).body.status === 'Waiting',
    30_000,
    50,
  );
  const asked = await expiresAt(key);
  await asker.killRunner(0);
  await answerer.restartRunner(0);
  const beforeAnswer = await redisNow();
  const answered = await api(answerer.url, answerer.devKey)('POST', `/v1/code-runs/${id}/decisions`, {
    index: 0,
    allow: true,
  });
  expect(answered.status, JSON.stringify(answered.body)).toBe(200);
  const afterAnswer = await expiresAt(key);
  const ended = await untilEnded(answerer.url, answerer.devKey, id);
  const [recordAt, decisionsAt] = await Promise.all([expiresAt(keys.run(id)), expiresAt(key)]);
  const delivered = app!.deliveries.filter((d) => d.idempotencyKey.includes(id)).length;
  return { id, decision, asked, beforeAnswer, afterAnswer, ended, recordAt, decisionsAt, delivered };
}

describe.skipIf(!present)(`a run's decisions across a roll, beside ${PREVIOUS}`, () => {
  beforeAll(async () => {
    mixed = await startMixed(PREVIOUS, ENV, ENV);
    head = mixed.head;
    prev = mixed.prev;
    redis = mixed.redis;
    ({ app, connectionId } = await connectApp(head, echoArguments, 'Bank', [
      { name: 'pay', inputSchema: { type: 'object' }, policy: 'ask' },
    ]));
  }, 240_000);

  afterAll(async () => {
    await app?.close();
    await mixed?.stop();
  });

  it(`asked here, answered and ended on ${PREVIOUS}: kept past the decision's own expiry while pending; its answer's one retention, gone with the record`, async () => {
    const got = await askedThenAnswered(head!, prev!, 'h2p');
    expect(got.ended.status, JSON.stringify(got.ended)).toBe('Completed');
    expect(got.delivered).toBe(1);
    // This release's request: the decision's wait plus one retention (6b60376a's: one retention).
    expect(got.asked).toBeGreaterThanOrEqual(got.decision.expiresAt + RETENTION_S * 1000);
    // 6b60376a's answer sets one retention from itself (its own behaviour during the roll).
    expect(got.afterAnswer).toBeGreaterThanOrEqual(got.beforeAnswer + RETENTION_S * 1000);
    expect(got.afterAnswer).toBeLessThan(got.asked);
    // Never left without an expiry; gone no later than the record (one retention after the end).
    expect(got.decisionsAt).toBeGreaterThan(0);
    expect(got.decisionsAt).toBeLessThanOrEqual(got.recordAt);
  }, 300_000);

  it(`asked on ${PREVIOUS}, answered and ended here: its one retention lengthened by the answer; gone with the record`, async () => {
    const got = await askedThenAnswered(prev!, head!, 'p2h');
    expect(got.ended.status, JSON.stringify(got.ended)).toBe('Completed');
    expect(got.delivered).toBe(1);
    // 6b60376a's request: one retention, ending before the decision's own expiry.
    expect(got.asked).toBeLessThan(got.decision.expiresAt);
    // This release's answer: less than a retention was left, so one retention from the answer.
    expect(got.afterAnswer).toBeGreaterThanOrEqual(got.beforeAnswer + RETENTION_S * 1000);
    expect(got.afterAnswer).toBeGreaterThan(got.asked);
    expect(got.decisionsAt).toBeGreaterThan(0);
    expect(got.decisionsAt).toBeLessThanOrEqual(got.recordAt);
  }, 300_000);
});
