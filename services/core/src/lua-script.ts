import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A hash's fields from the flattened form a script returns for HGETALL (`[field, value, …]`);
 * anything else, such as cjson's `{}` for an empty table, is an empty hash.
 */
export function fieldsOf(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

/**
 * Lua that counts one more request in a fixed one-minute window's counter `key` (a KEYS[i]
 * expression) into the local `into`; the expiry (61 s, past the window's end) is set once, by the
 * INCR that creates the counter. One definition for the gateway's own counts and a submit's
 * admission, which count in the same counters.
 */
export const countInWindowLua = (key: string, into: string) => `
local ${into} = redis.call('INCR', ${key})
if ${into} == 1 then redis.call('EXPIRE', ${key}, 61) end
`;

/**
 * The same text, held as a one-byte string when it is ASCII. A source read from a file with one
 * non-ASCII character (a comment's dash, compacted away) stays a two-byte string, and so does every
 * command it is concatenated into: each EVAL of it (`runInOrder`, on a submit's path) was encoded
 * through V8's slower two-byte path.
 */
export function oneByte(text: string): string {
  // UTF-8 takes one byte a character exactly when every character is ASCII.
  return Buffer.byteLength(text) === text.length ? Buffer.from(text, 'latin1').toString('latin1') : text;
}

/**
 * A Lua script sent as EVALSHA (a 40-byte hash instead of the source on every call), falling back
 * to EVAL when the node does not know it yet (first use, a restart, a Cluster node just promoted).
 * Its keys must share one hash slot (see keys.ts).
 */
export class LuaScript {
  readonly source: string;
  readonly sha: string;

  constructor(source: string) {
    this.source = oneByte(source);
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * As EVAL, always (the source, not its hash): for a script that other commands are pipelined
   * behind on the same connection and must run first. EVALSHA's NOSCRIPT fallback would send the
   * EVAL after them.
   */
  runInOrder(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    return redis.eval(this.source, keys.length, ...keys, ...args);
  }

  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
