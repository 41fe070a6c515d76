/// <reference path="./redis-parser-types.d.ts" />
// (The parser's types, for every program that includes this file: the console's too.)
/**
 * A Redis connection's replies parsed straight to text for the commands that want text.
 *
 * ioredis's DataHandler makes its redis-parser with `returnBuffers: true` hard-coded: every bulk
 * and simple reply becomes a Buffer (a slice object each, `parseArrayElements`' 6.4 KB a run in the
 * runner, test/bench/README.md round 47 `runner-cpu`), and then every command that asked for text
 * (all but the `…Buffer` ones) turns each of them into a string again (`convertBufferToString`).
 * redis-parser can make the strings itself (`optionReturnBuffers` false: `buffer.toString('utf8',
 * start, end)`, a reply cut over reads through a `StringDecoder`), the same UTF-8 decoding the
 * Buffer's `toString()` does; ioredis offers no option for it and keeps its parser in a closure.
 *
 * So here, at each new socket's `'connect'` (the same moment `readRepliesDirect` switches the socket:
 * DataHandler has added its `'data'` listener and no byte has been read yet), DataHandler's
 * listener is taken off and one of ours put first in its place: a redis-parser of our own whose
 * replies go to DataHandler's own methods (its prototype's `returnReply` / `returnError` /
 * `returnFatalError` on an object holding the connection, all they read), so every reply takes the
 * path it took before. The parser's mode is chosen reply by reply from the command the reply
 * belongs to — the head of the connection's command queue, set before each read is parsed and after
 * each reply: text only for a command made with `replyEncoding: 'utf8'` (every command method and
 * script that is not a `…Buffer` one), Buffers for anything else — a `…Buffer` command, a command
 * built without an encoding (a MULTI pipeline's EXEC is `execBuffer`: each queued command decodes
 * its own element), subscribe / unsubscribe, subscriber mode, and no command at the head; a
 * MONITOR connection is not switched. A reply parsed over several reads keeps its command at the head until it is whole, so one
 * reply is never parsed in two modes. Error replies were strings in either mode.
 *
 * A connection whose DataHandler listener is not found where and as expected (another ioredis) is
 * left as it is. A Cluster client's connections are per node: each is switched as it is made
 * (redis-cluster-nodes.ts); its subscriber connections are not.
 */
import type { Redis } from 'ioredis';
// DataHandler's own methods route a parsed reply (ioredis has no `exports` map: its files are public
// paths). Static imports, so a bundle of the runner (skill-nonroot.test.ts) carries them too.
import dataHandlerModule from 'ioredis/built/DataHandler.js';
// ioredis's parser, the version its DataHandler uses (core depends on it at ioredis's range).
import RedisParserImpl from 'redis-parser';
import { rawClient } from './raw-client.ts';
import { type Switched, switchClusterNodes } from './redis-cluster-nodes.ts';
import { readRepliesDirect } from './redis-direct-read.ts';

interface ReplyRouter {
  redis: unknown;
  returnReply(reply: unknown): void;
  returnError(err: Error): void;
  returnFatalError(err: Error): void;
}
// A CommonJS module with `exports.default`: Node (and esbuild for a `type: module` package) give
// its `module.exports` as the default import; another loader may give `exports.default`.
const dataHandlerClass = ((dataHandlerModule as unknown as { default?: unknown }).default ??
  dataHandlerModule) as { prototype: ReplyRouter };
const dataHandlerProto = dataHandlerClass.prototype;

/** What of the parser is used here (its types: redis-parser-types.d.ts). */
interface TextParser {
  optionReturnBuffers: boolean;
  execute(data: Buffer): void;
}

interface QueuedCommand {
  command: { name: string; replyEncoding?: string | null; inTransaction?: boolean };
}
/** A socket's command queue and condition: ioredis replaces both only before it makes a socket. */
interface CommandQueue {
  peekFront(): QueuedCommand | undefined;
  length: number;
}
interface Condition {
  subscriber?: unknown;
}
interface Connection {
  stream?: NodeJS.EventEmitter & { listeners(event: 'data'): ((data: Buffer) => void)[] };
  status: string;
  condition?: Condition | null;
  commandQueue: CommandQueue;
  options: { stringNumbers?: boolean };
}

/** SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs (ioredis's subscriber-mode flags). */
const SUBSCRIBING = /subscribe$/i;

/**
 * Whether the reply at the head of `queue` may be parsed to text (see the file's note). Read before
 * every read and after every reply: a few property reads, none through BullMQ's Proxy of a client.
 */
