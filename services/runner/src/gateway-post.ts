/**
 * The runner's transport for a lone binding call (gateway-client.ts `post`): one HTTP/1.1 POST on
 * a kept-alive socket of its own, the answer read by its `content-length` (or chunks), one request
 * in flight a socket. A sequential call's request and answer are both on its round trip, and
 * undici's machinery for one request was most of the runner's client CPU on it: its request object
 * and header checks, the pool, the llhttp parser's callbacks, the timers, and since undici 8 an
 * idle kept-alive socket's check that puts off every request's write to the event loop's check
 * phase (test/bench/README.md, round 36 `call-hops`). Batches stay undici's (a streamed NDJSON
 * answer).
 *
 * What it keeps of HTTP: any status, `content-length` or `chunked` bodies, `connection: close`,
 * the server's `keep-alive: timeout` (a socket is not reused within a second of it, as undici);
 * anything else in an answer (no length, a 1xx, a malformed head, bytes an idle socket was sent)
 * fails the request and drops its socket. A failed request is an error to the caller, which tries
 * the call again on the next gateway as a takeover (the journal tells a lost answer from a
 * duplicate), as it does for undici's errors.
 *
 * undici's check of an idle socket before a request (GHSA-35p6-xmwp-9g52: bytes or a close a
 * server sent while it idled, read as the next request's answer) is kept differently: an idle
 * socket listens, and anything it gets (bytes, an end, a close) drops it from the pool as it is
 * read. What arrives in the same read of the event loop as the call's own frame from the host is
 * read after the request was written: a close then fails that request (a takeover, as above);
 * bytes would be read as its answer — from the runner's own gateway, the one peer this transport
 * has, which sends none unasked.
 */
import { writeSync } from 'node:fs';
import { isIP, connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { BoundedMap } from '@islet/core';
import { GatewayAnswer } from './gateway-answer.ts';

/** A reused socket is dropped this long before the server said it closes idle ones (undici's). */
const KEEP_ALIVE_MARGIN_MS = 1000;
/** TCP keep-alive probes on a connection idle this long (undici's connector's default). */
const TCP_KEEP_ALIVE_DELAY_MS = 60_000;

interface Target {
  /** `http://host:port`: the key of a socket pool. */
  origin: string;
  secure: boolean;
  host: string;
  port: number;
  /** The request line and `host` header. */
  head: string;
}

/** Where a POST to `url` goes: a pure function of the text, kept for a run's next calls. */
const targets = new BoundedMap<string, Target>(256);
function targetOf(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new Error(`unsupported protocol ${u.protocol}`);
    const secure = u.protocol === 'https:';
    target = {
      origin: u.origin,
      secure,
      host: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname,
      port: Number(u.port || (secure ? 443 : 80)),
      head: `POST ${u.pathname}${u.search} HTTP/1.1\r\nhost: ${u.host}\r\n`,
    };
    targets.set(url, target);
  }
  return target;
}

/** A socket of the pool, with the one set of listeners it keeps for its life. */
interface Conn {
  socket: Socket;
  /** Plain TCP: a request is written straight to the descriptor (`send`); TLS goes through the stream. */
  plain: boolean;
  /** The request in flight: its answer's bytes, and its end when the socket fails or closes first. */
  active: { data(chunk: Buffer): void; gone(err: Error): void } | undefined;
  /** Idle: performance.now() past which the server may have closed it. */
  until: number;
  /** Idle: the pool list it waits in (dropped from it when the server sends anything). */
  list: Conn[] | undefined;
}

/**
 * Where a plain socket's reads land (`onread`): copied out at once (an answer may come in pieces),
 * so one buffer serves every socket of the process.
 */
const READ_BUFFER_BYTES = 64 * 1024;
let readBuffer: Buffer | undefined;
function readBufferOf(): Buffer {
  if (!readBuffer) readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  return readBuffer;
}

export class GatewayPost {
  private readonly idle = new Map<string, Conn[]>();
  /** One abort listener a signal (a run's), not one a request: node's EventTarget is costly per call. */
  private readonly aborts = new WeakMap<AbortSignal, Set<(reason: Error) => void>>();

