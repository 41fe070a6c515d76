/**
 * The App client's paths that read from the bytes (round 44 `app-wakeups`): a chunked answer's
 * chunk-size lines, chunk ends and empty trailer section whole in one read, a Content-Length body
 * whole in one read, a header line checked in one test; and the request's names classified once.
 * Each is taken when it should be (counted: no hold buffer for an answer read whole), reads what the
 * general path reads, and refuses what it refuses, whole and at every split (where the general path
 * takes over).
 */
import { describe, expect, it } from 'vitest';
import { feeds } from '../test/answer-feeds.ts';
import { requestBytes } from './app-h1.ts';
import { type Answer, AnswerReader, AppProtocolError, readerStats } from './app-h1-answer.ts';
import { AnswerTooLargeError } from './app-http-errors.ts';

/** Reads `parts` through one reused buffer, as the socket's `onread` does, overwritten after each push. */
function read(parts: Buffer[], closeAtEnd = false, max = 1024): Answer | undefined {
  const r = new AnswerReader(max);
  const shared = Buffer.alloc(4096);
  let answer: Answer | undefined;
  for (const p of parts) {
    p.copy(shared, 0);
    answer = r.push(shared.subarray(0, p.length)) ?? answer;
    shared.fill(0x78);
  }
  if (closeAtEnd) answer = r.close();
  return answer;
}

const HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nDate: Sun, 06 Dec 2026 22:38:45 GMT\r\n';
const CHUNKED = `${HEAD}Connection: keep-alive\r\nKeep-Alive: timeout=600\r\nTransfer-Encoding: chunked\r\n\r\n`;

describe('App answer reader: from the bytes', () => {
  it("node:http's chunked answer read whole makes no hold buffer; split, it is held as before", () => {
    const text = `${CHUNKED}b\r\n{"ok":true}\r\n0\r\n\r\n`;
    const before = readerStats.held;
    expect(read([Buffer.from(text)])).toEqual({
      status: 200,
      text: '{"ok":true}',
      reusable: true,
      keepAliveSeconds: 600,
    });
    expect(readerStats.held - before).toBe(0);
    // Cut inside the head: the general path holds it (one buffer), and reads the same answer.
    const cut = text.indexOf('Keep');
    expect(read([Buffer.from(text.slice(0, cut)), Buffer.from(text.slice(cut))])?.text).toBe('{"ok":true}');
    expect(readerStats.held - before).toBe(1);
  });

  it('good answers read alike at every split, the body kept past the reused read buffer', () => {
    const cases: [string, string, number?][] = [
      [`${CHUNKED}b\r\n{"ok":true}\r\n0\r\n\r\n`, '{"ok":true}', 600],
      [`${CHUNKED}1\r\na\r\n000000000002\r\nbc\r\nA\r\n0123456789\r\n0\r\n\r\n`, 'abc0123456789', 600],
      [`${CHUNKED}0000000000000003\r\nabc\r\n0;x=y\r\nx-t: 1\r\n\r\n`, 'abc', 600],
      [`${CHUNKED}2;e\r\nhi\r\n00\r\n\r\n`, 'hi', 600],
      [`${HEAD}Content-LENGTH: \t 4 \t\r\n\r\n\xc3\xa9\xc3\xa9`, 'éé'],
      [`${HEAD}content-length: 0\r\n\r\n`, ''],
      [`${HEAD}x-abcdefgh: close\r\nx-abcdefghijkl: chunked\r\ncontent-length: 2\r\n\r\nok`, 'ok'],
    ];
    for (const [text, body, keepAlive] of cases)
      for (const parts of feeds(text)) {
        const a = read(parts);
        expect(a).toMatchObject({ status: 200, text: body, reusable: true });
        expect(a?.keepAliveSeconds).toBe(keepAlive);
      }
  });

  it('refuses at every split what the general path refuses', () => {
    const bad = [
      `${CHUNKED}b\n{"ok":true}\r\n0\r\n\r\n`,
      `${CHUNKED}b\r{"ok":true}\r\n0\r\n\r\n`,
      `${CHUNKED}b \r\n{"ok":true}\r\n0\r\n\r\n`,
      `${CHUNKED}+b\r\n{"ok":true}\r\n0\r\n\r\n`,
      `${CHUNKED}b\r\n{"ok":true}\r\r\n0\r\n\r\n`,
      `${CHUNKED}b\r\n{"ok":true}\n0\r\n\r\n`,
      `${CHUNKED}b\r\n{"ok":true}x\r\n0\r\n\r\n`,
      `${CHUNKED}b\r\n{"ok":true}\r\n0\r\n\n`,
      `${CHUNKED}b\r\n{"ok":true}\r\n0\r\n\r\r\n`,
      `${CHUNKED}b\r\n{"ok":true}\r\n0\r\n \r\n`,
      `${CHUNKED}b\r\n{"ok":true}\r\n0\r\nx\r\n\r\n`,
      `${CHUNKED}b\r\n{"ok":true}\r\n0\n\r\n`,
      `${CHUNKED}00000000000000000\r\n\r\n`,
      `${HEAD}x-a:\x7f\r\ncontent-length: 0\r\n\r\n`,
      `${HEAD}x-a:\x00\r\ncontent-length: 0\r\n\r\n`,
      `${HEAD}:x\r\ncontent-length: 0\r\n\r\n`,
      `${HEAD}content-length: 0 0\r\n\r\n`,
      `${HEAD}content-length:  \r\n\r\n`,
      `${HEAD}transfer-encoding: chunked \t,\r\n\r\n0\r\n\r\n`,
    ];
    for (const text of bad)
      for (const parts of feeds(text))
        expect(() => read(parts, true), JSON.stringify(text)).toThrow(AppProtocolError);
  });

  it('the cap holds on the byte path: a chunk size past it, a whole body past it', () => {
    expect(() => read([Buffer.from(`${CHUNKED}11\r\n`)], false, 16)).toThrow(AnswerTooLargeError);
    expect(() => read([Buffer.from(`${CHUNKED}fffffffffffff\r\n`)], false, 16)).toThrow(AnswerTooLargeError);
    expect(() => read([Buffer.from(`${CHUNKED}ffffffffffffff\r\n`)], false, 16)).toThrow(AnswerTooLargeError);
    expect(() =>
      read([Buffer.from(`${HEAD}content-length: 17\r\n\r\n${'x'.repeat(17)}`)], false, 16),
    ).toThrow(AnswerTooLargeError);
  });
});

