import { createHash } from 'node:crypto';
import { Command, type Redis } from 'ioredis';

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
 * A command whose arguments hold a Buffer, encoded with one text-to-bytes conversion per stretch
 * of text between its Buffers. ioredis encodes such a command part by part: each argument's length
 * twice and one copy call per part (three a text argument), ~280 calls for the ~105 arguments of a
 * run's end with BullMQ's completion (whose options BullMQ packs into a Buffer), 0.1–0.25 ms of the
 * runner's main thread on a run's path between the host's `done` and the end's write
 * (test/bench/README.md, round 20). The bytes are ioredis's, the same RESP; commands without a Buffer go
 * as ioredis writes them (one string). The stretches are written straight into the one buffer sent
 * (measured first, then filled): no buffer a stretch and no concatenation of them, whose copies of a
 * run's end or submit (4–5 KB each, past Node's buffer pool) were malloc'd afresh each run, and
 * faulted in anew after glibc gave the heap's top back (round 24 `seq-sweep`).
 */
export class OneCopyCommand extends Command {
  override toWritable(socket: object): string | Buffer {
    const self = this as unknown as { bufferMode?: boolean; args: (string | Buffer)[]; name: string };
    if (!self.bufferMode) return super.toWritable(socket);
    // Text stretches and Buffers in their order (a stretch, then a Buffer, …, then the last stretch).
    const parts: (string | Buffer)[] = [];
    let size = 0;
    let text = `*${self.args.length + 1}\r\n$${Buffer.byteLength(self.name)}\r\n${self.name}\r\n`;
    for (const arg of self.args) {
      if (Buffer.isBuffer(arg)) {
        text += `$${arg.length}\r\n`;
        size += Buffer.byteLength(text) + arg.length;
        parts.push(text, arg);
        text = '\r\n';
      } else text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
    }
    size += Buffer.byteLength(text);
    parts.push(text);
    const out = Buffer.allocUnsafe(size);
    let at = 0;
    for (const part of parts)
      at += typeof part === 'string' ? out.write(part, at, 'utf8') : part.copy(out, at);
    return out;
  }
}

/** Whether an argument is a Buffer (BullMQ's packed options ride among a fused script's arguments). */
const anyBuffer = (args: readonly unknown[]): boolean => args.some((a) => Buffer.isBuffer(a));

/**
 * EVALSHA, or EVAL, through `OneCopyCommand` when an argument is a Buffer on a plain client
 * (a Cluster's routing and ioredis's auto-pipelining stay with ioredis's own commands).
 */
function send(
  redis: Redis,
  name: 'evalsha' | 'eval',
  head: string,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  // Read once: a runner's client is BullMQ's Proxy of ioredis, where every property read runs
  // its trap (an `in`, a `Reflect.get`, a bind for own functions).
  const clientOptions = redis.options;
  const plain = !(redis as { isCluster?: boolean }).isCluster && !clientOptions?.enableAutoPipelining;
  if (plain && anyBuffer(args)) {
    // Replies as `redis.evalsha` gives them (text; ioredis's `…Buffer` commands alone give bytes).
    const options = {
      replyEncoding: 'utf8' as const,
      ...(clientOptions.keyPrefix ? { keyPrefix: clientOptions.keyPrefix } : {}),
      ...(clientOptions.showFriendlyErrorStack ? { errorStack: new Error() } : {}),
    };
    const command = new OneCopyCommand(name, [head, keys.length, ...keys, ...args], options);
    redis.sendCommand(command);
    return command.promise as Promise<unknown>;
  }
  return name === 'evalsha'
    ? redis.evalsha(head, keys.length, ...keys, ...args)
    : redis.eval(head, keys.length, ...keys, ...args);
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
    return send(redis, 'eval', this.source, keys, args);
  }

  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await send(redis, 'evalsha', this.sha, keys, args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
      return send(redis, 'eval', this.source, keys, args);
    }
  }
}
