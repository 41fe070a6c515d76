/**
 * The gateway's own HTTP/1.1 keep-alive client for plain-`http` App calls (`postToApp` sends
 * `https` through undici as before). Why: undici was 25–41 µs of the gateway's CPU a call, most of
 * it machinery a one-request POST does not need (test/bench/README.md, round 43 `app-client`).
 *
 * The walls are the ones `postToApp` keeps for undici: every connection is opened with the caller's
 * `lookup` (the address policy's `guardedLookup`: a name is resolved and checked at each connect,
 * a literal IP was checked before), kept connections are per rule set (resolver × allowPrivate ×
 * origin) so one opened under one set never serves another; the caller's whole-call deadline ends
 * a call whatever stage it is in (connecting, writing, a slow head or body); the answer is read by
 * `AnswerReader` (strict, capped); a connection is reused only after a whole, clean answer, and is
 * dropped on any error, a timeout, bytes it was not asked for, or the App's close. Headers are
 * checked as undici checks them (a name a token, a value without CR, LF or NUL) and the ones that
 * would change the framing (`content-length`, `transfer-encoding`, `connection`, `keep-alive`,
 * `upgrade`, `expect`) are refused: no header can inject a line or a second request.
 *
 * A kept connection is written to only from a check phase (`setImmediate`, one for every request
 * of a loop turn), after the poll phase has read what was pending on it: a close the App sent while
 * it idled is seen first and the request goes out on a new connection (undici 8 does the same,
 * GHSA-35p6-xmwp-9g52; app-http-idle-close.test.ts). Sockets are read through `onread` into one
 * buffer: no stream push and no tick a read.
 */
import { connect, type LookupFunction, type Socket } from 'node:net';
import { type Answer, AnswerReader, BAD_VALUE, TOKEN } from './app-h1-answer.ts';
import { createDeadlines, type DeadlineTimers, globalDeadlineTimers } from './app-h1-deadlines.ts';
import { AppTimeoutError } from './app-http-errors.ts';

/** Idle kept connections are closed after this, or the App's own `Keep-Alive: timeout` less 2 s. */
const IDLE_MS = 4000;
const KEEP_ALIVE_MARGIN_MS = 2000;
const READ_BYTES = 64 * 1024;
/** Shared by every connection: a read is parsed (and what must outlive it copied) in its callback. */
const readBuffer = Buffer.allocUnsafe(READ_BYTES);

export interface H1Target {
  host: string;
  port: number;
  /** `host[:port]` as the URL has it (the Host header). */
  hostHeader: string;
  path: string;
}

interface Call {
  reader: AnswerReader;
  resolve: (a: Answer) => void;
  reject: (err: Error) => void;
  request: string | Buffer;
  target: H1Target;
  /** The pool key: the origin and the rules its connections are opened under. */
  key: string;
  lookup: LookupFunction;
  conn: Conn | undefined;
  /** Its whole-call deadline: `due` on `performance.now()`'s clock (app-h1-deadlines.ts). */
  due: number;
  timeoutMs: number;
}

interface Conn {
  socket: Socket;
  key: string;
  call: Call | undefined;
  dead: boolean;
  idleUntil: number;
}

/** Counters for tests and benches: requests sent by this client, connections it opened. */
export const h1Stats = { requests: 0, connections: 0 };

const idle = new Map<string, Conn[]>();
const waitingForCheck: Call[] = [];
let checkScheduled = false;
let sweep: NodeJS.Timeout | undefined;

/** What a header name is to `requestBytes`: sent as it is, the Host, or refused. */
const Name = { Plain: 0, Host: 1, Refused: 2 } as const;
/**
 * Names already classified (the same few every call: the request's own and a connection's), so a
 * name is checked and lower-cased once, not once a call. Bounded: past it names are classified
 * each time, as they all were before.
 */
const names = new Map<string, number>();
const MAX_NAMES = 512;

function nameKind(name: string): number {
  let kind = names.get(name);
  if (kind !== undefined) return kind;
  if (!TOKEN.test(name)) kind = Name.Refused;
  else
    switch (name.toLowerCase()) {
      case 'host':
        kind = Name.Host;
        break;
      case 'content-length':
      case 'transfer-encoding':
      case 'connection':
      case 'keep-alive':
      case 'upgrade':
      case 'expect':
        kind = Name.Refused;
        break;
      default:
        kind = Name.Plain;
    }
  if (names.size < MAX_NAMES) names.set(name, kind);
  return kind;
}

