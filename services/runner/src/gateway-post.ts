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

interface Idle {
  socket: Socket;
  /** performance.now() past which the server may have closed it. */
  until: number;
  /** Its listeners while idle: anything the server sends then ends it. */
  drop: () => void;
}

export class GatewayPost {
  private readonly idle = new Map<string, Idle[]>();
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
      const socket = this.take(target);
      const exchange = new GatewayAnswer();
      let settled = false;
      const finish = (err: Error | undefined) => {
        if (settled) return;
        settled = true;
        socket.off('data', onData);
        socket.off('error', onError);
        socket.off('close', onClose);
        if (signal) this.aborts.get(signal)?.delete(onAbort);
        if (err) {
          socket.destroy();
          reject(err);
          return;
        }
        if (exchange.close) socket.destroy();
        else this.keep(target, socket, exchange.keepAliveMs);
        resolve({ status: exchange.status, text: exchange.text() });
      };
      const onData = (chunk: Buffer) => {
        let done: boolean | Error;
        try {
          done = exchange.push(chunk);
        } catch (err) {
          // Nothing may throw out of a socket's data handler (it would end the runner).
          done = err instanceof Error ? err : new Error(String(err));
        }
        if (done === false) return;
        finish(done === true ? undefined : done);
      };
      const onError = (err: Error) => finish(err);
      const onClose = () => finish(new Error('the gateway closed the connection before its answer'));
      const onAbort = (reason: Error) => finish(reason);
      socket.on('data', onData);
      socket.on('error', onError);
      socket.on('close', onClose);
      if (signal) this.onAbort(signal, onAbort);
      let head = target.head;
      for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
      socket.write(`${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  /** Closes every idle socket (tests; a runner's process ends with its sockets). */
  close(): void {
    for (const list of this.idle.values()) for (const { socket } of list) socket.destroy();
    this.idle.clear();
  }

  private take(target: Target): Socket {
    const list = this.idle.get(target.origin);
    const now = performance.now();
    for (let kept = list?.pop(); kept; kept = list?.pop()) {
      const { socket } = kept;
      socket.off('data', kept.drop);
      socket.off('end', kept.drop);
      socket.off('close', kept.drop);
      if (kept.until > now && !socket.destroyed && socket.readyState === 'open') {
        socket.ref();
        return socket;
      }
      socket.destroy();
    }
    const socket = target.secure
      ? tlsConnect({
          host: target.host,
          port: target.port,
          ...(isIP(target.host) === 0 ? { servername: target.host } : {}),
          ALPNProtocols: ['http/1.1'],
        })
      : netConnect({ host: target.host, port: target.port });
    socket.setNoDelay(true);
    // A call may wait minutes for its answer: a gateway gone without a word (its node lost) is
    // found by TCP's keep-alive probes, as undici's connector has them (after 60 s idle).
    socket.setKeepAlive(true, TCP_KEEP_ALIVE_DELAY_MS);
    // An error on an idle socket drops it (its close); one in flight fails its request.
    socket.on('error', () => {});
    return socket;
  }

  private keep(target: Target, socket: Socket, keepAliveMs: number): void {
    let kept = this.idle.get(target.origin);
    if (!kept) {
      kept = [];
      this.idle.set(target.origin, kept);
    }
    const list = kept;
    // Anything from the server while no request is out (bytes, its end or close) ends the socket.
    const entry: Idle = {
      socket,
      until: performance.now() + keepAliveMs - KEEP_ALIVE_MARGIN_MS,
      drop: () => {
        socket.destroy();
        const at = list.indexOf(entry);
        if (at >= 0) list.splice(at, 1);
      },
    };
    socket.on('data', entry.drop);
    socket.on('end', entry.drop);
    socket.on('close', entry.drop);
    socket.unref();
    list.push(entry);
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

const abortReason = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new Error('aborted');
