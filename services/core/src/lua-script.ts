import { createHash } from 'node:crypto';
import { Command, type Redis } from 'ioredis';
import { keySlot } from './cluster-slot.ts';
import { rawClient } from './raw-client.ts';

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

/** A command's argument as `send` takes it (ioredis's `toArg` makes text of a number). */
type Arg = string | number | Buffer;

/** ioredis's command options `send` passes on. */
interface OneCopyOptions {
  replyEncoding?: 'utf8';
  keyPrefix?: string;
  errorStack?: Error;
}

const NO_ARGS: never[] = [];

/** How many decimal digits `n` (a byte length) has. */
const digitsOf = (n: number): number =>
  n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10_000 ? 4 : n < 100_000 ? 5 : String(n).length;

/**
 * `$<n>\r\n` for each length under 1024 (most arguments'), made once: making text of the number
 * an argument was ~a third of the stretch's making (an in-process probe, round 43).
 */
const HEADS = Array.from({ length: 1024 }, (_, n) => `$${n}\r\n`);
const headOf = (n: number): string => (n < 1024 ? (HEADS[n] as string) : `$${n}\r\n`);

/**
 * The command as its stretches of text between its Buffers (one stretch for a command of text
 * only: a claim's, an outcome's), each stretch holding the Buffers' `$<length>` headers, when every
 * stretch is ASCII; else `undefined`. Built first on the guess that every text argument is ASCII
 * (its UTF-8 length then its `length`), the guess checked once a stretch: a string is ASCII exactly
 * when its UTF-8 length is its length, and any non-ASCII argument makes its stretch longer in
 * UTF-8. One native measure and one native write a stretch, where a measure and a write an
 * argument were 4–8 µs of a binding call and 46 µs of a submit (~77 arguments, two of them
 * BullMQ's packed options: 3 stretches; round 42 `par-cpu`, round 43 `send-floor`). The measure
 * flattens the stretch in place, so its write copies it once.
 */
function asciiParts(name: string, args: (string | Buffer)[]): (string | Buffer)[] | undefined {
  const parts: (string | Buffer)[] = [];
  let text = `*${args.length + 1}\r\n$${name.length}\r\n${name}\r\n`;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string | Buffer;
    if (typeof arg === 'string') {
      text += `${headOf(arg.length)}${arg}\r\n`;
      continue;
    }
    text += headOf(arg.length);
    if (Buffer.byteLength(text) !== text.length) return undefined;
    parts.push(text, arg);
    text = '\r\n';
  }
  if (Buffer.byteLength(text) !== text.length) return undefined;
  parts.push(text);
  return parts;
}

/**
 * A command written straight into the one buffer handed to the socket. ioredis encodes a command
 * whose arguments hold a Buffer part by part: each argument's length twice and one copy call per
 * part (three a text argument), ~280 calls for the ~105 arguments of a run's end with BullMQ's
 * completion (whose options BullMQ packs into a Buffer), 0.1–0.25 ms of the runner's main thread on
 * a run's path between the host's `done` and the end's write (test/bench/README.md, round 20). A
 * command of text only it builds as one string, a rope of ~4 strings an argument that the socket's
 * write flattens into a copy before encoding it: since round 38 (`call-bisect`) such a command
 * (a binding call's claim and outcome, on every call) goes into one buffer too. The bytes are
 * ioredis's, the same RESP. One buffer, measured first and then filled: no buffer a part and no
 * concatenation, whose copies of a run's end or submit (4–5 KB each, past Node's buffer pool) were
 * malloc'd afresh each run, and faulted in anew after glibc gave the heap's top back (round 24
 * `seq-sweep`).
 *
 * The arguments are taken as `send` made them, flat and this command's own: ioredis's constructor
 * would copy them (`flat()`) and walk them again to make text of their numbers; here that is one
 * pass. Each text argument's UTF-8 length is measured once, and its `$<length>` header is written
 * as bytes into the buffer: until round 37 the text between two Buffers was first concatenated
 * into one string (a rope of ~3 small strings an argument, flattened by its length's measure),
 * ~14 KB of a submit's ~104 KB of garbage (test/bench/README.md, round 37 `submit-gw`). Since
 * round 43 (`resp-encoder`) a command whose text is ASCII is measured and written a stretch at a
 * time (`asciiParts`); the per-argument path is for non-ASCII text.
 */
export class OneCopyCommand extends Command {
  constructor(name: string, args: Arg[], options: OneCopyOptions = {}) {
    // A key prefix is ioredis's to apply to the keys: that command is made as ioredis makes it.
    super(name, options.keyPrefix ? args : NO_ARGS, options);
    if (options.keyPrefix) return;
    const self = this as unknown as { args: Arg[]; bufferMode?: boolean };
    for (let i = 0; i < args.length; i++) {
      const arg = args[i];
      if (typeof arg === 'string' || Buffer.isBuffer(arg)) continue;
      // As ioredis's `toArg`: null and undefined are empty, anything else its String.
      args[i] = arg === null || arg === undefined ? '' : String(arg);
    }
    self.args = args;
    // `toWritable`'s one buffer, with or without a Buffer among the arguments.
    self.bufferMode = true;
  }

