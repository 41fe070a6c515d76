/**
 * A submit's authentication from what the gateway's caches hold and have read (auth.ts
 * `requireScopesOverlappingRateLimit`, read-cache.ts `peek`), through inject on real Redis: a
 * submit whose key and tenant were read before is authenticated without reading them again (no
 * promise on its path), and every refusal is the async path's: an expired key, a revoked key, a
 * missing scope, a window past its limit. With an Idempotency-Key the async path is taken. Also
 * the two other awaits the submit's path no longer makes: the storage share while it is fresh and
 * the rate-limit check when none is pending. Round 43 (`send-floor`).
 */
import type { FastifyRequest } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { auth, expectProblem, onAppFixture, run } from '../test/app-fixture.ts';
import type { TestGatewayDeps } from '../test/gateway-harness.ts';
import { rateLimitPassed } from './auth.ts';
import { createStorageQuota } from './storage-quota.ts';

const { gateway, deps } = await onAppFixture();

let sessions = 0;
/** A submit with `k`'s key (its own session unless `sessionId` is given: a replay's body is the same). */
const submit = (k: string, headers: Record<string, string> = {}, sessionId = `in-hand-${++sessions}`) =>
  gateway!.app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { ...auth(k), ...headers },
    payload: run({ sessionId }),
  });

/** Spies on the async reads of a key's identity and tenant, for one block. */
async function withReadSpies(
  fn: (reads: { keys: () => number; tenants: () => number }) => Promise<void>,
): Promise<void> {
  const keys = vi.spyOn(deps.tenants, 'resolveKeyHash');
  const tenants = vi.spyOn(deps.tenants, 'getTenant');
  try {
    await fn({ keys: () => keys.mock.calls.length, tenants: () => tenants.mock.calls.length });
  } finally {
    keys.mockRestore();
    tenants.mockRestore();
  }
}

describe('a submit authenticated from the caches', () => {
  it('a key and tenant read before are not read again: the submit passes without the async reads', async () => {
    await deps.tenants.createTenant({ id: 'in-hand', name: 'In hand' });
    const k = (await deps.tenants.createKey('in-hand', ['apps.use'])).key;
    await withReadSpies(async (reads) => {
      expect((await submit(k)).statusCode).toBe(202);
      // The first: nothing cached yet, read the async way.
      expect(reads.keys()).toBe(1);
      expect(reads.tenants()).toBe(1);
      const second = await submit(k);
      expect(second.statusCode).toBe(202);
      expect((second.json() as { status: string }).status).toBe('Running');
      const third = await submit(k);
      expect(third.statusCode).toBe(202);
      // Neither read again: both came from what the caches hold (`peek`).
      expect(reads.keys()).toBe(1);
      expect(reads.tenants()).toBe(1);
    });
    // Each admitted and counted once in its window, as before.
    expect(await deps.runs.inFlightCount('in-hand')).toBe(3);
  });

  it('with an Idempotency-Key the async path is taken, and the replay answers the same run', async () => {
    await deps.tenants.createTenant({ id: 'in-hand-idem', name: 'In hand' });
    const k = (await deps.tenants.createKey('in-hand-idem', ['apps.use'])).key;
    expect((await submit(k)).statusCode).toBe(202);
    await withReadSpies(async (reads) => {
      const first = await submit(k, { 'idempotency-key': 'in-hand-1' }, 'in-hand-idem');
      const again = await submit(k, { 'idempotency-key': 'in-hand-1' }, 'in-hand-idem');
      expect(first.statusCode).toBe(202);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect((again.json() as { id: string }).id).toBe((first.json() as { id: string }).id);
      expect(reads.keys()).toBe(2);
    });
  });

  it('a cached key past its expiry is refused (401) as an unknown key', async () => {
    await deps.tenants.createTenant({ id: 'in-hand-exp', name: 'In hand' });
    const k = (await deps.tenants.createKey('in-hand-exp', ['apps.use'], { expiresAt: Date.now() + 1500 }))
      .key;
    expect((await submit(k)).statusCode).toBe(202);
    await new Promise((r) => setTimeout(r, 1600));
    // Its identity is still in the cache (5 s), read: the expiry is checked on it.
    const refused = await submit(k);
    expect(expectProblem(refused, 401, 'unauthorized').detail).toBe('unknown API key');
  });

  it('a revoked key is refused at once, a missing scope is refused (403) in hand as the async way does', async () => {
    await deps.tenants.createTenant({ id: 'in-hand-rev', name: 'In hand' });
    const made = await deps.tenants.createKey('in-hand-rev', ['apps.use']);
    expect((await submit(made.key)).statusCode).toBe(202);
    await deps.tenants.revokeKey('in-hand-rev', made.keyId);
    expectProblem(await submit(made.key), 401, 'unauthorized');

    const reader = (await deps.tenants.createKey('in-hand-rev', ['sessions.read'])).key;
    await withReadSpies(async (reads) => {
      const first = await submit(reader);
      const second = await submit(reader);
      expect(reads.keys()).toBe(1);
      for (const res of [first, second])
        expect(expectProblem(res, 403, 'forbidden').detail).toBe('this API key lacks the scope apps.use');
      expect(second.json()).toEqual(first.json());
    });
  });

  it('a window past its limit is refused (429) in hand, without a Redis write', async () => {
    await deps.tenants.createTenant({ id: 'in-hand-rl', name: 'In hand', rateLimitPerMinute: 1 });
    const k = (await deps.tenants.createKey('in-hand-rl', ['apps.use'])).key;
    // One minute's window for the three.
    if (Date.now() % 60_000 > 50_000)
      await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50));
    expect((await submit(k)).statusCode).toBe(202);
    expectProblem(await submit(k), 429, 'rate-limited'); // the admission's refusal
    const evalsha = vi.spyOn(deps.redis, 'evalsha');
    try {
      await withReadSpies(async (reads) => {
        const res = await submit(k);
        expectProblem(res, 429, 'rate-limited');
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(reads.keys()).toBe(0);
      });
      expect(evalsha).not.toHaveBeenCalled();
    } finally {
      evalsha.mockRestore();
    }
  });
});

