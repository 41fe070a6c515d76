/**
 * The reader of an App's HTTP/1.1 answer for the gateway's own App client (`app-h1.ts`). An App is a
 * tenant's server and may answer anything, so this reads strictly and refuses what it does not
 * fully understand rather than guess (what llhttp, undici's parser, refuses in its strict mode, and
 * more): a status line that is not `HTTP/1.x DDD reason`, a head over 16 KiB, a line not ended by
 * CRLF, a header name that is not a token or a value with control characters, a folded line, a
 * Content-Length that is not digits or is given twice (even the same), Transfer-Encoding with
 * Content-Length or other than `chunked`, a chunk size that is not 1–16 hex digits, chunk data not
 * followed by CRLF, 100 Continue and 101 (undici fails both; other 1xx are skipped, at most 8).
 * The body is capped as it is read (`AnswerTooLargeError`, a declared or chunk length past the cap
 * at once). Bytes after the answer mean the connection is not reused (a second answer pipelined).
 */
import { AnswerTooLargeError } from './app-http-errors.ts';

/** The App's answer broke HTTP/1.1 (or this reader's stricter rules). For the server log. */
export class AppProtocolError extends Error {
  override name = 'AppProtocolError';
}

/** node's `--max-http-header-size` default, undici's `maxHeaderSize`: a head, or the trailers. */
export const MAX_HEAD_BYTES = 16 * 1024;
const MAX_CHUNK_LINE = 1024;
const MAX_INFORMATIONAL = 8;

export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Not allowed in a field value (node's and undici's `headerCharRegex`). */
export const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([^\r\n]*))?$/;
const CHUNK_LINE = /^([0-9A-Fa-f]{1,16})(;[^\r\n]*)?$/;
/**
 * A header line as `head` reads it: a token, the first colon, then only value characters (what
 * `TOKEN` on the name and `BAD_VALUE` on the rest say, in one test: a token has no colon, so the
 * first colon is the one matched). Sticky, matched at a line's start inside the whole head: the line
 * is whole exactly when the match ends where the line does.
 */
