/**
 * API-key authentication, scopes and the per-tenant rate limit. Keys arrive as
 * `Authorization: Bearer <key>`; the key's SHA-256 finds the tenant and scopes. The runner's
 * internal channel uses `ISLET_INTERNAL_TOKEN` instead (compared in constant time).
 */

import { timingSafeEqual } from 'node:crypto';
import type { ApiKeyIdentity, Scope, Tenant } from '@islet/core';
import { hashApiKey, keys, tenantMemo } from '@islet/core';
import type { AdmissionRateCount } from '@islet/runs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientAddressBucket } from './client-address.ts';
import type { GatewayDeps } from './deps.ts';
import { createKeyWatch } from './key-watch.ts';
import { HttpProblem, isRedisFull } from './problem-reply.ts';

export interface Caller extends ApiKeyIdentity {
  tenant: Tenant;
  /** The SHA-256 of the key the request came with (what key-watch.ts watches); absent for internal callers. */
  keyHash?: string;
}

/** A key's last use is written at most this often per key and replica, ms. */
const LAST_USED_EVERY_MS = 60_000;

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
    /** The tenant's rate-limit count, sent but not awaited (`requireScopesOverlappingRateLimit`). */
    rateLimited?: Promise<void>;
    /**
     * The tenant's rate-limit count, left to the submit's admission (`requireScopesOverlappingRateLimit`
     * on a request without an Idempotency-Key): counted there, or by `countIfUncounted` once answered.
     */
    rateCount?: AdmissionRateCount;
  }
}

const RATE_WINDOW_MS = 60_000;

/** The 429 of a request past its tenant's per-minute limit, at `nowMs`. */
export function rateLimitedProblem(limit: number, nowMs = Date.now()): HttpProblem {
  const window = Math.floor(nowMs / RATE_WINDOW_MS);
  const retryAfter = Math.max(1, Math.ceil(((window + 1) * RATE_WINDOW_MS - nowMs) / 1000));
  return new HttpProblem(
    'rate-limited',
    `tenant rate limit of ${limit} requests per minute reached; retry in ${retryAfter}s`,
    { limit, retryAfterSeconds: retryAfter },
    { 'retry-after': String(retryAfter) },
  );
}

function bearer(request: FastifyRequest): string | undefined {
  const h = request.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(h.trim());
  return m?.[1];
}

