/**
 * Fair share through the real cluster (one gateway, two read-only runners of 2 slots each = a pool
 * of 4, real Redis and BullMQ): tenant A floods the pool with runs that each hold a slot for 10 s
 * (an App call that answers after 10 s). Alone, A uses all 4 slots (work-conserving); tenant B's
 * trivial run, queued behind A's backlog, takes the first slot A frees, ahead of A's earlier
 * queued runs, which are moved aside (deferred: no attempt spent), and every run of A completes.
 * The control cluster (ISLET_TENANT_POOL_SHARE=1, no share) shows the same flood makes B wait
 * behind A's queued runs. Skills count in the in-flight quota (429 + Retry-After) and take pool
 * leases like runs. A SIGKILLed runner's leases lapse. Orders are asserted, never durations: A's
 * runs start 300 ms apart, so its slots free 300 ms apart.
 */
import { createRedis, keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, sleep, startSlowAppCluster, until } from './helpers.ts';

/** How long each of A's runs holds its slot (an App call that answers after it). */
const HOLD_MS = 10_000;
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

/**
 * Submits a trivial run for `tenant` and waits for it: the time from submit to its end, and from
 * its creation to its start (the runner's `Running` event with the attempt: the second event of its
 * stream, whose id is its Redis time in ms) — the start excludes the cold start of a sandbox host.
 */
/** When a run started: its `Running` event (the second of its stream; the id is Redis time in ms). */
async function startedAt(redis: Redis, id: string): Promise<number> {
  const events = await redis.xrange(keys.runEvents(id), '-', '+');
  return Number(events[1]?.[0].split('-')[0]);
}

/** When a run ended: its last event (the final status; the id is Redis time in ms). */
async function endedAt(redis: Redis, id: string): Promise<number> {
  const [last] = await redis.xrevrange(keys.runEvents(id), '+', '-', 'COUNT', 1);
  return Number(last?.[0].split('-')[0]);
}

/** The pool's deferrals so far, by a runner's own counter (jobs sent back to wait for a slot). */
async function deferrals(runnerMetricsUrl: string): Promise<number> {
  const text = await (await fetch(`${runnerMetricsUrl}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^islet_tenant_share_deferrals_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

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

  it("alone A uses the whole pool; B's run queued behind A's backlog takes the first slot A frees", async () => {
    const { a, app, conn } = env;
    const ids: string[] = [];
    const submitA = async () => {
      const res = await a(
        'POST',
        '/v1/runs',
        run('await apps.slow.wait({}); return 1', { connections: [conn.id] }),
      );
      expect(res.status).toBe(202);
      ids.push(res.body.id);
    };
    // Four runs 300 ms apart (their slots free 300 ms apart), then two more that find the pool full.
    for (let i = 0; i < 4; i++) {
      await submitA();
      await until(async () => app.deliveries.length >= i + 1, 20_000, 20);
      await sleep(300);
    }
    expect(app.maxInFlight()).toBe(4); // nobody else waited: A had every slot
    await submitA();
    await submitA();
    // A's last two wait in the queue, not started: their records are untouched (no attempt).
    for (const id of ids.slice(4)) expect(await redis.hget(keys.run(id), 'attempts')).toBe('0');

    const bRun = await trivialRun(b, redis);
    expect(bRun.body.status).toBe('Completed');
    expect(bRun.body.result).toMatchObject({ _tag: 'Completed', value: 42 });
    process.stderr.write(
      `[fair-share] B's run with A flooding: started after ${bRun.startMs} ms, ended after ${Math.round(bRun.ms)} ms\n`,
    );

    // Every run of A completes (nothing lost); B started before A's two runs queued ahead of it.
    await until(
      async () => {
        const all = await Promise.all(ids.map((id) => a('GET', `/v1/code-runs/${id}`)));
        return all.every((r) => r.body.status === 'Completed');
      },
      60_000,
      250,
    );
    const bStarted = bRun.body.createdAt + bRun.startMs;
    for (const id of ids.slice(4)) expect(await startedAt(redis, id)).toBeGreaterThan(bStarted);
    // Those two were moved aside when a runner met them while B waited: deferred, no attempt spent.
    for (const id of ids) expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
    expect(await redis.zcard(keys.poolTenantLeases('read-only', env.cluster.tenantId))).toBe(0);
    expect(await redis.zcard(keys.poolTenantDeferred('read-only', env.cluster.tenantId))).toBe(0);
    expect(await redis.hlen(keys.poolQueued('read-only'))).toBe(0);
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
    let maxSkillLeases = 0;
    await until(
      async () => {
        maxSkillLeases = Math.max(
          maxSkillLeases,
          await redis.zcard(keys.poolTenantLeases('read-only', 'initech')),
        );
        return maxSkillLeases === 3;
      },
      10_000,
      20,
    );
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
    // Each held a pool lease while it ran, like a run (initech alone: all three at once).
    expect(maxSkillLeases).toBe(3);
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
    // The pool is now the one live runner (2 slots): B still gets a slot at once — taken at its
    // first fetch, never sent back to wait (a killed runner's lease still counted would fill the
    // pool and defer it).
    const live = cluster.runners[1]!.url;
    const deferredBefore = await deferrals(live);
    const bRun = await trivialRun(b, redis);
    expect(bRun.body.status).toBe('Completed');
    expect(await redis.hget(keys.run(bRun.body.id), 'attempts')).toBe('1');
    expect((await deferrals(live)) - deferredBefore).toBe(0);
  }, 90_000);
});

describe('control: without a share the same flood makes B wait', () => {
  it("B's trivial run waits for one of A's runs to end", async () => {
    const env = await startFloodCluster('1');
    const redis = createRedis(env.cluster.redisUrl);
    try {
      const b = await newTenant(env.a, env.cluster.url, 'globex');
      const aIds: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await env.a(
          'POST',
          '/v1/runs',
          run('await apps.slow.wait({}); return 1', { connections: [env.conn.id] }),
        );
        expect(res.status).toBe(202);
        aIds.push(res.body.id);
      }
      await until(async () => env.app.deliveries.length >= 4, 20_000, 20);
      const bRun = await trivialRun(b, redis);
      expect(bRun.body.status).toBe('Completed');
      // B started only once one of A's four running runs had ended (its slot freed), an order.
      const firstEnd = Math.min(
        ...(await Promise.all(
          aIds.slice(0, 4).map(async (id) => {
            const status = (await env.a('GET', `/v1/code-runs/${id}`)).body.status;
            return status === 'Completed' ? await endedAt(redis, id) : Number.POSITIVE_INFINITY;
          }),
        )),
      );
      expect(firstEnd).toBeLessThan(Number.POSITIVE_INFINITY);
      expect(bRun.body.createdAt + bRun.startMs).toBeGreaterThanOrEqual(firstEnd);
      process.stderr.write(
        `[fair-share] control, no share: B's run started after ${bRun.startMs} ms, ended after ${Math.round(bRun.ms)} ms\n`,
      );
    } finally {
      redis.disconnect();
      await env.stop();
    }
  }, 90_000);
});
