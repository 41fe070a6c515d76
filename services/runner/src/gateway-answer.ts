/**
 * A gateway's answer to one POST (gateway-post.ts), read as its bytes arrive: the status line and
 * head, then a body of `content-length` bytes or of chunks. Strict: anything it does not read as a
 * whole answer (a malformed head, an interim 1xx, no length, trailers, bytes past the end) is an
 * error, and the caller drops the socket and fails the request.
 */
const MAX_HEAD_BYTES = 64 * 1024;
const MAX_CHUNK_LINE_BYTES = 1024;
const CRLF2 = Buffer.from('\r\n\r\n');

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
      const end = this.head.indexOf(CRLF2);
      if (end < 0)
        return this.head.length > MAX_HEAD_BYTES ? new Error('the gateway answer head is too large') : false;
      const failure = this.readHead(this.head.toString('latin1', 0, end));
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

  private readHead(head: string): Error | undefined {
    const malformed = () => new Error('the gateway sent a malformed answer');
    const lines = head.split('\r\n');
    const m = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0] ?? '');
    if (!m) return malformed();
    this.status = Number(m[2]);
    if (this.status < 200) return new Error(`the gateway sent an interim answer (${this.status})`);
    this.close = m[1] === '0';
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) return malformed();
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') {
        if (!/^\d{1,15}$/.test(value) || (this.length >= 0 && this.length !== Number(value)))
          return malformed();
        this.length = Number(value);
      } else if (name === 'transfer-encoding') {
        if (value.toLowerCase() !== 'chunked') return new Error('the gateway sent an unsupported answer');
        this.chunked = true;
      } else if (name === 'connection') {
        const v = value.toLowerCase();
        if (v.includes('close')) this.close = true;
        else if (v.includes('keep-alive')) this.close = false;
      } else if (name === 'keep-alive') {
        const t = /timeout=(\d+)/i.exec(value)?.[1];
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
