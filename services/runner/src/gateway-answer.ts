/**
 * A gateway's answer to one POST (gateway-post.ts), read as its bytes arrive: the status line and
 * head, then a body of `content-length` bytes or of chunks. Strict: anything it does not read as a
 * whole answer (a malformed head, an interim 1xx, no length, trailers, bytes past the end) is an
 * error, and the caller drops the socket and fails the request.
 */
const MAX_HEAD_BYTES = 64 * 1024;
const MAX_CHUNK_LINE_BYTES = 1024;
/** What of a head's read is decoded to find its end as text (a lone call's whole answer is ~250 bytes). */
const HEAD_PEEK_BYTES = 4096;
const CRLF2 = Buffer.from('\r\n\r\n');

/** Where the head's line from `start` ends: its CRLF, or the head's end (the blank line's CRLF). */
function lineEndOf(head: string, start: number): number {
  const at = head.indexOf('\r\n', start);
  return at < 0 ? head.length : at;
}

/** JS `trim`'s whitespace among latin1 characters: TAB, LF, VT, FF, CR, space and NBSP. */
function isSpace(c: number): boolean {
  return (c >= 9 && c <= 13) || c === 32 || c === 160;
}

/**
 * `head.slice(start, end)` is `name` (lower-case ASCII) as `toLowerCase` would compare it: A–Z
 * folded. No other latin1 character lowers to ASCII, so nothing else can match.
 */
function sameName(head: string, start: number, end: number, name: string): boolean {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) {
    let c = head.charCodeAt(start + i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== name.charCodeAt(i)) return false;
  }
  return true;
}

export class GatewayAnswer {
  status = 0;
  /** The server closes the connection after this answer (HTTP/1.0 or `connection: close`). */
  close = false;
  /** The server's `keep-alive: timeout`, ms. */
  keepAliveMs = Number.POSITIVE_INFINITY;
  private head: Buffer | undefined;
  private length = -1;
  private chunked = false;
  private readonly body: Buffer[] = [];
  private bodyBytes = 0;
  /** Chunked: reading a size line, a chunk's data (and its CRLF), or the last chunk's CRLF. */
  private state: 'size' | 'data' | 'end' = 'size';
  /** Chunked: bytes of the current chunk still to read, its CRLF included. */
  private chunkLeft = 0;
  private pending: Buffer | undefined;

  /** Feeds a chunk; true when the answer is complete, an Error when it cannot be read. */
  push(chunk: Buffer): boolean | Error {
    if (this.status === 0) {
      this.head = this.head ? Buffer.concat([this.head, chunk]) : chunk;
      // Searched as text: a string's `indexOf` runs in V8, a Buffer's goes through node's binding
      // (its argument checks and a C++ call, more than the latin1 decode of an answer's few bytes).
      // Past the first HEAD_PEEK_BYTES (a large body in the head's read) the Buffer is searched.
      const peek = this.head.toString('latin1', 0, Math.min(this.head.length, HEAD_PEEK_BYTES));
      let end = peek.indexOf('\r\n\r\n');
      let head: string;
      if (end >= 0) head = peek.slice(0, end);
      else {
        end = this.head.indexOf(CRLF2);
        if (end < 0)
          return this.head.length > MAX_HEAD_BYTES
            ? new Error('the gateway answer head is too large')
            : false;
        head = this.head.toString('latin1', 0, end);
      }
      const failure = this.readHead(head);
      if (failure) return failure;
      chunk = this.head.subarray(end + 4);
      this.head = undefined;
    }
    return this.chunked ? this.pushChunked(chunk) : this.pushPlain(chunk);
  }

  /** The body's text (UTF-8). */
  text(): string {
    if (this.body.length === 0) return '';
    return (this.body.length === 1 ? this.body[0]! : Buffer.concat(this.body, this.bodyBytes)).toString(
      'utf8',
    );
  }

