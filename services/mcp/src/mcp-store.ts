/**
 * Everything `@islet/mcp` keeps in Redis, so any gateway replica serves any MCP request: the MCP
 * sessions (tenant, principal, elicitation capability), which run a JSON-RPC request started (a
 * client's cancel notification may reach another replica), the answers to Islet's elicitations
 * (stored only for an id Islet minted and still waits for), and each tenant's surface settings.
 * The only file of the package that sends a Redis command.
 */
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import type { McpSettings } from './mcp-settings.ts';

/** An MCP session as stored (its id is the key). */
export interface StoredMcpSession {
  tenant: string;
  /** The client declared the `elicitation` capability at initialize. */
  elicitation: boolean;
  /** Who opened it: another principal of the tenant does not find it (sessions made before: any). */
  principal?: string;
}

/** The value of an elicitation's key while Islet waits for its answer. */
const AWAITED = '?';

/** A request's run id is kept this long, s: a cancel comes while the call is open. */
const REQUEST_RUN_TTL_SECONDS = 3600;

export function createMcpStore(redis: Redis) {
  return {
    sessions: {
      async open(id: string, session: StoredMcpSession, ttlSeconds: number): Promise<void> {
        await redis.set(keys.mcpSession(id), JSON.stringify(session), 'EX', ttlSeconds);
      },
      async get(id: string): Promise<StoredMcpSession | undefined> {
        const raw = await redis.get(keys.mcpSession(id));
        return raw ? (JSON.parse(raw) as StoredMcpSession) : undefined;
      },
      /** Another `ttlSeconds` for a session its owner used. */
      async renew(id: string, ttlSeconds: number): Promise<void> {
        await redis.expire(keys.mcpSession(id), ttlSeconds);
      },
      async end(id: string): Promise<void> {
        await redis.del(keys.mcpSession(id));
      },
    },

    requestRuns: {
      async set(sessionId: string, requestId: string, runId: string): Promise<void> {
        await redis.set(keys.mcpRequestRun(sessionId, requestId), runId, 'EX', REQUEST_RUN_TTL_SECONDS);
      },
      async get(sessionId: string, requestId: string): Promise<string | null> {
        return redis.get(keys.mcpRequestRun(sessionId, requestId));
      },
    },

    elicitations: {
      /** Marks an id Islet minted as awaited, for `ttlMs`: only then is an answer to it stored. */
      async await(sessionId: string, id: string, ttlMs: number): Promise<void> {
        await redis.set(keys.mcpElicitation(sessionId, id), AWAITED, 'PX', ttlMs);
      },
      /** Stores an answer (the JSON-RPC response) if its id is awaited (SET XX keeps out the rest). */
      async answer(sessionId: string, id: string, message: unknown): Promise<void> {
        await redis.set(keys.mcpElicitation(sessionId, id), JSON.stringify(message), 'KEEPTTL', 'XX');
      },
      /** The answer, taken (deleted) once it came; undefined while still awaited. */
      async take(sessionId: string, id: string): Promise<unknown> {
        const key = keys.mcpElicitation(sessionId, id);
        const raw = await redis.get(key);
        if (!raw || raw === AWAITED) return undefined;
        await redis.del(key);
        return JSON.parse(raw) as unknown;
      },
      async drop(sessionId: string, id: string): Promise<void> {
        await redis.del(keys.mcpElicitation(sessionId, id));
      },
    },

    settings: {
      async get(tenant: string): Promise<McpSettings> {
        const raw = await redis.get(keys.mcpSettings(tenant));
        return raw ? (JSON.parse(raw) as McpSettings) : { tools: {} };
      },
      async set(tenant: string, settings: McpSettings): Promise<McpSettings> {
        await redis.set(keys.mcpSettings(tenant), JSON.stringify(settings));
        return settings;
      },
    },
  };
}

export type McpStore = ReturnType<typeof createMcpStore>;