const HEADER_AT = /[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*/y;
const CRLF2 = Buffer.from('\r\n\r\n');
/** A Connection value naming `close` (`\s` is the whitespace `trim` removes). */
const CLOSE_TOKEN = /(?:^|,)\s*close\s*(?:,|$)/i;

/** The reader's states. */
const Mode = {
  Head: 0,
  Length: 1,
  ChunkSize: 2,
  ChunkData: 3,
  ChunkEnd: 4,
  Trailers: 5,
  UntilClose: 6,
  Done: 7,
} as const;

/** Counters for tests and benches: hold buffers made (a head, chunk line or trailers split over reads). */
export const readerStats = { held: 0 };

/** The byte's value as a hex digit, or -1. */
function hexDigit(b: number): number {
  if (b >= 48 && b <= 57) return b - 48;
  const l = b | 0x20;
  return l >= 97 && l <= 102 ? l - 87 : -1;
}

export interface Answer {
  status: number;
  text: string;
  /** The connection may carry another request: HTTP/1.1, no `close`, nothing read past the answer. */
  reusable: boolean;
  /** The App's `Keep-Alive: timeout=<s>`, if it gave one. */
  keepAliveSeconds?: number;
}

function fail(why: string): never {
  throw new AppProtocolError(`the App's answer is not HTTP/1.1 this client reads: ${why}`);
}

/** Fed an App's bytes in order (any split); `answer` is set once the answer is whole. Throws on a bad one. */
export class AnswerReader {
  private mode: number = Mode.Head;
  /** An unfinished head, chunk line or trailer section (copied: the read buffer is reused). */
  private held: Buffer | undefined;
  private heldBytes = 0;
  private chunks: Buffer[] = [];
  private size = 0;
  private left = 0;
  private status = 0;
  private informational = 0;
  private keep = true;
  private keepAliveSeconds: number | undefined;
  /** Right after the last chunk: the trailer section not begun (an empty one is a bare CRLF). */
  private trailersStart = false;
  /** The body decoded straight from the read that held all of it (Content-Length, one read). */
  private text: string | undefined;
  answer: Answer | undefined;

  private readonly maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Reads `data` (valid only during this call). Returns the answer once whole. */
  push(data: Buffer): Answer | undefined {
    let at = 0;
    while (at < data.length) {
      switch (this.mode) {
        case Mode.Head:
          at = this.line(data, at);
          break;
        case Mode.Trailers:
          // An empty trailer section whole in this read (every chunked answer without trailers): it
          // is a bare CRLF, which the general path below would read as the same empty section.
          if (this.trailersStart && data[at] === 13 && data[at + 1] === 10) {
            this.trailersStart = false;
            this.finish();
            at += 2;
            break;
          }
          if (this.trailersStart) this.beginTrailers();
          at = this.line(data, at);
          break;
        case Mode.ChunkEnd:
          // A chunk's data ends with CRLF: whole in this read, no line to gather (else the general path).
          if (this.heldBytes === 0 && data[at] === 13 && data[at + 1] === 10) {
            this.mode = Mode.ChunkSize;
            at += 2;
            break;
          }
          at = this.line(data, at);
          break;
        case Mode.ChunkSize:
          at = this.heldBytes === 0 ? this.plainChunkSize(data, at) : this.line(data, at);
          break;
        case Mode.Length:
        case Mode.ChunkData:
        case Mode.UntilClose: {
          const n = this.mode === Mode.UntilClose ? data.length - at : Math.min(this.left, data.length - at);
          this.body(data, at, n);
          at += n;
          if (this.mode === Mode.Length && this.left === 0) this.finish();
          else if (this.mode === Mode.ChunkData && this.left === 0) this.mode = Mode.ChunkEnd;
          break;
        }
        case Mode.Done:
          // Bytes past the answer (a second answer pipelined, junk): the connection is not reused.
          this.keep = false;
          if (this.answer) this.answer.reusable = false;
          return this.answer;
      }
    }
    return this.answer;
  }

  /** The App closed the connection: the end of an answer read until close, an error otherwise. */
  close(): Answer {
    if (this.mode === Mode.UntilClose) {
      this.keep = false;
      this.finish();
    }
    if (!this.answer) fail('the connection closed before the answer was whole');
    return this.answer;
  }

  /**
   * A chunk-size line of hex digits alone, whole in this read (`CHUNK_LINE` without an extension):
   * read from the bytes, no string made; anything else (an extension, a bad or split line) goes to
   * the general path, which decides. Returns where reading goes on.
   */
  private plainChunkSize(data: Buffer, at: number): number {
    let n = 0;
    let i = at;
    // 13 digits at most here (below 2^53, exact); a longer size is read by the general path.
    for (let d = hexDigit(data[i] ?? -1); d >= 0 && i - at < 13; d = hexDigit(data[++i] ?? -1))
      n = n * 16 + d;
    if (i === at || data[i] !== 13 || data[i + 1] !== 10) return this.line(data, at);
    this.chunkLength(n);
    return i + 2;
  }

  private body(data: Buffer, at: number, n: number): void {
    if (n === 0) return;
    this.size += n;
    if (this.size > this.maxBytes) throw new AnswerTooLargeError(this.maxBytes);
    if (this.mode === Mode.Length && n === this.left && this.chunks.length === 0) {
      // The whole body is in this read: decoded from it, not copied out first.
      this.text = data.toString('utf8', at, at + n);
      this.left = 0;
      return;
    }
    this.chunks.push(Buffer.from(data.subarray(at, at + n)));
    if (this.mode !== Mode.UntilClose) this.left -= n;
  }

  /**
   * Gathers the head, trailers or a chunk line up to its end; returns where reading goes on. A part
   * split over reads is copied into one buffer of its most bytes (a head's 16 KiB): a byte-a-read
   * App costs a copy of each byte once, not of everything held so far each read.
   */
  private line(data: Buffer, at: number): number {
    const inHead = this.mode === Mode.Head || this.mode === Mode.Trailers;
    const cap = inHead ? MAX_HEAD_BYTES + 4 : MAX_CHUNK_LINE + 2;
    const from = this.heldBytes;
    let buf: Buffer;
    if (from > 0) {
      const held = this.held as Buffer;
      const n = Math.min(cap - from, data.length - at);
      data.copy(held, from, at, at + n);
      this.heldBytes = from + n;
      buf = held.subarray(0, this.heldBytes);
    } else buf = data.subarray(at);
    // A lone CR or LF anywhere is refused below, so the search may begin a little before the new bytes.
    const end = inHead ? buf.indexOf(CRLF2, Math.max(0, from - 3)) : buf.indexOf(13, Math.max(0, from - 1));
    const stop = end < 0 ? -1 : inHead ? end + 4 : end + 2;
    if (stop < 0 || buf.length < stop) {
      // Not whole yet (for a chunk line: no CR yet, or its LF not yet).
      if (buf.length >= cap) fail(inHead ? 'a head or trailers over 16 KiB' : 'a chunk line too long');
      if (from === 0) {
        this.held ??= this.holdBuffer();
        buf.copy(this.held, 0);
        this.heldBytes = buf.length;
      }
      return data.length;
    }
    if (stop > cap) fail(inHead ? 'a head or trailers over 16 KiB' : 'a chunk line too long');
    if (!inHead && buf[end + 1] !== 10) fail('a chunk line not ended by CRLF');
    const text = buf.toString('latin1', 0, end);
    this.heldBytes = 0;
    if (this.mode === Mode.Head) this.head(text);
    else if (this.mode === Mode.Trailers) this.trailers(text);
    else if (this.mode === Mode.ChunkEnd) {
      if (text !== '') fail('chunk data longer than its size');
      this.mode = Mode.ChunkSize;
    } else this.chunkSize(text);
    return at + stop - from;
  }

  private head(text: string): void {
    // Read in place, a line at a time between its CRLFs (no `split` into an array of every line, each
    // a string): a line is cut out only for the status, the four names read below and a refusal.
    let end = text.indexOf('\r\n');
    if (end < 0) end = text.length;
    const m = STATUS_LINE.exec(end === text.length ? text : text.slice(0, end));
    if (!m || BAD_VALUE.test(m[3] ?? '')) fail('a bad status line');
    const status = Number(m[2]);
    let length: number | undefined;
    let chunked = false;
    let close = m[1] === '0';
    while (end < text.length) {
      const start = end + 2;
      end = text.indexOf('\r\n', start);
      if (end < 0) end = text.length;
      // The line is a header line exactly when `HEADER_AT` from its start ends at its end:
      // a value's characters hold no CR or LF, so the match stops at the line's end or before it.
      HEADER_AT.lastIndex = start;
      if (!HEADER_AT.test(text) || HEADER_AT.lastIndex !== end) {
        const line = text.slice(start, end);
        const colon = line.indexOf(':');
        if (!TOKEN.test(colon > 0 ? line.slice(0, colon) : ''))
          fail('a header line that is not `name: value`');
        fail('a bad header value');
      }
      // A token has no colon: the line's first is its name's end.
      const colon = text.indexOf(':', start) - start;
      // Only these four names are read; none of the others' names or values is made into a string.
      if (colon !== 10 && colon !== 14 && colon !== 17) continue;
      // The name told by a case-blind sticky match at the line's start (its token is ASCII): no name
      // cut out and lower-cased; the value cut once, from the head's text.
      const name = nameAt(text, start, colon);
      if (name === undefined) continue;
      const value = trimOws(text, start + colon + 1, end);
      switch (name) {
        case 'content-length':
          if (length !== undefined) fail('Content-Length given twice');
          if (!/^\d+$/.test(value)) fail('a Content-Length that is not digits');
          length = value.length > 15 ? Number.POSITIVE_INFINITY : Number(value);
          break;
        case 'transfer-encoding':
          if (chunked) fail('Transfer-Encoding given twice');
          if (value.toLowerCase() !== 'chunked') fail('a Transfer-Encoding other than chunked');
          chunked = true;
          break;
        case 'connection':
          // A `close` among its comma-separated tokens (each trimmed as `trim` does, any case): the
          // test of `split(',')` then `trim().toLowerCase() === 'close'`, without the array.
          if (CLOSE_TOKEN.test(value)) close = true;
          break;
        case 'keep-alive': {
          const t = /(?:^|[,\s])timeout=(\d{1,6})(?:$|[,\s])/i.exec(value);
          if (t) this.keepAliveSeconds = Number(t[1]);
          break;
        }
      }
    }
    if (chunked && length !== undefined) fail('Transfer-Encoding with Content-Length');
    if (status < 200) {
      // undici fails 100 Continue (never asked for) and 101 (no upgrade asked for); skips the rest.
      if (status === 100 || status === 101 || ++this.informational > MAX_INFORMATIONAL)
        fail(`an unexpected ${status}`);
      return;
    }
    this.status = status;
    if (close) this.keep = false;
    if (status === 204 || status === 304) {
      // No body whatever the head says; one declared means it may follow: do not reuse (as undici).
      if (chunked || (length ?? 0) > 0) this.keep = false;
      this.finish();
      return;
    }
    if (chunked) this.mode = Mode.ChunkSize;
    else if (length !== undefined) {
      if (length > this.maxBytes) throw new AnswerTooLargeError(this.maxBytes);
      this.left = length;
      this.mode = Mode.Length;
      if (length === 0) this.finish();
    } else {
      this.keep = false;
      this.mode = Mode.UntilClose;
    }
  }

  private chunkSize(text: string): void {
    const m = CHUNK_LINE.exec(text);
    if (!m || BAD_VALUE.test(m[2] ?? '')) fail('a bad chunk size line');
    const n = Number.parseInt(m[1] as string, 16);
    this.chunkLength(n);
  }

  private chunkLength(n: number): void {
    if (n === 0) {
      this.mode = Mode.Trailers;
      this.trailersStart = true;
      return;
    }
    if (this.size + n > this.maxBytes) throw new AnswerTooLargeError(this.maxBytes);
    this.left = n;
    this.mode = Mode.ChunkData;
  }

  /** The trailers' section is read as a head, a CRLF put in front: a bare CRLF ends it at once. */
  private beginTrailers(): void {
    this.trailersStart = false;
    this.held ??= this.holdBuffer();
    const held = this.held;
    held[0] = 13;
    held[1] = 10;
    this.heldBytes = 2;
  }

  private holdBuffer(): Buffer {
    readerStats.held++;
    return Buffer.allocUnsafe(MAX_HEAD_BYTES + 4);
  }

  private trailers(text: string): void {
    // `text` starts with the CRLF put in front of the section; each trailer is checked as a header.
    const lines = text.split('\r\n');
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i] as string;
      const colon = line.indexOf(':');
      if (!TOKEN.test(colon > 0 ? line.slice(0, colon) : '')) fail('a bad trailer line');
      if (BAD_VALUE.test(line.slice(colon + 1))) fail('a bad trailer value');
    }
    this.finish();
  }

  private finish(): void {
    this.mode = Mode.Done;
    let text = this.text;
    if (text === undefined) {
      const body =
        this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
      text = body.toString('utf8');
    }
    this.answer = { status: this.status, text, reusable: this.keep };
    if (this.keepAliveSeconds !== undefined) this.answer.keepAliveSeconds = this.keepAliveSeconds;
  }
}

