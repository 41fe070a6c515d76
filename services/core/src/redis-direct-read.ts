/**
 * A Redis connection's replies read through `onread`, not through its socket's readable stream.
 *
 * ioredis reads its socket by `'data'` (DataHandler's listener feeds redis-parser). Each read went
 * through the stream's push: `addChunk`, an `emitReadable` tick and a `maybeReadMore` tick, two
 * `process.nextTick`s and one push a reply — on a lone binding call's path twice in the gateway (the
 * claim's and the outcome's script replies), 4 of its ~12.4 ticks a call (test/bench/README.md,
 * round 42 `binding-floor`). Here each new socket of the connection is put in the mode
 * `net.Socket({ onread })` sets up (as the engine does for a sandbox host's stdout, host-stdout.ts):
 * its handle reads into one buffer of this module's and the callback emits the socket's own
 * `'data'` with a copy of the bytes, so ioredis's listeners (the parser's, its socket-timeout check)
 * get the same chunks in the same order with no stream push and no tick. The socket keeps everything
 * else: EOF (`'end'`, `'close'`), errors, its timeout, ioredis's reconnects (each new socket is
 * switched at its `'connect'`, before ioredis has sent it a command).
 *
 * The mode is set by the two fields Node's constructor fills from `onread` (found by their symbols'
 * names) and the handle's `useUserBuffer`; a socket without them (another Node, TLS) is read by
 * `'data'` as before. A Cluster client's connections are per node: each is switched as it is made,
 * and so is its pub/sub connection since round 51 (redis-cluster-nodes.ts).
 */
import { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { Redis } from 'ioredis';
import { type Switched, switchClusterNodes, switchClusterSubscriber } from './redis-cluster-nodes.ts';

/** One read's most bytes (libuv's own read size for a stream). */
const READ_BYTES = 64 * 1024;

/**
 * Shared by every connection switched here: a read's bytes are copied out (the parser may keep a
 * reply that is not whole yet) before its callback returns, so the next read may fill it again.
 */
const buffer = Buffer.allocUnsafe(READ_BYTES);

/** A symbol of `socket`'s own, by its description (Node's net.js: `kBuffer`, `kBufferCb`). */
function symbolNamed(socket: object, name: string): symbol | undefined {
  const own = Object.getOwnPropertySymbols(socket);
  for (let i = 0; i < own.length; i++) if (own[i]!.description === name) return own[i];
  return undefined;
}

/** Puts `stream` in `onread` mode emitting its own `'data'`; false (nothing changed) when it cannot. */
export function readSocketDirect(stream: unknown): boolean {
  if (!(stream instanceof Socket) || stream instanceof TLSSocket) return false;
  const socket = stream as unknown as Record<symbol, unknown> & {
    _handle?: { useUserBuffer?: (buffer: Uint8Array) => void } | null;
  };
  const kBuffer = symbolNamed(socket, 'kBuffer');
  const kBufferCb = symbolNamed(socket, 'kBufferCb');
  const kBufferGen = symbolNamed(socket, 'kBufferGen');
  const handle = socket._handle;
  if (
    kBuffer === undefined ||
    kBufferCb === undefined ||
    (kBufferGen !== undefined && socket[kBufferGen] !== null && socket[kBufferGen] !== undefined) ||
    socket[kBuffer] !== null ||
    typeof handle?.useUserBuffer !== 'function' ||
    // Bytes already read through the stream would come after the direct ones: leave it as it is.
    stream.readableLength > 0
  )
    return false;
  socket[kBufferCb] = (bytes: number) => {
    stream.emit('data', Buffer.from(buffer.subarray(0, bytes)));
    // Go on reading (false would stop the handle's reads).
    return true;
  };
  socket[kBuffer] = buffer;
  handle.useUserBuffer(buffer);
  return true;
}

/**
 * Reads `redis`'s replies through `onread` from now on, on its current socket and each one it
 * connects later. Returns how many sockets were switched so far (tests and benches read it).
 */
export function readRepliesDirect(redis: Redis): Switched {
  let switched = 0;
  if ((redis as { isCluster?: boolean }).isCluster) {
    // The pool's per-node connections, and its pub/sub connection (a gateway's end pushes).
    const nodes = switchClusterNodes(redis, readRepliesDirect);
    const subscriber = switchClusterSubscriber(redis, readRepliesDirect);
    return { switched: () => (nodes?.switched() ?? 0) + (subscriber?.switched() ?? 0) };
  }
  const apply = () => {
    if (readSocketDirect((redis as unknown as { stream?: unknown }).stream)) switched++;
  };
  // ioredis emits `connect` in a tick after its socket's connect handler made the parser's listener
  // and before the tick that resumes the socket: no reply can have been read yet.
  redis.on('connect', apply);
  if (redis.status === 'connect' || redis.status === 'ready') apply();
  return { switched: () => switched };
}
