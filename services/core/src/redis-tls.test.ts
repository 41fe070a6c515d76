import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnOwned, stopOwned } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';
import { createRedis } from './redis.ts';
import { generateSealKey } from './sealer.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };
const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });

/** A CA and a server certificate for 127.0.0.1/localhost signed by it; a second CA that signed nothing. */
function makePki(dir: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=islet-test-ca',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  ]);
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=other-ca',
    '-keyout',
    'other.key',
    '-out',
    'other.pem',
  ]);
  openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
  ]);
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    'ext.cnf',
    '-out',
    'server.pem',
  ]);
}

describe('rediss:// with ISLET_REDIS_CA_FILE against redis-server --tls-port', () => {
  const dir = mkdtempSync(join(tmpdir(), 'islet-redis-tls-'));
  let port = 0;
  let server: ReturnType<typeof spawnOwned> | undefined;
  beforeAll(async () => {
    makePki(dir);
    port = await freePort();
    server = spawnOwned(
      'redis-server',
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--tls-cert-file',
        join(dir, 'server.pem'),
        '--tls-key-file',
        join(dir, 'server.key'),
        '--tls-ca-cert-file',
        join(dir, 'ca.pem'),
        '--tls-auth-clients',
        'no',
        '--requirepass',
        'tls-pass',
        '--loglevel',
        'warning',
      ],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    for (;;) {
      const up = await new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      });
      if (up) break;
      if (Date.now() > deadline) throw new Error('redis-server --tls-port did not listen');
      await new Promise((r) => setTimeout(r, 25));
    }
  }, 30_000);
  afterAll(async () => {
    await stopOwned(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('connects, authenticates and writes when the CA file names the issuer', async () => {
    const cfg = loadConfig({
      ...base,
      ISLET_REDIS_URL: `rediss://:tls-pass@localhost:${port}`,
      ISLET_REDIS_CA_FILE: join(dir, 'ca.pem'),
    });
    const redis = createRedis(cfg);
    try {
      await redis.set('k', 'over-tls');
      expect(await redis.get('k')).toBe('over-tls');
    } finally {
      redis.disconnect();
    }
  });

  it('refuses a server whose certificate another CA signed, and plain redis:// gets no answer', async () => {
    const wrong = createRedis(
      loadConfig({
        ...base,
        ISLET_REDIS_URL: `rediss://:tls-pass@localhost:${port}`,
        ISLET_REDIS_CA_FILE: join(dir, 'other.pem'),
      }),
      { retryStrategy: () => null, maxRetriesPerRequest: 0 },
    );
    const errors: string[] = [];
    wrong.on('error', (e) => errors.push(e.message));
    try {
      await expect(wrong.ping()).rejects.toThrow();
      expect(errors.join(' ')).toMatch(/self[- ]signed|unable to verify|certificate/i);
    } finally {
      wrong.disconnect();
    }
    const plain = createRedis(`redis://:tls-pass@127.0.0.1:${port}`, {
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
    });
    plain.on('error', () => {});
    try {
      await expect(plain.ping()).rejects.toThrow();
    } finally {
      plain.disconnect();
    }
  });
});
