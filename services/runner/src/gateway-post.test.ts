/**
 * The lone call's transport (gateway-post.ts) against real servers: one kept-alive socket reused
 * call after call, a new one when the server closed it, said it would or said `connection: close`;
 * an answer that does not come whole, an abort, or bytes on an idle socket fail the request or drop
 * the socket, never mix one call's answer into another's.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayPost } from './gateway-post.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function listen(server: Server | NetServer): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  closers.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** An echo gateway: answers each POST with its body and how many connections it has seen. */
async function echo(
  keepAliveTimeoutMs = 5000,
): Promise<{ url: string; connections: () => number; server: Server }> {
  let connections = 0;
  const server = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ body, url: req.url, auth: req.headers.authorization }));
    });
  });
  server.keepAliveTimeout = keepAliveTimeoutMs;
  server.on('connection', () => connections++);
  return { url: await listen(server), connections: () => connections, server };
}

const headers = { authorization: 'Bearer tok', 'content-type': 'application/json' };

describe('the lone call transport', () => {
  it('sends the POST whole and reuses one socket for calls one after another', async () => {
    const gw = await echo();
    const post = new GatewayPost();
    closers.push(async () => post.close());
    for (let i = 0; i < 5; i++) {
      const body = JSON.stringify({ index: i, argsJson: '{"s":"☃ é"}' });
      const res = await post.post(`${gw.url}/internal/v1/code-runs/r%2F1/calls?x=1`, headers, body);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.text)).toEqual({
        body,
        url: '/internal/v1/code-runs/r%2F1/calls?x=1',
        auth: 'Bearer tok',
      });
    }
    const refused = await post.post(`${gw.url}/missing`, headers, '{}');
    expect(refused.status).toBe(404);
    expect(gw.connections()).toBe(1);
    // Calls in flight at once each have a socket; afterwards both are kept.
    await Promise.all([1, 2].map((i) => post.post(`${gw.url}/x`, headers, `{"i":${i}}`)));
    expect(gw.connections()).toBe(2);
    await Promise.all([1, 2].map((i) => post.post(`${gw.url}/x`, headers, `{"i":${i}}`)));
    expect(gw.connections()).toBe(2);
  });

  it('opens a new socket when the server closed the idle one, or said it would close it', async () => {
    const gw = await echo();
    const post = new GatewayPost();
    closers.push(async () => post.close());
    await post.post(`${gw.url}/a`, headers, '{}');
    gw.server.closeIdleConnections();
    await new Promise((r) => setTimeout(r, 50));
    expect((await post.post(`${gw.url}/b`, headers, '{}')).status).toBe(200);
    expect(gw.connections()).toBe(2);
    // A server that keeps idle sockets 1 s: within the margin, never reused.
    const short = await echo(1000);
    await post.post(`${short.url}/a`, headers, '{}');
    await post.post(`${short.url}/b`, headers, '{}');
    expect(short.connections()).toBe(2);
  });

  it('does not reuse a socket after connection: close, HTTP/1.0, or bytes sent to it while idle', async () => {
    let connections = 0;
    const server = createNetServer((socket) => {
      connections++;
      let seen = '';
      socket.on('data', (d) => {
        seen += d.toString('latin1');
        if (!seen.includes('\r\n\r\n')) return;
        const path = seen.split(' ')[1];
        seen = '';
        if (path === '/close')
          socket.write('HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}');
        else if (path === '/old') socket.write('HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}');
        else if (path === '/junk') {
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}');
          // Unsolicited: an answer to a request never made, sent while the socket is idle.
          setTimeout(() => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{"x":"y"}'), 20);
        } else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n{"n":1}');
      });
    });
    const url = await listen(server);
    const post = new GatewayPost();
    closers.push(async () => post.close());
    for (const path of ['/close', '/old']) {
      expect((await post.post(`${url}${path}`, headers, '{}')).text).toBe('{}');
      const before = connections;
      expect((await post.post(`${url}/n`, headers, '{}')).text).toBe('{"n":1}');
      expect(connections - before).toBe(1);
    }
    expect((await post.post(`${url}/junk`, headers, '{}')).text).toBe('{}');
    const before = connections;
    await new Promise((r) => setTimeout(r, 80));
    // The junk was never read as this call's answer: the socket that got it was dropped.
    expect((await post.post(`${url}/n`, headers, '{}')).text).toBe('{"n":1}');
    expect(connections - before).toBe(1);
  });

  it('fails a request whose answer does not come whole, and one whose signal aborts', async () => {
    const server = createNetServer((socket) => {
      socket.on('data', (d) => {
        const path = d.toString('latin1').split(' ')[1];
        if (path === '/cut') socket.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{"a"');
        else if (path === '/bad') socket.write('HTTP/1.1 200 OK\r\n\r\n{}');
        // '/hold': never answered
      });
    });
    const url = await listen(server);
    const post = new GatewayPost();
    closers.push(async () => post.close());
    await expect(post.post(`${url}/cut`, headers, '{}')).rejects.toThrow(
      'the gateway closed the connection before its answer',
    );
    await expect(post.post(`${url}/bad`, headers, '{}')).rejects.toThrow(
      'the gateway sent an answer without a length',
    );
    const controller = new AbortController();
    const held = post.post(`${url}/hold`, headers, '{}', controller.signal);
    const other = post.post(`${url}/hold`, headers, '{}', controller.signal);
    setTimeout(() => controller.abort(new Error('the run ended')), 20);
    await expect(held).rejects.toThrow('the run ended');
    await expect(other).rejects.toThrow('the run ended');
    await expect(post.post(`${url}/hold`, headers, '{}', controller.signal)).rejects.toThrow('the run ended');
    await expect(post.post('ftp://127.0.0.1/x', headers, '{}')).rejects.toThrow('unsupported protocol ftp:');
  });

  it('reads a kept plain socket without its stream: no write or data event through it, answers in pieces whole', async () => {
    const gw = await echo();
    const port = Number(new URL(gw.url).port);
    const post = new GatewayPost();
    closers.push(async () => post.close());
    const first = await post.post(`${gw.url}/x`, headers, '{"i":0}');
    expect(first.status).toBe(200);
    // The client's socket is the one whose far end is the gateway's port (the server's own are not).
    const ours = (socket: Socket) => socket.remotePort === port;
    let streamWrites = 0;
    let dataEvents = 0;
    const write = Socket.prototype.write;
    const emit = Socket.prototype.emit;
    Socket.prototype.write = function (this: Socket, ...args: unknown[]) {
      if (ours(this)) streamWrites++;
      return (write as (...a: unknown[]) => boolean).apply(this, args);
    } as typeof write;
    Socket.prototype.emit = function (this: Socket, ...args: unknown[]) {
      if (args[0] === 'data' && ours(this)) dataEvents++;
      return (emit as (...a: unknown[]) => boolean).apply(this, args);
    } as typeof emit;
    try {
      for (let i = 1; i <= 5; i++) {
        const res = await post.post(`${gw.url}/x`, headers, `{"i":${i}}`);
        expect(JSON.parse(res.text)).toMatchObject({ body: `{"i":${i}}` });
      }
    } finally {
      Socket.prototype.write = write;
      Socket.prototype.emit = emit;
    }
    expect(gw.connections()).toBe(1);
    expect(streamWrites).toBe(0);
    expect(dataEvents).toBe(0);

    // An answer read in pieces (each read lands in one buffer the process's plain sockets share)
    // comes whole: a piece is copied out before the next read.
    const big = 'x'.repeat(200_000);
    const pieces = createNetServer((socket) => {
      socket.once('data', () => {
        const body = `0123456789${big}abcdefghij`;
        socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n0123456789`);
        setTimeout(() => socket.write(big), 20);
        setTimeout(() => socket.write('abcdefghij'), 40);
      });
    });
    const url = await listen(pieces);
    const whole = await post.post(`${url}/p`, headers, '{}');
    expect(whole.text.length).toBe(200_020);
    expect(whole.text).toBe(`0123456789${big}abcdefghij`);
  });
});