  /** POSTs `body` to `url`; resolves with the answer's status and text, rejects when none came. */
  post(
    url: string,
    headers: Record<string, string>,
    body: string,
    signal?: AbortSignal,
  ): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      let target: Target;
      try {
        target = targetOf(url);
      } catch (err) {
        return reject(err);
      }
      if (signal?.aborted) return reject(abortReason(signal));
      const conn = this.take(target);
      const exchange = new GatewayAnswer();
      let settled = false;
      const finish = (err: Error | undefined) => {
        if (settled) return;
        settled = true;
        conn.active = undefined;
        if (signal) this.aborts.get(signal)?.delete(onAbort);
        if (err) {
          conn.socket.destroy();
          reject(err);
          return;
        }
        if (exchange.close) conn.socket.destroy();
        else this.keep(target, conn, exchange.keepAliveMs);
        resolve({ status: exchange.status, text: exchange.text() });
      };
      const onAbort = (reason: Error) => finish(reason);
      conn.active = {
        data(chunk) {
          let done: boolean | Error;
          try {
            done = exchange.push(chunk);
          } catch (err) {
            // Nothing may throw out of a socket's read handler (it would end the runner).
            done = err instanceof Error ? err : new Error(String(err));
          }
          if (done === false) return;
          finish(done === true ? undefined : done);
        },
        gone: finish,
      };
      if (signal) this.onAbort(signal, onAbort);
      let head = target.head;
      for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
      send(conn, `${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  /** Closes every idle socket (tests; a runner's process ends with its sockets). */
  close(): void {
    for (const list of this.idle.values()) for (const { socket } of list) socket.destroy();
    this.idle.clear();
  }

  private take(target: Target): Conn {
    const list = this.idle.get(target.origin);
    const now = performance.now();
    for (let kept = list?.pop(); kept; kept = list?.pop()) {
      kept.list = undefined;
      const { socket } = kept;
      if (kept.until > now && !socket.destroyed && socket.readyState === 'open') {
        socket.ref();
        return kept;
      }
      socket.destroy();
    }
    return this.open(target);
  }

  /**
   * A new socket with its listeners for life: what it reads goes to the request in flight, and
   * while it idles anything from the server (bytes, its end or close) drops it from the pool. A
   * plain socket is read through `onread` (its bytes handed over as read: not through the stream's
   * buffer, events and ticks); a TLS one through its 'data' event.
   */
  private open(target: Target): Conn {
    const conn: Conn = {
      socket: undefined as unknown as Socket,
      plain: !target.secure,
      active: undefined,
      until: 0,
      list: undefined,
    };
    const bytes = (chunk: Buffer) => {
      if (conn.active) conn.active.data(chunk);
      else drop(conn);
    };
    const socket = target.secure
      ? tlsConnect({
          host: target.host,
          port: target.port,
          ...(isIP(target.host) === 0 ? { servername: target.host } : {}),
          ALPNProtocols: ['http/1.1'],
        })
      : netConnect({
          host: target.host,
          port: target.port,
          onread: {
            buffer: readBufferOf(),
            // Copied: the buffer is every plain socket's next read.
            callback: (n: number, buf: Uint8Array) => {
              bytes(Buffer.from(buf.subarray(0, n)));
              // Go on reading (false would pause the socket).
              return true;
            },
          },
        });
    conn.socket = socket;
    if (target.secure) socket.on('data', bytes);
    socket.setNoDelay(true);
    // A call may wait minutes for its answer: a gateway gone without a word (its node lost) is
    // found by TCP's keep-alive probes, as undici's connector has them (after 60 s idle).
    socket.setKeepAlive(true, TCP_KEEP_ALIVE_DELAY_MS);
    // An error fails the request in flight; on an idle socket its close follows and drops it.
    socket.on('error', (err: Error) => conn.active?.gone(err));
    socket.on('end', () => {
      if (!conn.active) drop(conn);
    });
    socket.on('close', () => {
      if (conn.active) conn.active.gone(new Error('the gateway closed the connection before its answer'));
      else drop(conn);
    });
    return conn;
  }

  private keep(target: Target, conn: Conn, keepAliveMs: number): void {
    let list = this.idle.get(target.origin);
    if (!list) {
      list = [];
      this.idle.set(target.origin, list);
    }
    conn.until = performance.now() + keepAliveMs - KEEP_ALIVE_MARGIN_MS;
    conn.list = list;
    conn.socket.unref();
    list.push(conn);
  }

  private onAbort(signal: AbortSignal, fn: (reason: Error) => void): void {
    let fns = this.aborts.get(signal);
    if (!fns) {
      const set = new Set<(reason: Error) => void>();
      fns = set;
      this.aborts.set(signal, set);
      signal.addEventListener(
        'abort',
        () => {
          for (const f of [...set]) f(abortReason(signal));
        },
        { once: true },
      );
    }
    fns.add(fn);
  }
}

/** An idle socket the server sent something (or closed): ended and out of its pool list. */
function drop(conn: Conn): void {
  conn.socket.destroy();
  const list = conn.list;
  if (!list) return;
  conn.list = undefined;
  const at = list.indexOf(conn);
  if (at >= 0) list.splice(at, 1);
}

/**
 * A request's text onto its socket. A plain socket that is connected with nothing queued in its
 * stream is written straight to its descriptor: one write(2) and none of the stream's write
 * request, callback and tick (as the engine writes a host's pipe, host-process.ts). What the
 * socket does not take now (full: EAGAIN, or a part) and every other write go through the
 * stream, behind anything queued there, so the order of bytes is kept; an error there fails the
 * request through the socket's 'error'. The descriptor is non-blocking (libuv's): this never waits.
 */
function send(conn: Conn, text: string): void {
  const { socket } = conn;
  const fd =
    conn.plain && !socket.connecting
      ? (socket as unknown as { _handle?: { fd?: number } | null })._handle?.fd
      : undefined;
  if (fd === undefined || fd < 0 || socket.writableLength > 0) {
    socket.write(text);
    return;
  }
  const out = Buffer.from(text, 'utf8');
  let written = 0;
  try {
    written = writeSync(fd, out);
  } catch {
    // EAGAIN or anything else: the stream writes it, or fails it through 'error', as before.
  }
  if (written < out.length) socket.write(written > 0 ? out.subarray(written) : out);
}

const abortReason = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new Error('aborted');
