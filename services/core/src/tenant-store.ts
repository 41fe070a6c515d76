/**
 * Tenants and their API keys. A key is shown once at creation; Redis keeps only its SHA-256,
 * so a Redis dump does not leak usable keys. Keys are long random strings, so a fast hash is
 * enough (no dictionary to guess from).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { keys } from './keys.ts';

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
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
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
      // the orphan sweep finds an empty in-flight set) and a retried create completes.
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
    /** Creates a key; pass `key` to fix its text (dev stacks), otherwise a random one is made. */
    async createKey(tenantId: string, scopes: Scope[], options: { key?: string; principal?: string } = {}) {
      if (!(await this.getTenant(tenantId))) throw new Error(`no tenant "${tenantId}"`);
      if (options.principal !== undefined && !PRINCIPAL.test(options.principal))
        throw new Error(`principal must match ${PRINCIPAL}`);
      const key = options.key ?? `isk_${randomBytes(24).toString('base64url')}`;
      const keyId = `key-${randomBytes(6).toString('hex')}`;
      const identity: ApiKeyIdentity = {
        keyId,
        principal: options.principal ?? keyId,
        tenantId,
        scopes: [...new Set(scopes)],
      };
      await redis.set(keys.apiKey(hashApiKey(key)), JSON.stringify(identity));
      return { key, ...identity };
    },
    async resolveKey(key: string): Promise<ApiKeyIdentity | null> {
      const raw = await redis.get(keys.apiKey(hashApiKey(key)));
      return raw ? (JSON.parse(raw) as ApiKeyIdentity) : null;
    },
  };
}

export type TenantStore = ReturnType<typeof createTenantStore>;