/** The four names `head` reads, each with its colon, matched case-blind at a line's start. */
const READ_NAMES = [/content-length:/iy, /transfer-encoding:/iy, /connection:/iy, /keep-alive:/iy] as const;
const READ_NAME_TEXTS = ['content-length', 'transfer-encoding', 'connection', 'keep-alive'] as const;

/** Which of the four read names the line at `start` has (its colon at `start + colon`), if any. */
function nameAt(text: string, start: number, colon: number): (typeof READ_NAME_TEXTS)[number] | undefined {
  for (let i = 0; i < READ_NAMES.length; i++) {
    const name = READ_NAME_TEXTS[i] as (typeof READ_NAME_TEXTS)[number];
    if (name.length !== colon) continue;
    const re = READ_NAMES[i] as RegExp;
    re.lastIndex = start;
    if (re.test(text)) return name;
  }
  return undefined;
}

/** `line` from `from` (to `to`) without its leading and trailing spaces and tabs (a field value's OWS). */
function trimOws(line: string, from: number, to = line.length): string {
  let a = from;
  let b = to;
  while (a < b && (line.charCodeAt(a) === 32 || line.charCodeAt(a) === 9)) a++;
  while (b > a && (line.charCodeAt(b - 1) === 32 || line.charCodeAt(b - 1) === 9)) b--;
  return line.slice(a, b);
}