describe('App request: names classified once', () => {
  const target = { host: '127.0.0.1', port: 80, hostHeader: '127.0.0.1', path: '/' };
  it('a refused name is refused every time, in any case, and a plain one sent as given', () => {
    for (let i = 0; i < 3; i++) {
      for (const name of ['Content-Length', 'content-length', 'TRANSFER-ENCODING', 'Expect', 'x a', 'x-a:'])
        expect(() => requestBytes(target, { [name]: '1' }, '')).toThrow(/invalid/);
      expect(() => requestBytes(target, { Host: 'a', host: 'b' }, '')).toThrow(/duplicate/);
      expect(requestBytes(target, { 'X-Plain': 'v', Host: 'h.example' }, '{}')).toBe(
        'POST / HTTP/1.1\r\nhost: h.example\r\nconnection: keep-alive\r\nX-Plain: v\r\ncontent-length: 2\r\n\r\n{}',
      );
    }
  });

  it('a head with any byte over ASCII goes out as latin1 bytes; a control character is refused', () => {
    const sent = (headers: Record<string, string>, t = target) => requestBytes(t, headers, 'é');
    expect(sent({ 'x-a': 'a\tb' })).toBeTypeOf('string');
    for (const [headers, t] of [
      [{ 'x-a': 'v\xff' }, target],
      [{ host: 'h\x80' }, target],
      [{}, { ...target, path: '/\xe9' }],
    ] as const) {
      const bytes = sent(headers, t);
      expect(Buffer.isBuffer(bytes)).toBe(true);
      const text = (bytes as Buffer).toString('latin1');
      expect(text.endsWith('\r\n\r\n\xc3\xa9')).toBe(true);
    }
    for (const value of ['\x7f', '\x1b', 'a\u0100', 'a\r\nx: y'])
      expect(() => sent({ 'x-a': value })).toThrow(/invalid/);
    expect(() => sent({}, { ...target, path: '/a\u0100' })).toThrow(/invalid request path/);
    expect(() => sent({}, { ...target, path: '/a b' })).toThrow(/invalid request path/);
  });
});

describe('App request: its bytes as 6b60376a made them', () => {
  // Round 47 (`gateway-cpu`) joins the request's pieces once instead of a template a header; the
  // bytes an App receives (and their signature's body) are the same. A guard: the reference is
  // 6b60376a's head, made here as it made it; passes there too.
  const reference = (
    target: { path: string; hostHeader: string },
    headers: Record<string, string>,
    body: string,
  ) => {
    let host = target.hostHeader;
    let lines = '';
    for (const name in headers) {
      if (name.toLowerCase() === 'host') host = headers[name] as string;
      else lines += `${name}: ${headers[name]}\r\n`;
    }
    return `POST ${target.path} HTTP/1.1\r\nhost: ${host}\r\nconnection: keep-alive\r\n${lines}content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
  };
  const bytesOf = (sent: string | Buffer) => (typeof sent === 'string' ? Buffer.from(sent, 'utf8') : sent);

  it('sends the same bytes for ASCII and latin1 heads, a Host given or not, any body', () => {
    const targets = [
      { host: '127.0.0.1', port: 80, hostHeader: '127.0.0.1:8080', path: '/calls?x=1' },
      { host: 'h', port: 80, hostHeader: 'h', path: '/\xe9' },
    ];
    const headerSets: Record<string, string>[] = [
      {},
      {
        'content-type': 'application/json',
        'idempotency-key': 'run_1:0',
        'webhook-signature': 'v1,abc= v1,def=',
      },
      { Authorization: 'Bearer t', Host: 'app.example', 'x-a': 'v\xff', 'x-b': 'a\tb' },
      { 'X-Empty': '', 'x-long': 'y'.repeat(3000) },
    ];
    for (const target of targets)
      for (const headers of headerSets)
        for (const body of ['', '{"a":1}', '{"é":"🌍"}', 'x'.repeat(5000)]) {
          const head = reference(target, headers, body);
          const want = Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body, 'utf8')]);
          expect(bytesOf(requestBytes(target, headers, body)).equals(want)).toBe(true);
        }
  });
});
