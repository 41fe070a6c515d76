/**
 * Fair share through the real cluster (one gateway, two read-only runners of 2 slots each = a pool
 * of 4, real Redis and BullMQ): tenant A floods the pool with runs that each hold a slot for 6 s
 * (an App call that answers after 6 s); tenant B's trivial run still completes within 3 s, A never
 * holds more than its share (2 of 4) at once, and every run of A completes. The control cluster
 * (ISLET_TENANT_POOL_SHARE=1, no share) shows the same flood makes B wait behind A. Skills count in
 * the in-flight quota (429 + Retry-After) and in the fair share. A SIGKILLed runner's leases lapse.
 */
import { createRedis, keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, sleep, startSlowAppCluster, until } from './helpers.ts';

/** How long each of A's runs holds its slot (an App call that answers after it). */
const HOLD_MS = 6000;
/** B's trivial run must end within this (a cold sandbox host on a loaded machine included), well under HOLD_MS. */
const B_BOUND_MS = 3000;
const run = (code: string, extra: Record<string, unknown> = {}) => ({
  code,
  description: 'fair share',
  sessionId: 's',
  turnId: 't',
  callId: 'c',
  ...extra,
});

async function newTenant(admin: Api, baseUrl: string, id: string, extra: Record<string, unknown> = {}) {
  expect((await admin('POST', '/v1/admin/tenants', { id, name: id, ...extra })).status).toBe(201);
  const key = (await admin('POST', `/v1/admin/tenants/${id}/keys`, { scopes: ['apps.use', 'sessions.read'] }))
    .body.key;
  return api(baseUrl, key);
}

function startFloodCluster(share: string) {
  return startSlowAppCluster({
    runners: [
      { modes: ['read-only'], concurrency: 2 },
      { modes: ['read-only'], concurrency: 2 },
    ],
    env: {
      // A's runs stand for work that holds its slots: an App call parks a run outside the slots
      // (runner README, "Waiting holds no slot"), so parking is off here.
      ISLET_RUNNER_PARKED_MAX: '0',
      ISLET_TENANT_POOL_SHARE: share,
      ISLET_TENANT_SHARE_LEASE_MS: '2000',
      ISLET_RUNNER_LOCK_DURATION_MS: '3000',
      ISLET_RUNNER_STALLED_INTERVAL_MS: '1000',
      ISLET_RUNNER_SHUTDOWN_GRACE_MS: '500',
    },
    delayMs: HOLD_MS,
    answer: '{"structuredContent":{"ok":true}}',
  });
}

/** B's run must start (a runner took it and began its attempt) within this. */
const B_START_BOUND_MS = 1000;

/**
 * Submits a trivial run for `tenant` and waits for it: the time from submit to its end, and from
 * its creation to its start (the runner's `Running` event with the attempt: the second event of its
 * stream, whose id is its Redis time in ms) — the start excludes the cold start of a sandbox host.
 */
async function trivialRun(tenant: Api, redis: Redis): Promise<{ ms: number; startMs: number; body: Loose }> {
  const t0 = performance.now();
  const res = await tenant('POST', '/v1/runs', run('return 6 * 7'), { prefer: 'wait=30' });
  const ms = performance.now() - t0;
  const events = await redis.xrange(keys.runEvents(res.body.id), '-', '+');
  const startedAt = Number(events[1]?.[0].split('-')[0]);
  return { ms, startMs: startedAt - res.body.createdAt, body: res.body };
}