  /**
   * The head read in place: each line found by `indexOf`, a header's name compared character by
   * character (JS `trim`'s whitespace around it skipped, A–Z folded), and a string made only of the
   * value of a header this reader uses. Until round 50 (`binding-runner`) the head was split into
   * lines and each line's name and value sliced, trimmed and lowered (~20 strings an answer, on the
   * call's path in the runner); what it accepts and refuses is the same.
   */
  private readHead(head: string): Error | undefined {
    const malformed = () => new Error('the gateway sent a malformed answer');
    let lineEnd = lineEndOf(head, 0);
    // `HTTP/1.<0|1> <3 digits>`, then a space or the line's end.
    if (lineEnd < 12 || !head.startsWith('HTTP/1.') || head.charCodeAt(8) !== 32) return malformed();
    const minor = head.charCodeAt(7);
    const d0 = head.charCodeAt(9) - 48;
    const d1 = head.charCodeAt(10) - 48;
    const d2 = head.charCodeAt(11) - 48;
    if (minor !== 48 && minor !== 49) return malformed();
    if (d0 < 0 || d0 > 9 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) return malformed();
    if (lineEnd > 12 && head.charCodeAt(12) !== 32) return malformed();
    this.status = d0 * 100 + d1 * 10 + d2;
    if (this.status < 200) return new Error(`the gateway sent an interim answer (${this.status})`);
    this.close = minor === 48;
    while (lineEnd < head.length) {
      const start = lineEnd + 2;
      lineEnd = lineEndOf(head, start);
      const colon = head.indexOf(':', start);
      if (colon <= start || colon > lineEnd) return malformed();
      let nameStart = start;
      let nameEnd = colon;
      while (nameStart < nameEnd && isSpace(head.charCodeAt(nameStart))) nameStart++;
      while (nameEnd > nameStart && isSpace(head.charCodeAt(nameEnd - 1))) nameEnd--;
      if (sameName(head, nameStart, nameEnd, 'content-length')) {
        const v = head.slice(colon + 1, lineEnd).trim();
        if (!/^\d{1,15}$/.test(v) || (this.length >= 0 && this.length !== Number(v))) return malformed();
        this.length = Number(v);
      } else if (sameName(head, nameStart, nameEnd, 'transfer-encoding')) {
        if (
          head
            .slice(colon + 1, lineEnd)
            .trim()
            .toLowerCase() !== 'chunked'
        )
          return new Error('the gateway sent an unsupported answer');
        this.chunked = true;
      } else if (sameName(head, nameStart, nameEnd, 'connection')) {
        const v = head
          .slice(colon + 1, lineEnd)
          .trim()
          .toLowerCase();
        if (v.includes('close')) this.close = true;
        else if (v.includes('keep-alive')) this.close = false;
      } else if (sameName(head, nameStart, nameEnd, 'keep-alive')) {
        const t = /timeout=(\d+)/i.exec(head.slice(colon + 1, lineEnd))?.[1];
        if (t !== undefined) this.keepAliveMs = Number(t) * 1000;
      }
    }
    if (this.chunked) {
      // Both framings at once is how a request is smuggled: not read.
      if (this.length >= 0) return malformed();
    } else if (this.length < 0) {
      if (this.status !== 204 && this.status !== 304)
        return new Error('the gateway sent an answer without a length');
      this.length = 0;
    }
    return undefined;
  }

  private pushPlain(chunk: Buffer): boolean | Error {
    if (chunk.length > 0) {
      this.body.push(chunk);
      this.bodyBytes += chunk.length;
    }
    if (this.bodyBytes > this.length) return new Error('the gateway sent more than its answer');
    return this.bodyBytes === this.length;
  }

  private pushChunked(chunk: Buffer): boolean | Error {
    let data = this.pending && this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = undefined;
    for (;;) {
      if (this.state === 'end') {
        if (data.length < 2) {
          this.pending = data;
          return data.length === 1 && data[0] !== 13 ? new Error('the gateway sent trailers') : false;
        }
        if (data[0] !== 13 || data[1] !== 10) return new Error('the gateway sent trailers');
        return data.length === 2 ? true : new Error('the gateway sent more than its answer');
      }
      if (this.state === 'size') {
        const nl = data.indexOf('\r\n');
        if (nl < 0) {
          if (data.length > MAX_CHUNK_LINE_BYTES) return new Error('the gateway sent a malformed chunk');
          this.pending = data;
          return false;
        }
        const text = data.toString('latin1', 0, nl).split(';')[0]!.trim();
        if (!/^[0-9a-fA-F]{1,12}$/.test(text)) return new Error('the gateway sent a malformed chunk');
        const size = Number.parseInt(text, 16);
        data = data.subarray(nl + 2);
        if (size === 0) {
          this.state = 'end';
          continue;
        }
        this.chunkLeft = size + 2;
        this.state = 'data';
      }
      if (data.length === 0) return false;
      const take = Math.min(this.chunkLeft, data.length);
      // The chunk's last two bytes are its CRLF, not data.
      const dataBytes = Math.max(0, Math.min(take, this.chunkLeft - 2));
      if (dataBytes > 0) {
        this.body.push(data.subarray(0, dataBytes));
        this.bodyBytes += dataBytes;
      }
      for (let i = dataBytes; i < take; i++)
        if (data[i] !== (this.chunkLeft - i === 2 ? 13 : 10))
          return new Error('the gateway sent a malformed chunk');
      this.chunkLeft -= take;
      data = data.subarray(take);
      if (this.chunkLeft > 0) return false;
      this.state = 'size';
    }
  }
}
