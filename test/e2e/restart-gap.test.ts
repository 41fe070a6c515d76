/**
 * The devstack's `restartRunner` kills the runner (SIGKILL: a crash) and starts it again. The
 * killed worker's idle registration (direct hand-off, runner README) lives on until its expiry,
 * and the new process prints its ready line before its worker registers: a run submitted as the
 * restart resolved was handed to the dead worker and waited for BullMQ's stalled check (a
 * `Prefer: wait=30` answered 202, test/bench/README.md round 44 `restart-gap`). The restart now
 * resolves once the latest registration — the one a gateway's add chooses — is a live worker's.
 * Fails on c51dd98e (at the ready line the latest registration is the killed worker's).
 */
import { createRedis } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './mixed-releases.ts';

const IDLE = 'islet:{runs-read-only}:idle';
let cluster: Cluster | undefined;
let redis: ReturnType<typeof createRedis> | undefined;

const submit = async (c: Cluster) => {
  const res = await call(
    c.url,
    c.devKey,
    'POST',
    '/v1/runs',
    { code: 'return 1', description: 'restart gap', sessionId: 'rg', turnId: 't', callId: 'c' },
    { prefer: 'wait=30' },
  );
  return { status: res.status, body: JSON.parse(res.text) as { status: string } };
};

/**
 * The worker whose registration an add would choose now (the latest expiry, if live), if any. An
 * expired latest is never chosen: the add drops the set (@islet/runs handoff-scripts.ts). A restart
 * slower than a registration's life (~6 s, under load) leaves the killed worker's there, expired.
 */
const latest = async () => {
  const [worker, expiry] = await redis!.zrange(IDLE, -1, -1, 'WITHSCORES');
  const [seconds, micros] = await redis!.time();
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  return worker !== undefined && Number(expiry) > now ? worker : undefined;
};

describe('restartRunner and the hand-off registration its kill leaves', () => {
  beforeAll(async () => {
    cluster = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'] }] });
    redis = createRedis(cluster.redisUrl);
  }, 120_000);

  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('resolves once the chosen registration is a live worker’s: a submit at once runs', async () => {
    const c = cluster!;
    expect((await submit(c)).body.status).toBe('Completed');
    for (let round = 0; round < 2; round++) {
      // The runner idle and registered, as in call-one-seal-mixed's second restart.
      while ((await latest()) === undefined) await new Promise((r) => setTimeout(r, 20));
      const before = new Set(await redis!.zrange(IDLE, 0, -1));
      await c.restartRunner(0);
      const chosen = await latest();
      // None of the registrations there before the kill (the killed worker's among them) is the
      // one an add hands a job to.
      expect(chosen === undefined || !before.has(chosen), `${chosen} was registered before the kill`).toBe(
        true,
      );
      const done = await submit(c);
      expect(done.status).toBe(200);
      expect(done.body.status).toBe('Completed');
    }
  }, 180_000);
});
