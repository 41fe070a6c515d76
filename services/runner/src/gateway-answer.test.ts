/**
 * The lone call's answer reader (gateway-answer.ts): a whole answer however its bytes are split,
 * `content-length` and chunked bodies, and an error for anything it does not read as one answer.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayAnswer } from './gateway-answer.ts';

/** Feeds `raw` in pieces of `step` bytes; the first non-false result and the answer. */
function feed(
  raw: string | Buffer,
  step: number,
): { result: boolean | Error; answer: GatewayAnswer; at: number } {
  const bytes = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
  const answer = new GatewayAnswer();
  for (let at = 0; at < bytes.length; at += step) {
    const result = answer.push(bytes.subarray(at, Math.min(bytes.length, at + step)));
    if (result !== false) return { result, answer, at: Math.min(bytes.length, at + step) };
  }
  return { result: false, answer, at: bytes.length };
}

const ok = (body: string, extra = '') =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const chunked = (parts: string[], extra = '') =>
  `HTTP/1.1 200 OK\r\n${extra}transfer-encoding: chunked\r\n\r\n${parts
    .map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`)
    .join('')}0\r\n\r\n`;

describe('a gateway answer', () => {
  const body = '{"outcome":{"type":"result","valueJson":"{\\"é\\":\\"☃\\"}"},"deliverySeq":3}';

  it('reads a content-length answer split anywhere, multi-byte characters included', () => {
    for (const step of [1, 2, 3, 7, 64, 4096]) {
      const { result, answer, at } = feed(ok(body, 'keep-alive: timeout=72\r\n'), step);
      expect(result).toBe(true);
      expect(at).toBe(Buffer.byteLength(ok(body, 'keep-alive: timeout=72\r\n')));
      expect(answer.status).toBe(200);
      expect(answer.text()).toBe(body);
      expect(answer.close).toBe(false);
      expect(answer.keepAliveMs).toBe(72_000);
    }
  });

  it('reads a chunked answer split anywhere, with chunk extensions', () => {
    const raw = chunked(['{"outcome":', '{"type":"result","valueJson":"\\"☃\\""}}']).replace(
      '\r\n{"o',
      ';x=1\r\n{"o',
    );
    for (const step of [1, 2, 5, 4096]) {
      const { result, answer } = feed(raw, step);
      expect(result).toBe(true);
      expect(answer.text()).toBe('{"outcome":{"type":"result","valueJson":"\\"☃\\""}}');
    }
  });

  it('reads the status, an empty body, HTTP/1.0 and connection: close', () => {
    const refused = feed('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n', 4096);
    expect(refused.result).toBe(true);
    expect(refused.answer.status).toBe(404);
    expect(refused.answer.text()).toBe('');
    expect(feed('HTTP/1.1 204 No Content\r\n\r\n', 3).result).toBe(true);
    expect(feed(ok('{}'), 4096).answer.close).toBe(false);
    expect(feed(ok('{}', 'connection: close\r\n'), 4096).answer.close).toBe(true);
    expect(feed(ok('{}').replace('HTTP/1.1', 'HTTP/1.0'), 4096).answer.close).toBe(true);
    expect(
      feed(ok('{}', 'connection: keep-alive\r\n').replace('HTTP/1.1', 'HTTP/1.0'), 4096).answer.close,
    ).toBe(false);
  });

  it('waits for the rest of an answer', () => {
    expect(feed(ok(body).slice(0, -1), 1).result).toBe(false);
    expect(feed(chunked(['abc']).slice(0, -2), 1).result).toBe(false);
    expect(feed('HTTP/1.1 200 OK\r\ncontent-len', 1).result).toBe(false);
  });

  it('refuses what is not one whole answer', () => {
    const refusals: [string, string][] = [
      ['not http\r\n\r\n', 'the gateway sent a malformed answer'],
      ['HTTP/1.1 20 OK\r\ncontent-length: 0\r\n\r\n', 'the gateway sent a malformed answer'],
      ['HTTP/1.1 200 OK\r\nno colon\r\ncontent-length: 0\r\n\r\n', 'the gateway sent a malformed answer'],
      ['HTTP/1.1 100 Continue\r\n\r\n', 'the gateway sent an interim answer (100)'],
      [
        'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n{}',
        'the gateway sent an answer without a length',
      ],
      ['HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n', 'the gateway sent a malformed answer'],
      [
        'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}',
        'the gateway sent a malformed answer',
      ],
      [
        'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        'the gateway sent a malformed answer',
      ],
      [
        'HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n',
        'the gateway sent an unsupported answer',
      ],
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', 'the gateway sent a malformed chunk'],
      [
        'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}xx0\r\n\r\n',
        'the gateway sent a malformed chunk',
      ],
      [
        'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\nx-trailer: 1\r\n\r\n',
        'the gateway sent trailers',
      ],
    ];
    for (const [raw, message] of refusals) {
      for (const step of [1, 4096]) {
        const { result } = feed(raw, step);
        expect(result, `${JSON.stringify(raw)} in steps of ${step}`).toBeInstanceOf(Error);
        expect((result as Error).message).toBe(message);
      }
    }
    // Bytes past the answer in the same read: refused. In a later read they reach an idle socket,
    // which gateway-post.ts drops.
    for (const raw of [`${ok('{}')}HTTP/1.1 200 OK`, `${chunked(['{}'])}x`]) {
      expect((feed(raw, 4096).result as Error).message).toBe('the gateway sent more than its answer');
      expect(feed(raw, 1).result).toBe(true);
    }
    const huge = feed(`HTTP/1.1 200 OK\r\nx: ${'a'.repeat(70 * 1024)}`, 1024);
    expect((huge.result as Error).message).toBe('the gateway answer head is too large');
  });

  it('reads header names in any case and with whitespace around them, and the status line strictly', () => {
    const raw =
      'HTTP/1.1 201\r\n Content-Length\t: 2 \r\nCONNECTION:Close\r\nKeep-Alive: max=5, Timeout=9\r\n' +
      'x-content-length: 7\r\ncontent-lengthx: 7\r\n\r\n{}';
    for (const step of [1, 4096]) {
      const { result, answer } = feed(raw, step);
      expect(result).toBe(true);
      expect(answer.status).toBe(201);
      expect(answer.text()).toBe('{}');
      expect(answer.close).toBe(true);
      expect(answer.keepAliveMs).toBe(9_000);
    }
    const chunkedAnswer = feed(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding:  Chunked \r\n\r\n2\r\n{}\r\n0\r\n\r\n',
      4096,
    );
    expect(chunkedAnswer.result).toBe(true);
    expect(chunkedAnswer.answer.text()).toBe('{}');
    for (const line of [
      'http/1.1 200 OK',
      'HTTP/1.2 200 OK',
      'HTTP/1.1  200 OK',
      'HTTP/1.1 200x',
      'HTTP/1.1 2a0 OK',
    ]) {
      const { result } = feed(`${line}\r\ncontent-length: 0\r\n\r\n`, 4096);
      expect((result as Error).message, line).toBe('the gateway sent a malformed answer');
    }
    const colonFirst = feed('HTTP/1.1 200 OK\r\n: x\r\ncontent-length: 0\r\n\r\n', 4096);
    expect((colonFirst.result as Error).message).toBe('the gateway sent a malformed answer');
  });

  it('finds the end of a head past its first 4 KiB, and one whose body came in the same read', () => {
    const long = ok(body, `x-pad: ${'p'.repeat(5000)}\r\n`);
    const { result, answer } = feed(long, 64 * 1024);
    expect(result).toBe(true);
    expect(answer.text()).toBe(body);
    const bigBody = 'b'.repeat(10_000);
    expect(feed(ok(bigBody), 64 * 1024).answer.text()).toBe(bigBody);
  });

  describe("on the call's path", () => {
    afterEach(() => vi.restoreAllMocks());

    // Round 50 (`binding-runner`): the head is read in place, not split into lines whose names are
    // sliced, trimmed and lowered one by one (~20 strings an answer).
    it("reads a head without splitting it into lines or lowering each header's name", () => {
      const raw = Buffer.from(
        `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
          `Date: Mon, 07 Dec 2026 17:46:04 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=72\r\n\r\n${body}`,
        'latin1',
      );
      const split = vi.spyOn(String.prototype, 'split');
      const lower = vi.spyOn(String.prototype, 'toLowerCase');
      const answer = new GatewayAnswer();
      const result = answer.push(raw);
      const calls = { split: split.mock.calls.length, lower: lower.mock.calls.length };
      vi.restoreAllMocks();
      expect(result).toBe(true);
      expect(answer.keepAliveMs).toBe(72_000);
      expect(calls.split).toBe(0);
      // The connection header's value only.
      expect(calls.lower).toBe(1);
    });
  });
});
