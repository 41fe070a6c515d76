/**
 * TLS to Redis with the CA from ISLET_REDIS_CA_FILE: one redis-server with --tls-port, and a
 * six-node Redis Cluster with TLS only (clients, cluster bus, replication), each refusing a client
 * whose CA did not sign the server's certificate.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { freePort, type RedisCluster, spawnOwned, startRedisCluster, stopOwned } from '@islet/testkit';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';
import { createRedis, redisNodes } from './redis.ts';
import { generateSealKey } from './sealer.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };
const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });

/** A CA certificate `/CN=<cn>` signing itself, a day long: `<name>.pem` and its key `<name>.key` in `dir`. */
function selfSignedCa(dir: string, cn: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    `/CN=${cn}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
  ]);
}

/** A CA and a server certificate for 127.0.0.1/localhost signed by it; a second CA that signed nothing. */
function makePki(dir: string): void {
  selfSignedCa(dir, 'islet-test-ca', 'ca');
  selfSignedCa(dir, 'other-ca', 'other');
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

describe('a TLS Redis Cluster (rediss:// seeds, ISLET_REDIS_CA_FILE, password): TLS to every node', () => {
  const dir = mkdtempSync(join(tmpdir(), 'islet-rcluster-tls-'));
  let cluster: RedisCluster | undefined;
  const clusterConfig = (caFile: string) =>
    loadConfig({
      ...base,
      ISLET_REDIS_MODE: 'cluster',
      // Two seeds: the client learns the other nodes (and their TLS ports) from the cluster.
      ISLET_REDIS_URL: cluster!.seeds
        .split(',')
        .slice(0, 2)
        .map((seed) => `rediss://${seed}`)
        .join(','),
      ISLET_REDIS_PASSWORD: 'cluster-tls-pass',
      ISLET_REDIS_CA_FILE: caFile,
    });
  beforeAll(async () => {
    makePki(dir);
    cluster = await startRedisCluster({
      password: 'cluster-tls-pass',
      tls: {
        certFile: join(dir, 'server.pem'),
        keyFile: join(dir, 'server.key'),
        caFile: join(dir, 'ca.pem'),
      },
    });
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes on every master and runs a BullMQ queue over TLS', async () => {
    const cfg = clusterConfig(join(dir, 'ca.pem'));
    const redis = createRedis(cfg);
    const workerConnection = createRedis(cfg);
    const name = runQueueName('read-only');
    const queue = new Queue(name, { connection: redis, prefix: QUEUE_PREFIX });
    const done = new Set<string>();
    const worker = new Worker(
      name,
      async (job) => {
        done.add(job.id ?? '');
      },
      { connection: workerConnection, prefix: QUEUE_PREFIX, concurrency: 2 },
    );
    try {
      // Enough hash tags to land on all three masters.
      for (let i = 0; i < 30; i++) await redis.set(`tls-{${i}}`, String(i));
      for (let i = 0; i < 30; i++) expect(await redis.get(`tls-{${i}}`)).toBe(String(i));
      const masters = await redisNodes(redis);
      expect(masters).toHaveLength(3);
      for (const node of masters) {
        expect(node.options.tls).toBeTruthy();
        expect(Number(await node.dbsize())).toBeGreaterThan(0);
      }
      for (let n = 0; n < 5; n++) await queue.add('run', { n }, { jobId: `tls-${n}` });
      await expect.poll(() => done.size, { timeout: 30_000 }).toBe(5);
    } finally {
      await worker.close(true).catch(() => {});
      await queue.close().catch(() => {});
      workerConnection.disconnect();
      redis.disconnect();
    }
  }, 60_000);

  it('refuses the cluster when the CA file names another issuer', async () => {
    // The client keeps re-dialling (a cluster outage is waited out): the test is that no node's
    // TLS handshake succeeds, so the client is never ready and nothing is answered (the same
    // client with the right CA answers at once, above).
    const wrong = createRedis(clusterConfig(join(dir, 'other.pem')));
    const nodeErrors: string[] = [];
    let ready = false;
    wrong.on('error', () => {});
    wrong.on('node error', (e: Error) => nodeErrors.push(e.message));
    wrong.on('ready', () => {
      ready = true;
    });
    const answered = wrong.ping().then(
      () => 'answered',
      () => 'refused',
    );
    try {
      const outcome = await Promise.race([
        answered,
        new Promise((r) => setTimeout(() => r('no answer'), 4_000)),
      ]);
      expect(outcome).not.toBe('answered');
      expect(ready).toBe(false);
      expect(nodeErrors.length).toBeGreaterThan(0);
    } finally {
      wrong.disconnect();
    }
  }, 30_000);
});
