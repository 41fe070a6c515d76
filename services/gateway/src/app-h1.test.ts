/**
 * Plain-http App calls go through the gateway's own HTTP/1.1 client (app-h1.ts), tested against a
 * raw TCP App that answers whatever a test tells it to: the path taken (counted), kept-alive reuse,
 * no header can inject a line (nothing is sent), a second answer pipelined or bytes sent to an idle
 * connection drop it, an early close and a 100 Continue fail the call, a 103 is skipped, a slowloris
 * answer ends at the whole deadline with its connection closed.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { h1Stats } from './app-h1.ts';
import { AppProtocolError } from './app-h1-answer.ts';
import { AppTimeoutError, postToApp } from './app-http.ts';

/** What the App does with a request's bytes, by the request's path. */
type Behaviour = (socket: Socket, request: string) => void;
const behaviours: Record<string, Behaviour> = {};
const seen: string[] = [];
let server: Server;
let port: number;
let connections = 0;
let closed = 0;

beforeAll(async () => {
  server = createServer((socket) => {
    connections++;
    socket.on('close', () => closed++);
    socket.on('error', () => undefined);
    let got = '';
    socket.on('data', (d) => {
      got += d.toString('latin1');
      const end = got.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(got)?.[1] ?? 0);
      if (end < 0 || got.length < end + 4 + length) return;
      const request = got.slice(0, end + 4 + length);
      got = got.slice(end + 4 + length);
      seen.push(request);
      const path = request.split(' ')[1] ?? '/';
      (behaviours[path] ?? ((s) => s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok')))(
        socket,
        request,
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

const opts = { timeoutMs: 2000, allowPrivate: true, maxResponseBytes: 1024 };
const post = (path: string, headers: Record<string, string> = {}, o = opts) =>
  postToApp(`http://127.0.0.1:${port}${path}`, headers, '{"é":1}', o);
const turn = () => new Promise((r) => setImmediate(r));

describe('App HTTP/1.1 client', () => {
  it('takes the plain-http path, keeps the connection alive and sends the request undici sent', async () => {
    const before = { ...h1Stats };
    const c0 = connections;
    for (let i = 0; i < 3; i++)
      expect(await post('/a?q=1', { 'x-Tenant-Header': 'v\x80' })).toEqual({ status: 200, text: 'ok' });
    expect(h1Stats.requests - before.requests).toBe(3);
    expect(h1Stats.connections - before.connections).toBe(1);
    expect(connections - c0).toBe(1);
    expect(seen.at(-1)).toBe(
      `POST /a?q=1 HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: keep-alive\r\nx-Tenant-Header: v\x80\r\ncontent-length: 8\r\n\r\n{"\xc3\xa9":1}`,
    );
  });

  it('refuses a header that could inject a line or reframe the request: nothing is sent', async () => {
    const sent = seen.length;
    const c0 = connections;
    const refused: Record<string, string>[] = [
      { 'x-a': 'v\r\nx-b: evil' },
      { 'x-a': 'v\nx-b: evil' },
      { 'x-a': 'v\rx' },
      { 'x-a': 'v\0' },
      { 'x-a': 'v\u0100' },
      { 'x a': 'v' },
      { 'x-a:': 'v' },
      { 'x-a\r\nx-b': 'v' },
      { 'Transfer-Encoding': 'chunked' },
      { 'content-length': '0' },
      { connection: 'close' },
      { upgrade: 'websocket' },
      { expect: '100-continue' },
      { 'keep-alive': 'timeout=5' },
      { host: 'a', Host: 'b' },
    ];
    for (const headers of refused) await expect(post('/', headers)).rejects.toThrow(/invalid|duplicate/);
    await expect(
      postToApp(`http://127.0.0.1:${port}/`, {}, '{}', opts).then(() =>
        postToApp(`http://127.0.0.1:${port}/a b`, {}, '{}', opts),
      ),
    ).resolves.toMatchObject({ status: 200 });
    expect(seen.length - sent).toBe(2);
    expect(seen.at(-1)?.startsWith('POST /a%20b HTTP/1.1\r\n')).toBe(true);
    expect(connections - c0).toBeLessThanOrEqual(1);
  });

  it('a second answer pipelined behind the first: the first is the answer, the connection is dropped', async () => {
    behaviours['/two'] = (s) =>
      s.write(
        'HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none' +
          'HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nevil',
      );
    const closed0 = closed;
    expect(await post('/two')).toEqual({ status: 200, text: 'one' });
    // The connection that carried it is closed, not kept for the next call.
    await expect.poll(() => closed - closed0).toBe(1);
    await turn();
    expect(await post('/')).toEqual({ status: 200, text: 'ok' });
  });

  it('bytes sent to an idle connection drop it: the next call opens a new one', async () => {
    behaviours['/later'] = (s) => {
      s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      setTimeout(() => s.write('HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nevil'), 30);
    };
    expect(await post('/later')).toEqual({ status: 200, text: 'ok' });
    const c0 = h1Stats.connections;
    const closed0 = closed;
    await new Promise((r) => setTimeout(r, 80));
    await expect.poll(() => closed - closed0).toBe(1);
    expect(await post('/')).toEqual({ status: 200, text: 'ok' });
    expect(h1Stats.connections - c0).toBe(1);
  });

  it('an early close fails the call; so do 100 Continue and a bad framing; a 103 is skipped', async () => {
    behaviours['/early'] = (s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nok');
    behaviours['/reset'] = (s) => s.resetAndDestroy();
    behaviours['/continue'] = (s) =>
      s.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
    behaviours['/smuggle'] = (s) =>
      s.write(
        'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n',
      );
    behaviours['/hints'] = (s) =>
      s.write('HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
    await expect(post('/early')).rejects.toThrow(AppProtocolError);
    await expect(post('/reset')).rejects.toThrow(/ECONNRESET|closed/);
    await expect(post('/continue')).rejects.toThrow(AppProtocolError);
    await expect(post('/smuggle')).rejects.toThrow('Transfer-Encoding with Content-Length');
    expect(await post('/hints')).toEqual({ status: 200, text: 'ok' });
  });

  it('a slowloris head ends at the whole deadline and its connection is closed', async () => {
    const timers: NodeJS.Timeout[] = [];
    behaviours['/slow'] = (s) => {
      const head = 'HTTP/1.1 200 OK\r\nx-a: ' + 'a'.repeat(1000);
      let i = 0;
      timers.push(setInterval(() => !s.destroyed && s.write(head[i++ % head.length] ?? 'a'), 20));
    };
    const closed0 = closed;
    const err = await post('/slow', {}, { ...opts, timeoutMs: 300 }).catch((e: unknown) => e);
    for (const t of timers) clearInterval(t);
    expect(err).toBeInstanceOf(AppTimeoutError);
    await expect.poll(() => closed - closed0).toBe(1);
  });

  it('a hundred calls at once each get their own answer, then reuse the connections', async () => {
    behaviours['/echo'] = (s, req) => {
      const id = /x-id: (\d+)/.exec(req)?.[1] ?? '';
      s.write(
        `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${id.length.toString(16)}\r\n${id}\r\n0\r\n\r\n`,
      );
    };
    const round = () =>
      Promise.all(
        Array.from({ length: 100 }, (_, i) => post('/echo', { 'x-id': String(i) }).then((a) => a.text)),
      );
    const want = Array.from({ length: 100 }, (_, i) => String(i));
    expect(await round()).toEqual(want);
    await turn();
    const c0 = h1Stats.connections;
    expect(await round()).toEqual(want);
    expect(h1Stats.connections - c0).toBe(0);
  });
});
