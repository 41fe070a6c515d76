/**
 * Tenants and their API keys. A key is shown once at creation; Redis keeps only its SHA-256,
 * so a Redis dump does not leak usable keys. Keys are long random strings, so a fast hash is
 * enough (no dictionary to guess from).
 */
import { hash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { channels, keys } from './keys.ts';

/**
 * `sessions.admin`: read every session of the tenant, not only the key's principal's own.
 * `workflows`: a principal that is another part of the platform (a workflow) and may start a run
 * with no deadline (`timeoutMs: null`), which a chat's run_code call never can.
 */
export const SCOPES = [
  'apps.use',
  'sessions.read',
  'decisions',
  'platform.admin',
  'sessions.admin',
  'workflows',
] as const;
export type Scope = (typeof SCOPES)[number];

export interface Tenant {
  id: string;
  name: string;
  /** Overrides ISLET_RATE_LIMIT_PER_MINUTE when set. */
  rateLimitPerMinute?: number;
  /** Overrides ISLET_MAX_IN_FLIGHT_RUNS when set. */
  maxInFlightRuns?: number;
  createdAt: number;
}

export interface ApiKeyIdentity {
  keyId: string;
  /**
   * Who the key belongs to (a user, a service, a workflow). Sessions belong to the principal that
   * opened them. Keys made before principals existed are their own principal (`principalOf`).
   */
  principal?: string;
  tenantId: string;
  scopes: Scope[];
  /** When the key stops working, ms since epoch (set at creation, or by a rotation's grace). */
  expiresAt?: number;
}

/** What a key's listing shows: never its secret. Times are ms since epoch, `null` when none. */
export interface ApiKeyInfo {
  id: string;
  /** The secret's first characters, enough to tell keys apart. */
  prefix: string;
  scopes: Scope[];
  principal: string;
  created: number;
  lastUsed: number | null;
  expiresAt: number | null;
  /** A rotated-away secret still accepted until then (ms), or absent. */
  previousExpiresAt?: number;
}

/** A key's listing as stored (tenant-store's `tenantApiKeys` hash), with its secrets' hashes. */
interface StoredKeyInfo {
  id: string;
  prefix: string;
  scopes: Scope[];
  principal: string;
  created: number;
  expiresAt?: number;
  hash: string;
  previous?: { hash: string; expiresAt: number };
}

/** Whether an identity read from Redis still authenticates at `now`. */
export function keyUsable(identity: ApiKeyIdentity | null, now = Date.now()): identity is ApiKeyIdentity {
  return identity !== null && (identity.expiresAt === undefined || identity.expiresAt > now);
}

const PREFIX_CHARS = 12;

/** Every authenticated request hashes its key: one-shot, without a Hash stream object per call. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

const TENANT_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const PRINCIPAL = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

/** The principal a key belongs to; a key made before principals existed is its own. */
export function principalOf(identity: ApiKeyIdentity): string {
  return identity.principal ?? identity.keyId;
}

export function createTenantStore(redis: Redis) {
  return {
    async createTenant(input: {
      id?: string;
      name: string;
      rateLimitPerMinute?: number;
      maxInFlightRuns?: number;
    }): Promise<Tenant> {
      const id = input.id ?? `t-${randomBytes(6).toString('hex')}`;
      if (!TENANT_ID.test(id)) throw new Error(`tenant id must match ${TENANT_ID}`);
      const tenant: Tenant = { id, name: input.name, createdAt: Date.now() };
      if (input.rateLimitPerMinute) tenant.rateLimitPerMinute = input.rateLimitPerMinute;
      if (input.maxInFlightRuns) tenant.maxInFlightRuns = input.maxInFlightRuns;
      // Two slots (the global tenants set, the tenant's record): index first, record second. A
      // crash in between leaves an id with no record, which every reader skips (listTenants,
      // the recovery loop finds an empty in-flight set) and a retried create completes.
      await redis.sadd(keys.tenants(), id);
      await redis.set(keys.tenant(id), JSON.stringify(tenant));
      return tenant;
    },
    async getTenant(id: string): Promise<Tenant | null> {
      const raw = await redis.get(keys.tenant(id));
      return raw ? (JSON.parse(raw) as Tenant) : null;
    },
    async listTenants(): Promise<Tenant[]> {
      const ids = await redis.smembers(keys.tenants());
      const out: Tenant[] = [];
      for (const id of ids.sort()) {
        const t = await this.getTenant(id);
        if (t) out.push(t);
      }
      return out;
    },
    /**
     * Creates a key; pass `key` to fix its text (dev stacks), otherwise a random one is made.
     * `expiresAt` (ms): the key stops working then (Redis drops it too).
     */
    async createKey(
      tenantId: string,
      scopes: Scope[],
      options: { key?: string; principal?: string; expiresAt?: number } = {},
    ) {
      if (!(await this.getTenant(tenantId))) throw new Error(`no tenant "${tenantId}"`);
      if (options.principal !== undefined && !PRINCIPAL.test(options.principal))
        throw new Error(`principal must match ${PRINCIPAL}`);
      if (options.expiresAt !== undefined && options.expiresAt <= Date.now())
        throw new Error('expiresAt must be in the future');
      const key = options.key ?? `isk_${randomBytes(24).toString('base64url')}`;
      const keyId = `key-${randomBytes(6).toString('hex')}`;
      const identity: ApiKeyIdentity = {
        keyId,
        principal: options.principal ?? keyId,
        tenantId,
        scopes: [...new Set(scopes)],
      };
      if (options.expiresAt !== undefined) identity.expiresAt = options.expiresAt;
      const info: StoredKeyInfo = {
        id: keyId,
        prefix: key.slice(0, PREFIX_CHARS),
        scopes: identity.scopes,
        principal: identity.principal ?? keyId,
        created: Date.now(),
        hash: hashApiKey(key),
        ...(identity.expiresAt !== undefined ? { expiresAt: identity.expiresAt } : {}),
      };
      // Two slots (the tenant's listing, the global key): listing first, so a usable key is always
      // listed (and revocable); a crash in between leaves a listed key no secret reaches.
      await redis.hset(keys.tenantApiKeys(tenantId), keyId, JSON.stringify(info));
      await writeIdentity(info.hash, identity);
      return { key, ...identity };
    },
    async resolveKey(key: string): Promise<ApiKeyIdentity | null> {
      return this.resolveKeyHash(hashApiKey(key));
    },
    /** The identity of a key by its SHA-256 (what Redis and the caches hold), if it still works. */
    async resolveKeyHash(hash: string): Promise<ApiKeyIdentity | null> {
      const identity = await this.readKeyIdentity(hash);
      return keyUsable(identity) ? identity : null;
    },
    /** The identity stored for a key's SHA-256, usable or not (a cache checks expiry on each read). */
    async readKeyIdentity(hash: string): Promise<ApiKeyIdentity | null> {
      const raw = await redis.get(keys.apiKey(hash));
      return raw ? (JSON.parse(raw) as ApiKeyIdentity) : null;
    },
    /** The tenant's keys, oldest first (keys made before listings existed are not listed). */
    async listKeys(tenantId: string): Promise<ApiKeyInfo[]> {
      const [stored, used] = await Promise.all([
        redis.hgetall(keys.tenantApiKeys(tenantId)),
        redis.hgetall(keys.tenantApiKeysUsed(tenantId)),
      ]);
      const now = Date.now();
      return Object.values(stored)
        .map((raw) => JSON.parse(raw) as StoredKeyInfo)
        .sort((a, b) => a.created - b.created || a.id.localeCompare(b.id))
        .map((k) => ({
          id: k.id,
          prefix: k.prefix,
          scopes: k.scopes,
          principal: k.principal,
          created: k.created,
          lastUsed: used[k.id] ? Number(used[k.id]) : null,
          expiresAt: k.expiresAt ?? null,
          ...(k.previous && k.previous.expiresAt > now ? { previousExpiresAt: k.previous.expiresAt } : {}),
        }));
    },
    /**
     * Deletes a key (and a rotated-away secret still in its grace). Returns the hashes whose
     * identities were deleted, for the caller to drop from caches; null when the tenant has no such key.
     */
    async revokeKey(tenantId: string, keyId: string): Promise<string[] | null> {
      const info = await readInfo(tenantId, keyId);
      if (!info) return null;
      const hashes = [info.hash, ...(info.previous ? [info.previous.hash] : [])];
      // Secrets first: once the call returns, nothing authenticates with them.
      for (const hash of hashes) await redis.del(keys.apiKey(hash));
      await redis.hdel(keys.tenantApiKeys(tenantId), keyId);
      await redis.hdel(keys.tenantApiKeysUsed(tenantId), keyId);
      await announce(hashes, true);
      return hashes;
    },
    /**
     * A new secret for the key (same id, scopes, principal, expiry); the current one keeps working
     * for `graceSeconds` (0: stops now). A secret rotated away earlier and still in its grace
     * stops now (one grace at a time). Null when the tenant has no such key. `dropped`: hashes
     * whose identities were deleted or shortened, for the caller to drop from caches.
     */
    async rotateKey(tenantId: string, keyId: string, graceSeconds: number) {
      const info = await readInfo(tenantId, keyId);
      if (!info) return null;
      const raw = await redis.get(keys.apiKey(info.hash));
      const old = raw ? (JSON.parse(raw) as ApiKeyIdentity) : null;
      const now = Date.now();
      const key = `isk_${randomBytes(24).toString('base64url')}`;
      const identity: ApiKeyIdentity = {
        keyId,
        principal: info.principal,
        tenantId,
        scopes: info.scopes,
        ...(info.expiresAt !== undefined ? { expiresAt: info.expiresAt } : {}),
      };
      const dropped = [info.hash, ...(info.previous ? [info.previous.hash] : [])];
      const graceEnd = Math.min(now + graceSeconds * 1000, info.expiresAt ?? Number.POSITIVE_INFINITY);
      const next: StoredKeyInfo = { ...info, prefix: key.slice(0, PREFIX_CHARS), hash: hashApiKey(key) };
      delete next.previous;
      if (graceSeconds > 0 && keyUsable(old, now) && graceEnd > now)
        next.previous = { hash: info.hash, expiresAt: graceEnd };
      await writeIdentity(next.hash, identity);
      await redis.hset(keys.tenantApiKeys(tenantId), keyId, JSON.stringify(next));
      if (info.previous) await redis.del(keys.apiKey(info.previous.hash));
      if (next.previous && old) await writeIdentity(info.hash, { ...old, expiresAt: graceEnd });
      else await redis.del(keys.apiKey(info.hash));
      if (next.previous) await announce([info.hash], false);
      await announce(next.previous ? dropped.slice(1) : dropped, true);
      return {
        key,
        ...identity,
        ...(next.previous ? { previousExpiresAt: next.previous.expiresAt } : {}),
        dropped,
      };
    },
    /** Records that the key authenticated at `now` (callers throttle: at most once a minute). */
    async touchKey(tenantId: string, keyId: string, now = Date.now()): Promise<void> {
      await redis.hset(keys.tenantApiKeysUsed(tenantId), keyId, String(now));
    },
  };

  /**
   * Tells every gateway that these identities changed (their read caches drop them) and, for
   * `gone`, that they stopped working (their open event streams end).
   */
  async function announce(hashes: string[], gone: boolean): Promise<void> {
    for (const hash of hashes) {
      await redis.publish(channels.gatewayCache, `api-key:${hash}`);
      if (gone) await redis.publish(channels.gatewayCache, `key-revoked:${hash}`);
    }
  }

  async function readInfo(tenantId: string, keyId: string): Promise<StoredKeyInfo | null> {
    const raw = await redis.hget(keys.tenantApiKeys(tenantId), keyId);
    return raw ? (JSON.parse(raw) as StoredKeyInfo) : null;
  }

  /** Writes an identity; one with an expiry leaves Redis at it (readers check it too: `keyUsable`). */
  async function writeIdentity(hash: string, identity: ApiKeyIdentity): Promise<void> {
    const value = JSON.stringify(identity);
    if (identity.expiresAt === undefined) await redis.set(keys.apiKey(hash), value);
    else await redis.set(keys.apiKey(hash), value, 'PXAT', identity.expiresAt);
  }
}

export type TenantStore = ReturnType<typeof createTenantStore>;
