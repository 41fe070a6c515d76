import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { BlockedAddressError, isNonPublicAddress, postToApp } from './app-http.ts';

describe('App HTTP client', () => {
  it('classifies non-public addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '224.0.0.1',
    ])
      expect(isNonPublicAddress(a), a).toBe(true);
    for (const a of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700::1111'])
      expect(isNonPublicAddress(a), a).toBe(false);
  });
  it('refuses loopback by IP and by name unless private networks are allowed', async () => {
    let hits = 0;
    const server = createServer((req, res) => {
      hits++;
      req.resume();
      req.on('end', () => res.writeHead(200).end('{"ok":true}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      for (const host of ['127.0.0.1', 'localhost']) {
        await expect(
          postToApp(`http://${host}:${port}/`, {}, '{}', { timeoutMs: 2000, allowPrivate: false }),
        ).rejects.toBeInstanceOf(BlockedAddressError);
      }
      expect(hits).toBe(0);
      const ok = await postToApp(`http://localhost:${port}/`, {}, '{}', {
        timeoutMs: 2000,
        allowPrivate: true,
      });
      expect(ok).toEqual({ status: 200, text: '{"ok":true}' });
      expect(hits).toBe(1);
    } finally {
      server.close();
    }
  });
});