export function replyWantsText(queue: CommandQueue, condition: Condition | null | undefined): boolean {
  const head = queue.peekFront();
  return (
    head !== undefined &&
    head.command.replyEncoding === 'utf8' &&
    !condition?.subscriber &&
    !SUBSCRIBING.test(head.command.name)
  );
}

/**
 * The reply at the head of the queue was parsed to text: its command is told it has no encoding to
 * convert from, so ioredis's `transformReply` skips `convertBufferToString`, which on text gives
 * the same strings, numbers, nulls and errors back in copies of every array (0.9 KB a run in the
 * runner). Not a command inside MULTI: its reply comes in EXEC's array, parsed as Buffers, and it
 * converts its own element from there.
 */
function textMade(queue: CommandQueue): void {
  const head = queue.peekFront();
  if (head !== undefined && head.command.inTransaction !== true) head.command.replyEncoding = null;
}

/** DataHandler's `'data'` listener on a socket it was just made for, or undefined. */
function dataHandlerListener(
  stream: NonNullable<Connection['stream']>,
): ((data: Buffer) => void) | undefined {
  const first = stream.listeners('data')[0];
  // Its body is `parser.execute(data)` (ioredis 5's DataHandler); anything else is not ours to take.
  return first !== undefined && /^\(data\)\s*=>\s*\{\s*parser\.execute\(data\);?\s*\}$/.test(String(first))
    ? first
    : undefined;
}

/** Puts `redis`'s current socket on a parser choosing text or Buffers a reply; false when it cannot. */
export function parseRepliesAsText(redis: Redis): boolean {
  const connection = redis as unknown as Connection;
  // A MONITOR connection (ioredis makes one of its own) has no replies of commands to parse.
  if (connection.status === 'monitoring') return false;
  const stream = connection.stream;
  if (stream === undefined) return false;
  const theirs = dataHandlerListener(stream);
  if (theirs === undefined) return false;
  // This socket's: read once here, not through the client (BullMQ's Proxy traps every read).
  const queue = connection.commandQueue;
  const condition = connection.condition;
  const router = Object.create(dataHandlerProto) as ReplyRouter;
  // DataHandler reads its client's `condition`, `status` and `commandQueue` at every reply: the
  // client itself, not BullMQ's Proxy of it (raw-client.ts; round 51 `runner-cpu`).
  router.redis = rawClient(redis);
  const parser: TextParser = new RedisParserImpl({
    stringNumbers: connection.options.stringNumbers === true,
    returnBuffers: true,
    returnError: (err: Error) => {
      router.returnError(err);
      parser.optionReturnBuffers = !replyWantsText(queue, condition);
    },
    returnFatalError: (err: Error) => router.returnFatalError(err),
    returnReply: (reply: unknown) => {
      if (parser.optionReturnBuffers === false) textMade(queue);
      router.returnReply(reply);
      parser.optionReturnBuffers = !replyWantsText(queue, condition);
    },
  });
  stream.removeListener('data', theirs);
  stream.prependListener('data', (data: Buffer) => {
    parser.optionReturnBuffers = !replyWantsText(queue, condition);
    parser.execute(data);
  });
  return true;
}

/**
 * Parses `redis`'s replies as `parseRepliesAsText` does from now on, on its current socket and each
 * one it connects later. Returns how many sockets were switched so far (tests and benches read it).
 */
export function readRepliesAsText(redis: Redis): Switched {
  let switched = 0;
  if ((redis as { isCluster?: boolean }).isCluster)
    return switchClusterNodes(redis, readRepliesAsText) ?? { switched: () => 0 };
  const apply = () => {
    if (parseRepliesAsText(redis)) switched++;
  };
  // As readRepliesDirect: `connect` comes in a tick after DataHandler was made, before any read.
  redis.on('connect', apply);
  // A socket already in use is switched only with no reply owed (ioredis's parser may hold a part).
  const live = redis as unknown as Connection;
  if ((redis.status === 'connect' || redis.status === 'ready') && live.commandQueue.length === 0) apply();
  return { switched: () => switched };
}

/**
 * A hot connection's reads, both ways: read with no stream push or tick (`readRepliesDirect`), then
 * parsed straight to text (`readRepliesAsText`), in that order at each socket's `'connect'`. What
 * the gateway's and runner's store connections and the runner's blocking pop use.
 */
export function readRepliesFast(redis: Redis): void {
  readRepliesDirect(redis);
  readRepliesAsText(redis);
}