/** Anything but a tab or printable ASCII: most values pass it, the rest are checked by `BAD_VALUE`. */
const NOT_PLAIN = /[^\t\x20-\x7e]/;

/** The request's bytes; throws (nothing sent) on a header undici would refuse or that could reframe it. */
export function requestBytes(
  target: H1Target,
  headers: Record<string, string>,
  body: string,
): string | Buffer {
  // The head is sent as latin1 (a value may hold \x80–\xff, one byte each, as undici sends it), the
  // body as UTF-8: a head of ASCII alone goes out as one string with its body.
  let latin1 = false;
  if (/[^\x21-\x7e]/.test(target.path)) {
    if (/[^\u0021-\u00ff]/.test(target.path)) throw new TypeError('invalid request path');
    latin1 = true;
  }
  // The request's pieces in order, joined once: one string of the request's length, where a `+=` a
  // header and the head's template made a rope of ~30 pieces that the socket's write then copied
  // flat (round 47 `gateway-cpu`). In one array kept for every request (this runs to its end before
  // another can begin), emptied after its join. Slot 3 is the Host's value, known once every header is read.
  const parts = PARTS;
  parts[0] = 'POST ';
  parts[1] = target.path;
  parts[2] = ' HTTP/1.1\r\nhost: ';
  parts[3] = '';
  parts[4] = '\r\nconnection: keep-alive\r\n';
  let n = 5;
  let host = target.hostHeader;
  let sawHost = false;
  try {
    for (const name in headers) {
      const value = headers[name];
      if (typeof value !== 'string') throw new TypeError(`invalid ${name} header`);
      if (NOT_PLAIN.test(value)) {
        if (BAD_VALUE.test(value)) throw new TypeError(`invalid ${name} header`);
        latin1 = true;
      }
      const kind = nameKind(name);
      if (kind === Name.Refused) throw new TypeError(`invalid ${name} header`);
      if (kind === Name.Host) {
        if (sawHost) throw new TypeError('duplicate host header');
        sawHost = true;
        host = value;
        continue;
      }
      parts[n++] = name;
      parts[n++] = ': ';
      parts[n++] = value;
      parts[n++] = '\r\n';
    }
    // The URL's host (WHATWG: ASCII, a name in punycode) when no host header replaced it.
    if (!sawHost && NOT_PLAIN.test(host)) latin1 = true;
    parts[3] = host;
    parts[n++] = 'content-length: ';
    parts[n++] = String(Buffer.byteLength(body));
    parts[n++] = '\r\n\r\n';
    if (!latin1) parts[n++] = body;
    // The array's length is this request's (a shorter one than the last leaves its tail to cut).
    if (parts.length !== n) parts.length = n;
    const text = parts.join('');
    return latin1 ? Buffer.concat([Buffer.from(text, 'latin1'), Buffer.from(body, 'utf8')]) : text;
  } finally {
    // Nothing of a request (its values, its body) is held past it.
    for (let i = 0; i < n; i++) parts[i] = '';
  }
}

/** `requestBytes`'s pieces (see there). */
const PARTS: string[] = [];

function drop(conn: Conn, err?: Error): void {
  conn.dead = true;
  const call = conn.call;
  conn.call = undefined;
  conn.socket.destroy();
  if (call && err) call.reject(err);
}

function onRead(conn: Conn, n: number): boolean {
  const call = conn.call;
  // Bytes on an idle connection were not asked for: it is not used again.
  if (!call) {
    drop(conn);
    return false;
  }
  let answer: Answer | undefined;
  try {
    answer = call.reader.push(readBuffer.subarray(0, n));
  } catch (err) {
    drop(conn, err as Error);
    return false;
  }
  if (!answer) return true;
  conn.call = undefined;
  if (answer.reusable && !conn.dead) keep(conn, answer);
  else drop(conn);
  call.resolve(answer);
  return true;
}

function keep(conn: Conn, answer: Answer): void {
  let ms = IDLE_MS;
  if (answer.keepAliveSeconds !== undefined)
    ms = Math.min(ms, answer.keepAliveSeconds * 1000 - KEEP_ALIVE_MARGIN_MS);
  if (ms <= 0) {
    drop(conn);
    return;
  }
  conn.idleUntil = performance.now() + ms;
  conn.socket.unref();
  let list = idle.get(conn.key);
  if (!list) {
    list = [];
    idle.set(conn.key, list);
  }
  list.push(conn);
  sweep ??= setInterval(sweepIdle, 1000).unref();
}

