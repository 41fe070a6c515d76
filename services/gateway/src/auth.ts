/**
 * API-key authentication, scopes and the per-tenant rate limit. Keys arrive as
 * `Authorization: Bearer <key>`; the key's SHA-256 finds the tenant and scopes. The runner's
 * internal channel uses `ISLET_INTERNAL_TOKEN` instead (compared in constant time).
 */
import { timingSafeEqual } from 'node:crypto';
import type { ApiKeyIdentity, Scope, Tenant } from '@islet/core';
import { keys } from '@islet/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';

export interface Caller extends ApiKeyIdentity {
  tenant: Tenant;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

function bearer(request: FastifyRequest): string | undefined {
  const h = request.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(h.trim());
  return m?.[1];
}

export function createAuth(deps: GatewayDeps) {
  const { tenants, redis, config } = deps;

  async function rateLimit(tenant: Tenant) {
    const windowMs = 60_000;
    const now = Date.now();
    const window = Math.floor(now / windowMs);
    const limit = tenant.rateLimitPerMinute ?? config.ISLET_RATE_LIMIT_PER_MINUTE;
    const res = await redis
      .multi()
      .incr(keys.rateWindow(tenant.id, window))
      .expire(keys.rateWindow(tenant.id, window), 61)
      .exec();
    const count = Number(res?.[0]?.[1] ?? 0);
    if (count > limit) {
      const retryAfter = Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000));
      throw new HttpProblem(
        'rate-limited',
        `tenant rate limit of ${limit} requests per minute reached; retry in ${retryAfter}s`,
        { limit, retryAfterSeconds: retryAfter },
        { 'retry-after': String(retryAfter) },
      );
    }
  }

  /**
   * Failed authentication, per client address and minute: past ISLET_AUTH_FAILURES_PER_MINUTE the
   * address is refused (429) before its key is even looked up, until the window ends. Guessing
   * keys is hopeless (256 bits); this bounds what a prober costs the platform and its log.
   */
  const failureWindowMs = 60_000;
  async function refuseIfFailingTooOften(request: FastifyRequest) {
    const now = Date.now();
    const window = Math.floor(now / failureWindowMs);
    const count = Number((await redis.get(keys.authFailures(request.ip, window))) ?? 0);
    const limit = config.ISLET_AUTH_FAILURES_PER_MINUTE;
    if (count >= limit) {
      const retryAfter = Math.max(1, Math.ceil(((window + 1) * failureWindowMs - now) / 1000));
      throw new HttpProblem(
        'rate-limited',
        `too many failed authentications from this address; retry in ${retryAfter}s`,
        { limit, retryAfterSeconds: retryAfter },
        { 'retry-after': String(retryAfter) },
      );
    }
  }
  async function authFailed(request: FastifyRequest, detail: string): Promise<never> {
    const k = keys.authFailures(request.ip, Math.floor(Date.now() / failureWindowMs));
    await redis.multi().incr(k).expire(k, 61).exec();
    throw new HttpProblem('unauthorized', detail);
  }

  /** preHandler: a valid key with every scope listed; sets `request.caller`. */
  function requireScopes(...scopes: Scope[]) {
    return async (request: FastifyRequest, _reply: FastifyReply) => {
      await refuseIfFailingTooOften(request);
      const key = bearer(request);
      if (!key) return authFailed(request, 'send Authorization: Bearer <api key>');
      const identity = await tenants.resolveKey(key);
      if (!identity) return authFailed(request, 'unknown API key');
      const tenant = await tenants.getTenant(identity.tenantId);
      if (!tenant) throw new HttpProblem('unauthorized', "the key's tenant no longer exists");
      const missing = scopes.filter((s) => !identity.scopes.includes(s));
      if (missing.length)
        throw new HttpProblem('forbidden', `this API key lacks the scope ${missing.join(', ')}`, {
          missingScopes: missing,
        });
      await rateLimit(tenant);
      request.caller = { ...identity, tenant };
    };
  }

  const expected = Buffer.from(config.ISLET_INTERNAL_TOKEN);
  /** preHandler for `/internal/*`: the runner's shared token. */
  async function requireInternal(request: FastifyRequest) {
    // The token is compared first (no lookup to protect): runners sharing an address with a
    // prober (one node, one NAT) must keep their channel while the prober is refused.
    const got = Buffer.from(bearer(request) ?? '');
    if (got.length === expected.length && timingSafeEqual(got, expected)) return;
    await refuseIfFailingTooOften(request);
    return authFailed(request, 'internal token required');
  }

  return { requireScopes, requireInternal };
}

export type Auth = ReturnType<typeof createAuth>;

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new HttpProblem('unauthorized');
  return request.caller;
}
