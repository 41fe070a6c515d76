/** A tenant's connections in one Redis hash (id → JSON), secrets sealed, reads through the cache. */

import { randomBytes } from 'node:crypto';
import { keys, type Sealer } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { newSigningSecret, openSigning, rotateSigning, sealSigning } from './app-signing.ts';
import {
  type Connection,
  type ConnectionInput,
  type CreateRefusal,
  reservedNameProblem,
  slugify,
} from './connections.ts';
import type { CacheHub } from './read-cache.ts';

/** HSET only if the field still holds what was read. */
const SWAP_FIELD = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) return 1 end return 0`;

/**
 * `caches`: binding calls read their connection on every call; through the cache a program's
 * calls cost no Redis read for it, and a change (replace, remove) drops it on every replica.
 */
// KEYS[1] the tenant's connections. ARGV: id, JSON, the most the tenant may have. 1: stored.
const CREATE_UNDER_QUOTA = new LuaScript(`
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`);

const quotaRefusal = (max: number): CreateRefusal => ({
  ok: false,
  code: 'connection-quota-exceeded',
  detail: `the tenant has ${max} connections, the most it may have (ISLET_TENANT_MAX_CONNECTIONS); delete one first`,
});

/** `maxConnections`: the most connections one tenant may hold (each may hold gateway resources). */
export function createConnectionStore(
  redis: Redis,
  sealer: Sealer,
  caches?: CacheHub,
  maxConnections = Number.POSITIVE_INFINITY,
) {
  const read = async (key: string): Promise<Connection | null> => {
    const cut = key.indexOf('\0');
    const raw = await redis.hget(keys.connections(key.slice(0, cut)), key.slice(cut + 1));
    return raw ? (JSON.parse(raw) as Connection) : null;
  };
  const cache = caches?.cache('connection', read);
  const cacheKey = (tenant: string, id: string) => `${tenant}\0${id}`;
  const readAll = async (tenant: string): Promise<Connection[]> => {
    const all = await redis.hvals(keys.connections(tenant));
    return all.map((raw) => JSON.parse(raw) as Connection).sort((a, b) => a.createdAt - b.createdAt);
  };
  // Every submit that names no connection reads the tenant's whole list: cached like a single
  // connection, and dropped on every replica by any change to one of them, a create included.
  const lists = caches?.cache('connections', readAll);
  const changed = async (tenant: string, id: string) => {
    await cache?.invalidate(cacheKey(tenant, id));
    await lists?.invalidate(tenant);
  };
  return {
    async create(
      tenant: string,
      input: ConnectionInput,
      sealedHeaders?: string,
    ): Promise<{ ok: true; connection: Connection; signingSecret?: string } | CreateRefusal> {
      const slug = slugify(input.name);
      const reserved = reservedNameProblem(input);
      if (reserved) return reserved;
      // Read, not cached: a name another replica took a moment ago is a conflict.
      const existing = await readAll(tenant);
      if (existing.length >= maxConnections) return quotaRefusal(maxConnections);
      if (existing.some((c) => c.slug === slug))
        return {
          ok: false,
          code: 'conflict',
          detail: `a connection with binding name "${slug}" already exists`,
        };
      const seen = new Set<string>();
      for (const n of [...input.tools, ...input.resources, ...input.prompts].map((x) => slugify(x.name))) {
        if (seen.has(n))
          return {
            ok: false,
            code: 'conflict',
            detail: `two capabilities map to the binding name "${slug}.${n}"`,
          };
        seen.add(n);
      }
      const { headers: _sealedSeparately, ...rest } = input;
      // Every http App request is signed: the secret exists from the start, not on request.
      const signingSecret = input.kind === 'http' ? newSigningSecret() : undefined;
      const connection: Connection = {
        ...rest,
        id: `conn-${randomBytes(6).toString('hex')}`,
        slug,
        createdAt: Date.now(),
        ...(sealedHeaders ? { sealedHeaders } : {}),
        ...(signingSecret ? { sealedSigning: sealSigning(sealer, { current: signingSecret }) } : {}),
      };
      // The count and the write are one step: parallel creates cannot pass the quota together.
      const stored = await CREATE_UNDER_QUOTA.run(
        redis,
        [keys.connections(tenant)],
        [connection.id, JSON.stringify(connection), maxConnections],
      );
      if (Number(stored) !== 1) return quotaRefusal(maxConnections);
      await lists?.invalidate(tenant);
      return { ok: true, connection, ...(signingSecret ? { signingSecret } : {}) };
    },
    /**
     * A new signing secret for an http connection; the old one keeps signing for
     * `previousTtlSeconds` (0: stops at once). Null when there is no such http connection.
     */
    async rotateSigningSecret(
      tenant: string,
      id: string,
      previousTtlSeconds: number,
    ): Promise<{ signingSecret: string; previousExpiresAt?: number } | null> {
      const key = keys.connections(tenant);
      // Compare-and-set: of two rotations at once, each returns a secret that really signs (the
      // loser rotates again on top of the winner), never one that was overwritten.
      for (;;) {
        const raw = await redis.hget(key, id);
        const c = raw ? (JSON.parse(raw) as Connection) : null;
        if (!raw || !c || c.kind !== 'http') return null;
        const state = rotateSigning(
          c.sealedSigning ? openSigning(sealer, c.sealedSigning) : { current: newSigningSecret() },
          c.sealedSigning ? previousTtlSeconds : 0,
        );
        const next = JSON.stringify({ ...c, sealedSigning: sealSigning(sealer, state) });
        if ((await redis.eval(SWAP_FIELD, 1, key, id, raw, next)) !== 1) continue;
        await changed(tenant, id);
        return {
          signingSecret: state.current,
          ...(state.previous ? { previousExpiresAt: state.previous.expiresAt } : {}),
        };
      }
    },
    // Not `async`: the cache's own promise, not one more that adopts it (two microtask hops on
    // every binding call's read of its connection; round 40 `par-calls`). Neither way throws.
    get(tenant: string, id: string): Promise<Connection | null> {
      return (cache ?? { get: read }).get(cacheKey(tenant, id));
    },
    /**
     * `get`'s connection from the cache when it is there and read (read-cache.ts `peek`), else
     * `undefined` (then call `get`): a submit's run built without a promise (run-build.ts).
     */
    peek(tenant: string, id: string): Connection | undefined {
      return cache?.peek(cacheKey(tenant, id));
    },
    /** As `peek`, for `list` (the cached array itself: read it, do not change it). */
    peekList(tenant: string): readonly Connection[] | undefined {
      return lists?.peek(tenant);
    },
    async list(tenant: string): Promise<Connection[]> {
      // A copy: the cached array is shared by every caller.
      return lists ? [...((await lists.get(tenant)) ?? [])] : readAll(tenant);
    },
    /** Rewrites an existing connection (an `mcp` server's refreshed tool list); false if it is gone. */
    async replace(tenant: string, connection: Connection): Promise<boolean> {
      const key = keys.connections(tenant);
      if (!(await redis.hexists(key, connection.id))) return false;
      await redis.hset(key, connection.id, JSON.stringify(connection));
      await changed(tenant, connection.id);
      return true;
    },
    async remove(tenant: string, id: string): Promise<boolean> {
      const removed = (await redis.hdel(keys.connections(tenant), id)) === 1;
      await changed(tenant, id);
      return removed;
    },
  };
}

export type ConnectionStore = ReturnType<typeof createConnectionStore>;