describe('fair share: one tenant floods a pool', () => {
  let env: Awaited<ReturnType<typeof startFloodCluster>>;
  let b: Api;
  let c: Api;
  let redis: ReturnType<typeof createRedis>;

  beforeAll(async () => {
    env = await startFloodCluster('0.5');
    redis = createRedis(env.cluster.redisUrl);
    b = await newTenant(env.a, env.cluster.url, 'globex');
    c = await newTenant(env.a, env.cluster.url, 'initech', { maxInFlightRuns: 3 });
  }, 90_000);
  afterAll(async () => {
    redis?.disconnect();
    await env?.stop();
  });

  it("B's trivial run completes within 3 s while A's runs hold 6 s each; A stays within its share", async () => {
    const { a, app, conn } = env;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await a(
        'POST',
        '/v1/runs',
        run('await apps.slow.wait({}); return 1', { connections: [conn.id] }),
      );
      expect(res.status).toBe(202);
      ids.push(res.body.id);
    }
    await until(async () => app.deliveries.length >= 2, 20_000, 20);
    await sleep(300); // the runners have looked at A's other jobs by now and deferred them
    const deferred = await redis.zcard(keys.poolTenantDeferred('read-only', env.cluster.tenantId));
    expect(deferred).toBeGreaterThan(0);
    // A deferred run has not started: its record is untouched (no attempt, no status change).
    const waiting = await redis.hget(keys.run(ids.at(-1)!), 'attempts');
    expect(waiting).toBe('0');

    const bRun = await trivialRun(b, redis);
    expect(bRun.body.status).toBe('Completed');
    expect(bRun.body.result).toMatchObject({ _tag: 'Completed', value: 42 });
    expect(bRun.startMs).toBeLessThan(B_START_BOUND_MS);
    expect(bRun.ms).toBeLessThan(B_BOUND_MS);
    process.stderr.write(
      `[fair-share] B's run with A flooding: started after ${bRun.startMs} ms, ended after ${Math.round(bRun.ms)} ms\n`,
    );

    // Every run of A completes (nothing lost), never more than 2 at once across both runners.
    await until(
      async () => {
        const all = await Promise.all(ids.map((id) => a('GET', `/v1/code-runs/${id}`)));
        return all.every((r) => r.body.status === 'Completed');
      },
      60_000,
      250,
    );
    expect(app.maxInFlight()).toBe(2);
    expect(await redis.zcard(keys.poolTenantLeases('read-only', env.cluster.tenantId))).toBe(0);
  }, 90_000);

  it('skills count in the in-flight quota (429 + Retry-After) and in the fair share', async () => {
    // initech: maxInFlightRuns 3. Three skills of 2 s each; the pool's share for one tenant is 2.
    const skill = () =>
      (async () => {
        const t0 = performance.now();
        const res = await c('POST', '/v1/skills/run_code', {
          language: 'bash',
          code: 'sleep 2; echo done',
          sandbox_permissions: 'read-only',
        });
        return { ...res, ms: performance.now() - t0 };
      })();
    const three = [skill(), skill(), skill()];
    await until(async () => (await redis.zcard(keys.skillsInFlight('initech'))) === 3, 10_000, 20);
    const fourth = await c('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: 'echo no',
      sandbox_permissions: 'read-only',
    });
    expect(fourth.status).toBe(429);
    expect(fourth.headers.get('retry-after')).toBe('1');
    expect(fourth.body.type).toMatch(/quota-exceeded$/);
    expect(fourth.body.detail).toBe('tenant has 3 runs and skills in flight, the most it may have');
    // A run is refused too: skills and runs share the quota.
    expect((await c('POST', '/v1/runs', run('return 1'))).status).toBe(429);

    const done = await Promise.all(three);
    for (const d of done) expect(d.body).toMatchObject({ success: true, output: 'done\n', exitCode: 0 });
    // Two ran at once (the tenant's share of 4 slots); the third waited for one of them.
    expect(Math.max(...done.map((d) => d.ms))).toBeGreaterThan(3800);
    expect(await redis.zcard(keys.skillsInFlight('initech'))).toBe(0);

    // A burst in parallel lets exactly the quota through.
    const burst = await Promise.all(
      Array.from({ length: 8 }, () =>
        c('POST', '/v1/skills/run_code', {
          language: 'bash',
          code: 'sleep 1',
          sandbox_permissions: 'read-only',
        }),
      ),
    );
    expect(burst.filter((r) => r.status === 200).length).toBe(3);
    expect(burst.filter((r) => r.status === 429).length).toBe(5);
  }, 60_000);

  it("a SIGKILLed runner's slots come back: its leases lapse and every run still ends", async () => {
    const { a, app, conn, cluster } = env;
    const before = app.deliveries.length;
    const ids: string[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        (await a('POST', '/v1/runs', run('await apps.slow.wait({}); return 1', { connections: [conn.id] })))
          .body.id,
      );
    await until(async () => app.deliveries.length >= before + 2, 20_000, 20);
    await cluster.killRunner(0, 'SIGKILL');
    // Every run reaches a final status (the killed runner's are taken over after the stall check;
    // their App call's outcome is unknown, so they may fail rather than resend it).
    await until(
      async () => {
        const all = await Promise.all(ids.map((id) => a('GET', `/v1/code-runs/${id}`)));
        return all.every((r) => ['Completed', 'Failed'].includes(r.body.status));
      },
      60_000,
      250,
    );
    await until(
      async () => (await redis.zcard(keys.poolTenantLeases('read-only', cluster.tenantId))) === 0,
      10_000,
      100,
    );
    // The pool is now the one live runner (2 slots): B still gets a slot at once.
    const bRun = await trivialRun(b, redis);
    expect(bRun.body.status).toBe('Completed');
    expect(bRun.startMs).toBeLessThan(B_START_BOUND_MS);
  }, 90_000);
});

describe('control: without a share the same flood makes B wait', () => {
  it("B's trivial run waits for one of A's 6 s runs to end", async () => {
    const env = await startFloodCluster('1');
    const redis = createRedis(env.cluster.redisUrl);
    try {
      const b = await newTenant(env.a, env.cluster.url, 'globex');
      for (let i = 0; i < 5; i++)
        expect(
          (
            await env.a(
              'POST',
              '/v1/runs',
              run('await apps.slow.wait({}); return 1', { connections: [env.conn.id] }),
            )
          ).status,
        ).toBe(202);
      await until(async () => env.app.deliveries.length >= 4, 20_000, 20);
      const bRun = await trivialRun(b, redis);
      expect(bRun.body.status).toBe('Completed');
      expect(bRun.startMs).toBeGreaterThan(B_BOUND_MS);
      expect(bRun.ms).toBeGreaterThan(B_BOUND_MS + 1000);
      process.stderr.write(
        `[fair-share] control, no share: B's run started after ${bRun.startMs} ms, ended after ${Math.round(bRun.ms)} ms\n`,
      );
    } finally {
      redis.disconnect();
      await env.stop();
    }
  }, 90_000);
});
