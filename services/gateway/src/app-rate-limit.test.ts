/**
 * The gateway app's tenant rate limit through inject on real Redis: 429 with Retry-After, submits
 * counted in the admission's script, a window forgotten when it passes. The shared set-up is
 * test/app-fixture.ts.
 */
import { keys } from '@islet/core';
import { clearOfBoundary } from '@islet/testkit';
import { describe, expect, it, vi } from 'vitest';
import { auth, expectProblem, onAppFixture, run } from '../test/app-fixture.ts';

const { app, deps, limitedKey } = await onAppFixture();

describe('rate limit', () => {
  it('answers 429 with Retry-After past the tenant limit', async () => {
    // The five requests inside one minute's window (the limit's), not split by its end.
    await clearOfBoundary(60_000, 3_000);
    const codes: number[] = [];
    let last: Awaited<ReturnType<typeof app.inject>> | undefined;
    for (let i = 0; i < 5; i++) {
      last = await app.inject({ method: 'GET', url: '/v1/connections', headers: auth(limitedKey) });
      codes.push(last.statusCode);
    }
    expect(codes.slice(0, 3)).toEqual([200, 200, 200]);
    expect(codes[4]).toBe(429);
    expectProblem(last!, 429, 'rate-limited');
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
  });
});

/** A submit with `k`'s key. */
const submitWith = (k: string, payload: Record<string, unknown> = run()) =>
  app.inject({ method: 'POST', url: '/v1/runs', headers: auth(k), payload });

describe('rate limit on submits', () => {
  it('a flood of parallel submits: exactly the limit is stored, the rest get 429 and store nothing', async () => {
    await deps.tenants.createTenant({ id: 'rl-flood', name: 'RL', rateLimitPerMinute: 4 });
    const k = (await deps.tenants.createKey('rl-flood', ['apps.use'])).key;
    // A bad body counts against the limit too (counted as it is answered, before its answer).
    expectProblem(await submitWith(k, run({ description: '' })), 400, 'validation');
    const answers = await Promise.all(Array.from({ length: 20 }, () => submitWith(k)));
    const codes = answers.map((a) => a.statusCode);
    expect(codes.filter((c) => c === 202)).toHaveLength(3);
    expect(codes.filter((c) => c === 429)).toHaveLength(17);
    for (const refused of answers.filter((a) => a.statusCode === 429)) {
      expectProblem(refused, 429, 'rate-limited');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect(await deps.runs.inFlightCount('rl-flood')).toBe(3);
    expect((await deps.runs.listSession('rl-flood', 's1', undefined, 100)).ids).toHaveLength(3);
  });
});

describe('rate limit on submits, counted in the admission', () => {
  // A fixed one-minute window: do not straddle its end.
  const inOneWindow = async () => {
    if (Date.now() % 60_000 > 50_000)
      await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50));
    return Math.floor(Date.now() / 60_000);
  };

  it('a submit has no count of its own; past the limit it is refused, and then refused at once without a Redis write', async () => {
    await deps.tenants.createTenant({ id: 'rl-adm', name: 'RL', rateLimitPerMinute: 2 });
    const k = (await deps.tenants.createKey('rl-adm', ['apps.use'])).key;
    const window = await inOneWindow();
    const counter = keys.rateWindow('rl-adm', window);
    const evalsha = vi.spyOn(deps.redis, 'evalsha');
    try {
      const submit = () => submitWith(k);
      const counts: (string | null)[] = [];
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await submit();
        codes.push(res.statusCode);
        counts.push(await deps.redis.get(counter));
        if (res.statusCode === 429) {
          const p = expectProblem(res, 429, 'rate-limited');
          expect(p.detail).toMatch(/^tenant rate limit of 2 requests per minute reached; retry in \d+s$/);
          expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        }
      }
      expect(codes).toEqual([202, 202, 429, 429]);
      // Counted in the admission's script (no COUNT_IN_WINDOW of the counter); the fourth never
      // reached Redis: this replica knew the window was past its limit.
      expect(counts).toEqual(['1', '2', '3', '3']);
      expect(evalsha.mock.calls.filter((c) => c[2] === counter)).toHaveLength(0);
      expect(await deps.runs.inFlightCount('rl-adm')).toBe(2);
      expect(await deps.redis.ttl(counter)).toBeGreaterThan(0);
    } finally {
      evalsha.mockRestore();
    }
  });

  it('a tenant refused for its limit is admitted again in the next window: the replica forgets the window', async () => {
    await deps.tenants.createTenant({ id: 'rl-next', name: 'RL', rateLimitPerMinute: 1 });
    const k = (await deps.tenants.createKey('rl-next', ['apps.use'])).key;
    await inOneWindow();
    expect((await submitWith(k)).statusCode).toBe(202);
    expectProblem(await submitWith(k), 429, 'rate-limited'); // the admission's refusal
    expectProblem(await submitWith(k), 429, 'rate-limited'); // this replica's, without Redis
    const realNow = Date.now.bind(Date);
    const later = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 60_000);
    try {
      expect((await submitWith(k)).statusCode).toBe(202);
      const counter = keys.rateWindow('rl-next', Math.floor(Date.now() / 60_000));
      expect(await deps.redis.get(counter)).toBe('1');
    } finally {
      later.mockRestore();
    }
  });

  it('a submit refused before its admission (its body, an unknown connection) is counted as it is answered', async () => {
    await deps.tenants.createTenant({ id: 'rl-early', name: 'RL', rateLimitPerMinute: 5 });
    const k = (await deps.tenants.createKey('rl-early', ['apps.use'])).key;
    const counter = keys.rateWindow('rl-early', await inOneWindow());
    expectProblem(await submitWith(k, run({ description: '' })), 400, 'validation');
    const unknown = await submitWith(k, run({ connections: ['conn_does_not_exist'] }));
    expect(expectProblem(unknown, 400, 'validation').detail).toBe('unknown connection: conn_does_not_exist');
    expect((await submitWith(k)).statusCode).toBe(202);
    expect(await deps.redis.get(counter)).toBe('3');
  });

  it('with an Idempotency-Key the count is sent on arrival: a replay past the limit is refused', async () => {
    await deps.tenants.createTenant({ id: 'rl-idem', name: 'RL', rateLimitPerMinute: 1 });
    const k = (await deps.tenants.createKey('rl-idem', ['apps.use'])).key;
    const counter = keys.rateWindow('rl-idem', await inOneWindow());
    const headers = { ...auth(k), 'idempotency-key': 'rl-idem-1' };
    const first = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() });
    expect(first.statusCode).toBe(202);
    const replay = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() });
    expectProblem(replay, 429, 'rate-limited');
    expect(await deps.redis.get(counter)).toBe('2');
  });
});