  /**
   * A script call's slot from its first key, where `send` put it (after the hash and the key count),
   * without ioredis's `getKeys` (its key-index array and the command's keys array, ~2.5 KB a run of
   * the runner's allocations on a Cluster: round 51 `cluster-path`). A key prefix's command, whose
   * keys ioredis has already found (`keys` set), and any other command keep ioredis's reading.
   */
  // ioredis declares `number`; it returns null for a command without a key, as this does.
  override getSlot(): number {
    const self = this as unknown as { slot?: number | null; keys?: unknown; name: string; args: Arg[] };
    if (
      self.slot !== undefined ||
      self.keys !== undefined ||
      (self.name !== 'evalsha' && self.name !== 'eval')
    )
      return super.getSlot();
    const key = Number(self.args[1]) > 0 ? self.args[2] : undefined;
    self.slot = key === undefined ? null : keySlot(key as string | Buffer);
    return self.slot as number;
  }

  override toWritable(socket: object): string | Buffer {
    const self = this as unknown as { bufferMode?: boolean; args: (string | Buffer)[]; name: string };
    if (!self.bufferMode) return super.toWritable(socket);
    const args = self.args;
    const count = args.length;
    const parts = asciiParts(self.name, args);
    if (parts !== undefined) {
      let size = 0;
      for (let i = 0; i < parts.length; i++) size += (parts[i] as string | Buffer).length;
      const out = Buffer.allocUnsafe(size);
      let at = 0;
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i] as string | Buffer;
        // Text alternates with Buffers, text first and last.
        at += typeof part === 'string' ? out.write(part, at, part.length, 'latin1') : part.copy(out, at);
      }
      return out;
    }
    // Each argument's byte length, measured once (the header and the size need it).
    const lengths = new Array<number>(count);
    const head = `*${count + 1}\r\n$${Buffer.byteLength(self.name)}\r\n${self.name}\r\n`;
    let size = Buffer.byteLength(head);
    for (let i = 0; i < count; i++) {
      const arg = args[i] as string | Buffer;
      const length = typeof arg === 'string' ? Buffer.byteLength(arg) : arg.length;
      lengths[i] = length;
      // `$<length>\r\n<bytes>\r\n`
      size += digitsOf(length) + length + 5;
    }
    const out = Buffer.allocUnsafe(size);
    let at = out.write(head, 0, 'utf8');
    for (let i = 0; i < count; i++) {
      const arg = args[i] as string | Buffer;
      const length = lengths[i] as number;
      // `$<length>\r\n`: the digits written as bytes, no text made of the number.
      out[at++] = 0x24;
      const digits = digitsOf(length);
      for (let d = digits - 1, n = length; d >= 0; d--, n = Math.floor(n / 10)) out[at + d] = 0x30 + (n % 10);
      at += digits;
      out[at++] = 0x0d;
      out[at++] = 0x0a;
      if (typeof arg === 'string') at += out.write(arg, at, length, 'utf8');
      else at += arg.copy(out, at);
      out[at++] = 0x0d;
      out[at++] = 0x0a;
    }
    return out;
  }
}

/**
 * EVALSHA, or EVAL, through `OneCopyCommand` on a plain client and on a Cluster client (ioredis's
 * auto-pipelining stays with ioredis's own commands). A Cluster routes a command by its slot, which
 * `Command.getSlot` reads from the arguments the command holds when it is sent (set here before
 * that); a MOVED or ASK sends the same command again, its bytes made again. Until round 49 a
 * Cluster's script calls went as ioredis's commands: ioredis's `toWritable` was 13–17 KB a run of
 * the runner's allocations on a Cluster (test/bench/README.md round 49 `cluster-text`).
 */
function send(
  client: Redis,
  name: 'evalsha' | 'eval',
  head: string,
  keys: string[],
  args: Arg[],
): Promise<unknown> {
  // A runner's client is BullMQ's Proxy of ioredis, where every property read runs its trap (an
  // `in`, a `Reflect.get`, a bind for functions): its reads here go to the client behind it
  // (raw-client.ts; round 51 `runner-cpu`).
  const redis = rawClient(client);
  const clientOptions = redis.options;
  if (!clientOptions?.enableAutoPipelining) {
    // Replies as `redis.evalsha` gives them (text; ioredis's `…Buffer` commands alone give bytes).
    const options = {
      replyEncoding: 'utf8' as const,
      ...(clientOptions.keyPrefix ? { keyPrefix: clientOptions.keyPrefix } : {}),
      ...(clientOptions.showFriendlyErrorStack ? { errorStack: new Error() } : {}),
    };
    // `concat`, not a spread: an array literal's spread goes through the iterator protocol in
    // code V8 has not optimized (a result object an element: ~4 KB for ~100 arguments), which is
    // what a submit's or an end's path runs (round 37 `submit-gw`).
    const command = new OneCopyCommand(name, ([head, keys.length] as Arg[]).concat(keys, args), options);
    redis.sendCommand(command);
    return command.promise as Promise<unknown>;
  }
  // One array, joined by `concat`: ioredis takes it flat (its `Command` flattens its arguments
  // one level), the same arguments a spread call gave it, without walking them through the
  // iterator protocol (a run's end's script call, round 37 `end-spreads`).
  const flat = ([head, keys.length] as Arg[]).concat(keys, args);
  const call = redis[name] as unknown as (all: Arg[]) => Promise<unknown>;
  return call.call(redis, flat);
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