describe('read-cache peek', () => {
  it('gives a value only once its read came back, and none once it is dropped', async () => {
    let loads = 0;
    const cache = deps.caches!.cache<string>('peek-test', async (key) => {
      loads++;
      return key === 'absent' ? null : `value of ${key}`;
    });
    expect(cache.peek('a')).toBeUndefined();
    const reading = cache.get('a');
    // Asked for, not back yet.
    expect(cache.peek('a')).toBeUndefined();
    expect(await reading).toBe('value of a');
    expect(cache.peek('a')).toBe('value of a');
    expect(loads).toBe(1);
    // A miss (null) is not kept.
    expect(await cache.get('absent')).toBeNull();
    expect(cache.peek('absent')).toBeUndefined();
    await cache.invalidate('a');
    expect(cache.peek('a')).toBeUndefined();
    expect(await cache.get('a')).toBe('value of a');
    expect(loads).toBe(3);
  });
});

describe('the submit path’s awaits of what is known', () => {
  it('the storage share is a number while its reading is fresh, a promise when read afresh', async () => {
    let reads = 0;
    const quota = createStorageQuota({
      storedBytes: {
        maxMemoryBytes: async () => {
          reads++;
          return 1_000_000;
        },
      } as unknown as TestGatewayDeps['storedBytes'],
      config: { ...deps.config, ISLET_TENANT_REDIS_SHARE: 0.5 },
      logger: deps.logger,
    });
    const first = quota.limitBytes();
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBe(Math.min(deps.config.ISLET_TENANT_STORED_MAX_BYTES, 500_000));
    expect(quota.limitBytes()).toBe(await first);
    expect(reads).toBe(1);
  });

  it('the rate-limit check is absent when the count is left to the admission, the pending one otherwise', async () => {
    expect(rateLimitPassed({} as FastifyRequest)).toBeUndefined();
    const pending = Promise.resolve();
    expect(rateLimitPassed({ rateLimited: pending } as FastifyRequest)).toBe(pending);
  });
});
