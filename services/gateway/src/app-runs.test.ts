/**
 * Runs through the gateway app's inject, no runner, on real Redis: submit, read and cancel by their
 * tenant only, Idempotency-Key (replays, a first request that died, a resent SET), the in-flight
 * quota, a run re-queued by recovery, principals racing for a session. Waiting for a run's end:
 * app-runs-wait.test.ts. The shared set-up is test/app-fixture.ts.
 */
import { keys } from '@islet/core';
import { runFixture } from '@islet/testkit';
import { describe, expect, it, vi } from 'vitest';
import { auth, expectProblem, onAppFixture, run } from '../test/app-fixture.ts';
import { createDecisionsService } from './decisions-service.ts';
import { createGatewayRecovery } from './run-recovery.ts';
import { createRunsService } from './runs-service.ts';

const { gateway, app, deps, key, otherKey } = await onAppFixture();

describe('runs through inject (no runner)', () => {
  it('202 with Location, readable by its tenant only, idempotent with Idempotency-Key', async () => {
    const headers = { ...auth(key), 'idempotency-key': 'abc-1' };
    const first = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() });
    expect(first.statusCode).toBe(202);
    const rec = first.json();
    expect(first.headers.location).toBe(`/v1/code-runs/${rec.id}`);
    expect(rec).toMatchObject({
      session: 's1',
      turn: 't1',
      callId: 'c1',
      status: 'Running',
      code: 'return 1',
      reason: 'Return the number one',
      calls: [],
    });
    const again = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() });
    expect(again.json().id).toBe(rec.id);
    const conflict = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers,
      payload: run({ code: 'return 2' }),
    });
    expectProblem(conflict, 409, 'idempotency-conflict');
    expect(await deps.runQueue.queues['read-only'].getJob(rec.id)).toBeTruthy();

    expect(
      (await app.inject({ method: 'GET', url: `/v1/code-runs/${rec.id}`, headers: auth(key) })).statusCode,
    ).toBe(200);
    for (const r of [
      { method: 'GET' as const, url: `/v1/code-runs/${rec.id}` },
      { method: 'GET' as const, url: `/v1/code-runs/${rec.id}/events` },
      { method: 'POST' as const, url: `/v1/code-runs/${rec.id}/cancel` },
      { method: 'POST' as const, url: `/v1/code-runs/${rec.id}/calls/0/result`, payload: { result: 1 } },
    ]) {
      expectProblem(await app.inject({ ...r, headers: auth(otherKey) }), 404, 'not-found');
    }
    // Code is sealed at rest: in format 2 (the default) with its request as `pick`, in format 1
    // alone as `code` (runs sealed-fields.ts); never in clear in either.
    const stored = await deps.redis.hgetall(`islet:run:{${rec.id}}`);
    const [field, absent] = gateway?.config.ISLET_WRITE_FORMAT === '1' ? ['code', 'pick'] : ['pick', 'code'];
    expect(stored[field]).toMatch(/^v1\./);
    expect(stored[absent]).toBeUndefined();
    expect(Object.values(stored).some((v) => v.includes('return 1'))).toBe(false);

    // Cancel while queued ends it here, and takes its job's count off the pool's queued jobs.
    const queuedJobs = async () =>
      Object.values(await deps.redis.hgetall(keys.poolQueued('read-only'))).reduce(
        (n, v) => n + Number(v),
        0,
      );
    const queuedBefore = await queuedJobs();
    const cancelled = await app.inject({
      method: 'POST',
      url: `/v1/code-runs/${rec.id}/cancel`,
      headers: auth(key),
    });
    expect(cancelled.statusCode).toBe(202);
    expect(cancelled.json()).toMatchObject({
      status: 'Cancelled',
      result: { _tag: 'Failed', reason: 'Cancelled' },
    });
    expect(await queuedJobs()).toBe(queuedBefore - 1);
    expectProblem(
      await app.inject({ method: 'POST', url: `/v1/code-runs/${rec.id}/cancel`, headers: auth(key) }),
      409,
      'run-finished',
    );

    const list = await app.inject({
      method: 'GET',
      url: '/v1/sessions/s1/code-runs?limit=1',
      headers: auth(key),
    });
    expect(list.json().items[0].id).toBe(rec.id);
  });
  it('re-queues a run left without a job (gateway died between record and queue)', async () => {
    const now = Date.now();
    const orphan = runFixture('orphan-1', { session: 's-orphan', createdAt: now - 120_000, clockMs: now });
    await deps.runs.create(orphan);
    await deps.runs.create({ ...orphan, id: 'young-1', createdAt: now, updatedAt: now });
    const runsService = createRunsService(deps);
    const recovery = createGatewayRecovery(deps, runsService, createDecisionsService(deps, runsService), {
      inFlightIntervalMs: 2000,
    });
    const requeued = async () =>
      (await recovery.tick()).filter((a) => a.action.type === 'enqueue').map((a) => a.runId);
    expect(await requeued()).toEqual(['orphan-1']);
    expect(await deps.runQueue.queues['read-only'].getJob('orphan-1')).toBeTruthy();
    expect(await deps.runQueue.queues['read-only'].getJob('young-1')).toBeFalsy();
    // The lock makes a second walk in the same interval a no-op.
    expect(await requeued()).toEqual([]);
  });
  it('Idempotency-Key: a retry takes over the key of a first request that died before storing its run', async () => {
    const headers = { ...auth(key), 'idempotency-key': 'died-1' };
    const payload = run({ sessionId: 'idem-died' });
    // The first request claims the key, then "dies": its store fails and so does its cleanup.
    const create = vi.spyOn(deps.runs, 'create').mockRejectedValueOnce(new Error('gateway killed'));
    const release = vi
      .spyOn(deps.runs, 'releaseIdempotency')
      .mockRejectedValueOnce(new Error('gateway killed'));
    try {
      const first = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
      expect(first.statusCode).toBe(500);
    } finally {
      create.mockRestore();
      release.mockRestore();
    }
    const held = JSON.parse((await deps.redis.get(keys.idempotency('acme', 'died-1'))) ?? '{}');
    expect(held.runId).toEqual(expect.any(String));
    expect(await deps.runs.get(held.runId)).toBeNull();
    // The retry waits out the first request's grace, then takes the key over: one run, its own.
    const retry = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
    expect(retry.statusCode).toBe(202);
    expect(retry.json().id).not.toBe(held.runId);
    expect(JSON.parse((await deps.redis.get(keys.idempotency('acme', 'died-1'))) ?? '{}').runId).toBe(
      retry.json().id,
    );
    const again = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
    expect(again.json().id).toBe(retry.json().id);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
  it('Idempotency-Key: a SET sent again after a lost reply finds its own write and goes on', async () => {
    const headers = { ...auth(key), 'idempotency-key': 'resent-1' };
    const realSet = deps.redis.set.bind(deps.redis) as (...args: unknown[]) => Promise<unknown>;
    // As ioredis resending an unanswered SET NX after a reconnect: the write landed, the answer is nil.
    const set = vi.spyOn(deps.redis, 'set').mockImplementationOnce((async (...args: unknown[]) => {
      await realSet(...args);
      return null;
    }) as never);
    // A first request's key would send this one to wait for that run and then take the key over.
    const takeOver = vi.spyOn(deps.runs, 'takeOverIdempotency');
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers,
        payload: run({ sessionId: 'idem-resent' }),
      });
      expect(res.statusCode).toBe(202);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expect(takeOver).not.toHaveBeenCalled();
      expect(await deps.runs.get(res.json().id)).not.toBeNull();
    } finally {
      set.mockRestore();
      takeOver.mockRestore();
    }
  });
  it('answers 429 quota-exceeded past the in-flight quota', async () => {
    await deps.tenants.createTenant({ id: 'tiny', name: 'Tiny', maxInFlightRuns: 1 });
    const tinyKey = (await deps.tenants.createKey('tiny', ['apps.use'])).key;
    const first = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(tinyKey),
      payload: run(),
    });
    expect(first.statusCode).toBe(202);
    const second = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(tinyKey),
      payload: run(),
    });
    expectProblem(second, 429, 'quota-exceeded');
    expect(second.headers['retry-after']).toBe('1');
  });
  it('the in-flight quota holds under a flood of parallel submits (check and count are one step)', async () => {
    await deps.tenants.createTenant({ id: 'flood', name: 'Flood', maxInFlightRuns: 5 });
    const floodKey = (await deps.tenants.createKey('flood', ['apps.use'])).key;
    const queue = deps.runQueue.queues['read-only'];
    const jobsBefore = await queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed');
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        app.inject({ method: 'POST', url: '/v1/runs', headers: auth(floodKey), payload: run() }),
      ),
    );
    const codes = answers.map((a) => a.statusCode);
    expect(codes.filter((c) => c === 202)).toHaveLength(5);
    expect(codes.filter((c) => c === 429)).toHaveLength(35);
    for (const refused of answers.filter((a) => a.statusCode === 429))
      expectProblem(refused, 429, 'quota-exceeded');
    expect(await deps.runs.inFlightCount('flood')).toBe(5);
    // On one server a refused submit's job goes out with its record (one round trip) and is taken
    // back: the queue holds the 5 admitted runs' jobs, none of the 35 refused.
    expect(await queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed')).toBe(jobsBefore + 5);
    // The pool's count of the tenant's queued jobs (the runners' fair share) took them back too.
    expect(await deps.redis.hget(keys.poolQueued('read-only'), 'flood')).toBe('5');
  });
  it('two principals racing for a new session: one owns it, every run of the other gets 404', async () => {
    await deps.tenants.createTenant({ id: 'race', name: 'Race' });
    const ann = (await deps.tenants.createKey('race', ['apps.use'], { principal: 'ann' })).key;
    const bob = (await deps.tenants.createKey('race', ['apps.use'], { principal: 'bob' })).key;
    const submit = (k: string) =>
      app.inject({ method: 'POST', url: '/v1/runs', headers: auth(k), payload: run({ sessionId: 'raced' }) });
    const who = Array.from({ length: 20 }, (_, i) => (i % 2 ? 'ann' : 'bob'));
    const queue = deps.runQueue.queues['read-only'];
    const jobsBefore = await queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed');
    const answers = await Promise.all(who.map((p) => submit(p === 'ann' ? ann : bob)));
    const owners = new Set(who.filter((_, i) => answers[i]?.statusCode === 202));
    expect(owners.size).toBe(1);
    expect(answers.filter((a) => a.statusCode === 202)).toHaveLength(10);
    for (const refused of answers.filter((a) => a.statusCode !== 202))
      expectProblem(refused, 404, 'not-found');
    // Nothing of the refused runs stays: no record, no job.
    expect(await queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed')).toBe(jobsBefore + 10);
    expect(await deps.redis.hget(keys.poolQueued('read-only'), 'race')).toBe('10');
    const ids = await deps.redis.zrange(keys.sessionRuns('race', 'raced'), 0, -1);
    expect(ids).toHaveLength(10);
  });
});