function sweepIdle(): void {
  const now = performance.now();
  for (const [key, list] of idle) {
    const live = list.filter((c) => {
      if (!c.dead && c.idleUntil > now) return true;
      drop(c);
      return false;
    });
    if (live.length) idle.set(key, live);
    else idle.delete(key);
  }
  if (idle.size === 0 && sweep) {
    clearInterval(sweep);
    sweep = undefined;
  }
}

function open(call: Call): void {
  const t = call.target;
  const conn: Conn = {
    socket: undefined as unknown as Socket,
    key: call.key,
    call,
    dead: false,
    idleUntil: 0,
  };
  h1Stats.connections++;
  conn.socket = connect({
    host: t.host,
    port: t.port,
    lookup: call.lookup,
    noDelay: true,
    onread: { buffer: readBuffer, callback: (n: number) => onRead(conn, n) },
  });
  const lost = (err?: Error) => {
    if (conn.dead && !conn.call) return;
    conn.dead = true;
    const c = conn.call;
    if (!c) return drop(conn);
    let answer: Answer | undefined;
    try {
      answer = err ? undefined : c.reader.close();
    } catch (e) {
      return drop(conn, e as Error);
    }
    if (!answer) return drop(conn, err);
    conn.call = undefined;
    drop(conn);
    c.resolve(answer);
  };
  conn.socket.on('error', lost);
  conn.socket.on('end', () => lost());
  conn.socket.on('close', () => lost(new Error('the App closed the connection')));
  send(conn, call);
}

function send(conn: Conn, call: Call): void {
  conn.call = call;
  call.conn = conn;
  h1Stats.requests++;
  conn.socket.write(call.request);
}

function takeIdle(key: string): Conn | undefined {
  const list = idle.get(key);
  if (!list) return undefined;
  const now = performance.now();
  for (let c = list.pop(); c; c = list.pop()) {
    if (!c.dead && c.idleUntil > now) return c;
    drop(c);
  }
  return undefined;
}

function checkPhase(): void {
  checkScheduled = false;
  const calls = waitingForCheck.splice(0);
  for (const call of calls) {
    if (call.conn) continue; // failed (its deadline) while it waited
    const conn = takeIdle(call.key);
    if (!conn) {
      open(call);
      continue;
    }
    conn.socket.ref();
    send(conn, call);
  }
}

/** A call past its whole deadline fails with `AppTimeoutError`, whatever stage it is in. */
function expire(call: Call): void {
  const err = new AppTimeoutError(call.timeoutMs);
  if (call.conn) {
    if (call.conn.call === call) drop(call.conn, err);
    else call.reject(err);
    return;
  }
  // Still waiting for the check phase: mark it taken so the phase skips it.
  call.conn = { dead: true } as Conn;
  call.reject(err);
}

/** Every call's deadline on one timer, not a timer a call (app-h1-deadlines.ts). */
let deadlines = createDeadlines<Call>(expire);

/** Tests count the timers the deadlines arm; only while no call is in flight. */
export function useDeadlineTimers(timers: DeadlineTimers = globalDeadlineTimers): void {
  if (deadlines.pending > 0) throw new Error('calls are in flight');
  deadlines = createDeadlines<Call>(expire, timers);
}

/** Deadlines filed and not yet settled or due (a test reads it: none left behind). */
export function h1PendingDeadlines(): number {
  return deadlines.pending;
}

/**
 * POSTs `request` (from `requestBytes`) to `target` and reads the answer; rejects with the reader's
 * errors, the socket's, or `AppTimeoutError` at `timeoutMs` from now, the connection dropped.
 */
export function h1Post(
  target: H1Target,
  key: string,
  request: string | Buffer,
  lookup: LookupFunction,
  timeoutMs: number,
  maxBytes: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const call: Call = {
      reader: new AnswerReader(maxBytes),
      resolve: (a) => {
        if (settled) return;
        settled = true;
        deadlines.remove(call);
        resolve({ status: a.status, text: a.text });
      },
      reject: (err) => {
        if (settled) return;
        settled = true;
        deadlines.remove(call);
        reject(err);
      },
      request,
      target,
      key,
      lookup,
      conn: undefined,
      due: 0,
      timeoutMs,
    };
    deadlines.add(call, timeoutMs);
    if (!idle.get(key)?.length) return open(call);
    waitingForCheck.push(call);
    if (!checkScheduled) {
      checkScheduled = true;
      setImmediate(checkPhase);
    }
  });
}
