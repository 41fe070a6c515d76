import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlockedAddressError } from './app-http.ts';
import { guardedFetch } from './guarded-fetch.ts';

let server: Server;
let port = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.method === 'DELETE') return res.writeHead(204).end();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'set-cookie': ['a=1', 'b=2'] });
    res.write('data: one\n\n');
    setTimeout(() => res.end('data: two\n\n'), 50);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : 0;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('guardedFetch (the mcp connection client)', () => {
  it('refuses every loopback form when private networks are not allowed, before any byte is sent', async () => {
    const f = guardedFetch({ allowPrivate: false, connectTimeoutMs: 2000, maxResponseBytes: 1000 });
    for (const host of [
      '127.0.0.1',
      'localhost',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '0.0.0.0',
      '127.1',
    ])
      await expect(
        f(`http://${host}:${port}/mcp`, { method: 'POST', body: '{}' }),
        host,
      ).rejects.toBeInstanceOf(BlockedAddressError);
    await expect(f('file:///etc/passwd')).rejects.toThrow(/unsupported URL/);
  });

  it('streams the answer as a Response when allowed, and gives 204 a null body', async () => {
    const f = guardedFetch({ allowPrivate: true, connectTimeoutMs: 2000, maxResponseBytes: 1000 });
    const res = await f(`http://127.0.0.1:${port}/mcp`, { method: 'POST', body: '{}', headers: { a: 'b' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(await res.text()).toBe('data: one\n\ndata: two\n\n');
    const gone = await f(`http://127.0.0.1:${port}/mcp`, { method: 'DELETE' });
    expect(gone.status).toBe(204);
    expect(gone.body).toBeNull();
  });

  it('fails the body stream of an answer longer than maxResponseBytes', async () => {
    const f = guardedFetch({ allowPrivate: true, connectTimeoutMs: 2000, maxResponseBytes: 12 });
    const res = await f(`http://127.0.0.1:${port}/mcp`, { method: 'POST', body: '{}' });
    await expect(res.text()).rejects.toThrow();
  });
});