export function createAuth(deps: GatewayDeps) {
  const { tenants, windowCounts, config, caches } = deps;
  const countInWindow = (key: string) => windowCounts.count(key);
  // A tenant's rate window's name, made once a tenant and window (every submit of a minute names it).
  const rateWindowKey = tenantMemo((tenant, window) => keys.rateWindow(tenant, window));

  const keyWatch = createKeyWatch((hash) => tenants.resolveKeyHash(hash), caches);
  // Key id → when this replica last wrote its last use: a key's traffic costs one write a minute.
  const lastUsedWritten = new Map<string, number>();
  function touch(identity: ApiKeyIdentity, log: FastifyRequest['log']) {
    const now = Date.now();
    if (now - (lastUsedWritten.get(identity.keyId) ?? 0) < LAST_USED_EVERY_MS) return;
    if (lastUsedWritten.size >= 100_000) lastUsedWritten.clear();
    lastUsedWritten.set(identity.keyId, now);
    tenants
      .touchKey(identity.tenantId, identity.keyId, now)
      .catch((err: unknown) => log.warn({ err }, "a key's last use could not be recorded"));
  }

  const limitOf = (tenant: Tenant) => tenant.rateLimitPerMinute ?? config.ISLET_RATE_LIMIT_PER_MINUTE;

  async function rateLimit(tenant: Tenant) {
    const now = Date.now();
    const limit = limitOf(tenant);
    let count: number;
    try {
      count = await countInWindow(rateWindowKey(tenant.id, Math.floor(now / RATE_WINDOW_MS)));
    } catch (err) {
      // The count is a write: with Redis at maxmemory it fails, and reads (which need no write)
      // must still be served. The request goes uncounted; writes it makes are refused on their own.
      if (!isRedisFull(err)) throw err;
      return;
    }
    if (count > limit) throw rateLimitedProblem(limit, now);
  }

  // Windows (their counters' keys) this replica saw past their limit: a count only grows within
  // its window, so the tenant's later submits there are refused at once, without a Redis write or
  // the work of building a run (a flooding tenant costs little). Forgotten when the window ends.
  const overLimit = new Set<string>();
  let overLimitWindow = 0;

  /**
   * For the onSend of a route whose requests may carry a `rateCount`: a request answered before its
   * admission counted it (refused for its body, its policy, …) is counted now, sent before its
   * answer (so a later submit's admission, on the same connection, comes after it), so every request
   * counts once, as when the count was sent on arrival; one its admission refused marks its window.
   */
  function countIfUncounted(request: FastifyRequest): void {
    const rate = request.rateCount;
    if (!rate) return;
    if (rate.refused) overLimit.add(rate.key);
    if (rate.counted) return;
    rate.counted = true;
    countInWindow(rate.key).catch((err: unknown) =>
      request.log.warn({ err }, 'a refused request could not be counted against its rate limit'),
    );
  }

  /**
   * Failed authentication, per client address (an IPv6 /64) and minute: past
   * ISLET_AUTH_FAILURES_PER_MINUTE the address's requests without a key that resolves are refused
   * (429) until the window ends. Guessing keys is hopeless (256 bits); this bounds what a prober
   * costs the platform and its log. A key that resolves is never refused for its address: behind an
   * ingress or a NAT many tenants share one address, and one prober must not lock them all out.
   */
  const failureWindowMs = 60_000;
  const limitOfFailures = config.ISLET_AUTH_FAILURES_PER_MINUTE;
  // The counter lives in Redis (shared by every replica), but reading it on every request cost a
  // command per request for a check that refuses almost nobody. So each replica remembers, per
  // address and window, what it knows: `blocked` (the counter reached the limit: seen by this
  // replica's INCR or announced by another's on the cache channel) and `below` (read under the
  // limit while the subscription was up, so any later crossing reaches this replica as an
  // announcement). Only an address in neither state costs a read: once per address and window.
  // Without a live subscription every request reads the counter, as before. A block made on
  // another replica reaches this one as fast as the announcement does (one pub/sub hop after the
  // INCR that crossed the limit, less than the client's next request takes to arrive).
  const blocked = new Map<string, number>();
  const below = new Map<string, number>();
  let knownWindow = 0;
  const forget = (window: number) => {
    if (window === knownWindow && blocked.size + below.size < 100_000) return;
    knownWindow = window;
    blocked.clear();
    below.clear();
  };
  caches?.on('auth-blocked', (message) => {
    // A restarted subscription may have missed announcements: every `below` must be read again.
    if (message === '*') return below.clear();
    const cut = message.indexOf(':');
    const window = Number(message.slice(0, cut));
    forget(Math.max(window, knownWindow));
    if (window === knownWindow) blocked.set(message.slice(cut + 1), window);
  });
  const refuse = (window: number, now: number): never => {
    const retryAfter = Math.max(1, Math.ceil(((window + 1) * failureWindowMs - now) / 1000));
    throw new HttpProblem(
      'rate-limited',
      `too many failed authentications from this address; retry in ${retryAfter}s`,
      { limit: limitOfFailures, retryAfterSeconds: retryAfter },
      { 'retry-after': String(retryAfter) },
    );
  };
  async function refuseIfFailingTooOften(request: FastifyRequest) {
    const now = Date.now();
    const window = Math.floor(now / failureWindowMs);
    forget(window);
    const ip = clientAddressBucket(request.ip);
    if (blocked.get(ip) === window) refuse(window, now);
    const subscribed = caches?.listening() === true;
    if (subscribed && below.get(ip) === window) return;
    const count = await windowCounts.read(keys.authFailures(ip, window));
    if (count >= limitOfFailures) {
      blocked.set(ip, window);
      refuse(window, now);
    }
    // Under the limit, and no announcement can have been missed since before the read was sent.
    if (subscribed && caches?.listening() && caches.since() <= now && blocked.get(ip) !== window)
      below.set(ip, window);
  }
  async function authFailed(request: FastifyRequest, detail: string): Promise<never> {
    const window = Math.floor(Date.now() / failureWindowMs);
    const ip = clientAddressBucket(request.ip);
    below.delete(ip);
    // A full Redis cannot count the failure: the request is still refused (401), uncounted.
    const count = await countInWindow(keys.authFailures(ip, window)).catch((err: unknown) => {
      if (isRedisFull(err)) return 0;
      throw err;
    });
    if (count >= limitOfFailures) {
      forget(window);
      blocked.set(ip, window);
      // Every replica refuses the address's unknown keys from now on without reading the counter.
      await caches?.publish('auth-blocked', `${window}:${ip}`);
    }
    throw new HttpProblem('unauthorized', detail);
  }

  /** preHandler: a valid key with every scope listed; sets `request.caller`. */
  function requireScopes(...scopes: Scope[]) {
    return scopeCheck(scopes, false);
  }

  /**
   * As `requireScopes`, for a run's submit, with the tenant's rate-limit count off the submit's
   * path. Without an Idempotency-Key the count is left to the run's admission (`request.rateCount`,
   * counted in the admission's script: the count's own round trip and Redis write, fsynced before
   * its answer, no longer come first); the
   * route must pass `request.rateCount` to the submit and call `countIfUncounted` as it answers
   * (onSend). A replica that saw the window pass its limit refuses the tenant's later submits in it
   * at once (429, not counted again: the count only grows within its window).
   * With an Idempotency-Key (a replay answers without an admission) the count is only sent, not
   * awaited: its round trip overlaps the body's parsing and checks. Either way the handler must
   * await `rateLimitPassed(request)` (when it is a promise) before anything with an effect. A request refused for its
   * body still counts, and is answered for its body.
   */
  function requireScopesOverlappingRateLimit(...scopes: Scope[]) {
    const check = scopeCheck(scopes, true);
    // Callback-style, and without a promise when the key's identity and its tenant are in the
    // caches and read (read-cache.ts `peek`; the identity's expiry checked as on every read) and
    // the request has no Idempotency-Key: the same checks in the same order, each refusal the
    // same. Anything else (a miss, an unusable key, a missing tenant) goes the async way, where a
    // refusal is made and counted as always. Round 43 (`send-floor`): the async hook, its two
    // cached reads and the reads' wrapper were 7 promises and 4 awaits of a submit.
    return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
      const key = request.headers['idempotency-key'] === undefined ? bearer(request) : undefined;
      const keyHash = key ? hashApiKey(key) : undefined;
      const identity = keyHash ? tenants.knownKeyHash?.(keyHash) : undefined;
      const tenant = identity ? tenants.knownTenant?.(identity.tenantId) : undefined;
      if (!identity || !tenant || keyHash === undefined) {
        check(request, reply).then(() => done(), done);
        return;
      }
      try {
        scopesHeld(scopes, identity);
        countInAdmission(request, tenant);
      } catch (err) {
        done(err as Error);
        return;
      }
      touch(identity, request.log);
      request.caller = { ...identity, tenant, keyHash };
      done();
    };
  }

  /** Refuses (403) a key without every scope listed. */
  function scopesHeld(scopes: Scope[], identity: ApiKeyIdentity): void {
    const missing = scopes.filter((s) => !identity.scopes.includes(s));
    if (missing.length)
      throw new HttpProblem('forbidden', `this API key lacks the scope ${missing.join(', ')}`, {
        missingScopes: missing,
      });
  }

  /** The rate-limit count left to the admission (`request.rateCount`), or the 429 of a window seen past its limit. */
  function countInAdmission(request: FastifyRequest, tenant: Tenant): void {
    const now = Date.now();
    const window = Math.floor(now / RATE_WINDOW_MS);
    if (window !== overLimitWindow) {
      overLimit.clear();
      overLimitWindow = window;
    }
    const key = rateWindowKey(tenant.id, window);
    if (overLimit.has(key)) throw rateLimitedProblem(limitOf(tenant), now);
    request.rateCount = { key, limit: limitOf(tenant), counted: false };
  }

  function scopeCheck(scopes: Scope[], overlapRateLimit: boolean) {
    return async (request: FastifyRequest, _reply: FastifyReply) => {
      const key = bearer(request);
      const keyHash = key ? hashApiKey(key) : '';
      const identity = key ? await tenants.resolveKeyHash(keyHash) : null;
      if (!identity) {
        // Only requests without a valid key are counted and refused per address.
        await refuseIfFailingTooOften(request);
        return authFailed(request, key ? 'unknown API key' : 'send Authorization: Bearer <api key>');
      }
      const tenant = await tenants.getTenant(identity.tenantId);
      if (!tenant) throw new HttpProblem('unauthorized', "the key's tenant no longer exists");
      scopesHeld(scopes, identity);
      if (overlapRateLimit && request.headers['idempotency-key'] === undefined) {
        countInAdmission(request, tenant);
      } else if (overlapRateLimit) {
        const limited = rateLimit(tenant);
        // Awaited by the handler; a handler that fails first must not leave it unhandled.
        limited.catch(() => undefined);
        request.rateLimited = limited;
      } else {
        await rateLimit(tenant);
      }
      touch(identity, request.log);
      request.caller = { ...identity, tenant, keyHash };
    };
  }

  const expected = Buffer.from(config.ISLET_INTERNAL_TOKEN);
  /**
   * preHandler for `/internal/*`: the runner's shared token. Callback-style: a runner's request
   * (every binding call) passes without a promise and a microtask; a refusal goes the async way.
   */
  function requireInternal(request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void {
    // The token is compared first (no lookup to protect): runners sharing an address with a
    // prober (one node, one NAT) must keep their channel while the prober is refused.
    const got = Buffer.from(bearer(request) ?? '');
    if (got.length === expected.length && timingSafeEqual(got, expected)) {
      done();
      return;
    }
    refuseIfFailingTooOften(request)
      .then(() => authFailed(request, 'internal token required'))
      .then(() => done(), done);
  }

  const expectedHeader = Buffer.from(`Bearer ${config.ISLET_INTERNAL_TOKEN}`);
  /**
   * Whether an `authorization` header is exactly `Bearer <ISLET_INTERNAL_TOKEN>` (constant time):
   * the runner's own spelling, which the internal call fast path (internal-call-path.ts) takes.
   * Any other header, right or wrong, goes the fastify way through `requireInternal`.
   */
  function internalHeaderIs(header: string): boolean {
    const got = Buffer.from(header);
    return got.length === expectedHeader.length && timingSafeEqual(got, expectedHeader);
  }

  return {
    requireScopes,
    requireScopesOverlappingRateLimit,
    requireInternal,
    internalHeaderIs,
    countIfUncounted,
    keyWatch,
  };
}

export type Auth = ReturnType<typeof createAuth>;

/**
 * The overlapped rate-limit check (`requireScopesOverlappingRateLimit`): a promise to await, which
 * throws its 429, or `undefined` when the request has none pending (its count is made in its
 * admission: no promise and no microtask for it on the submit's path).
 */
export function rateLimitPassed(request: FastifyRequest): Promise<void> | undefined {
  return request.rateLimited;
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new HttpProblem('unauthorized');
  return request.caller;
}
