import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SentinelGroup, startSentinelGroup } from '@islet/testkit';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';
import { createRedis } from './redis.ts';
import { parseSentinels, redisOptionsFor } from './redis-connection.ts';
import { generateSealKey } from './sealer.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

describe('redis configuration', () => {
  it('standalone: host, port, password and database from the URL; the password file overrides', () => {
    const o = redisOptionsFor('redis://:p%40ss@10.0.0.5:6380/2');
    expect(o).toMatchObject({ host: '10.0.0.5', port: 6380, password: 'p@ss', db: 2 });
    expect(o.tls).toBeUndefined();
    const dir = mkdtempSync(join(tmpdir(), 'islet-redis-cfg-'));
    try {
      writeFileSync(join(dir, 'pw'), 'from-file\n');
      const c = loadConfig({
        ...base,
        ISLET_REDIS_URL: 'redis://:inurl@h:1',
        ISLET_REDIS_PASSWORD_FILE: join(dir, 'pw'),
      });
      expect(redisOptionsFor(c).password).toBe('from-file');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sentinel: seeds, master name, the URL only for password and database', () => {
    const c = loadConfig({
      ...base,
      ISLET_REDIS_MODE: 'sentinel',
      ISLET_REDIS_URL: 'redis://:pw@ignored:1/1',
      ISLET_REDIS_SENTINELS: 's1:26379, [::1]:26380,10.0.0.3:26381',
      ISLET_REDIS_SENTINEL_MASTER: 'islet',
    });
    const o = redisOptionsFor(c);
    expect(o.sentinels).toEqual([
      { host: 's1', port: 26379 },
      { host: '::1', port: 26380 },
      { host: '10.0.0.3', port: 26381 },
    ]);
    expect(o).toMatchObject({ name: 'islet', password: 'pw', db: 1 });
    expect(o.host).toBeUndefined();
  });

  it('refuses at load: sentinel without seeds, bad seeds, a CA without rediss, an unreadable CA (cluster: redis-cluster.test.ts)', () => {
    const bad = (env: Record<string, string>) => () => loadConfig({ ...base, ...env });
    expect(bad({ ISLET_REDIS_MODE: 'sentinel' })).toThrow(
      'ISLET_REDIS_MODE=sentinel needs ISLET_REDIS_SENTINELS (host:port,…)',
    );
    expect(() => parseSentinels('a:1,b')).toThrow('ISLET_REDIS_SENTINELS: "b" is not host:port');
    expect(() => parseSentinels('a:70000')).toThrow('is not host:port');
    expect(bad({ ISLET_REDIS_MODE: 'ring' })).toThrow(ConfigError);
    expect(bad({ ISLET_REDIS_CA_FILE: '/etc/hostname' })).toThrow(
      'ISLET_REDIS_CA_FILE is set but ISLET_REDIS_URL is not rediss://',
    );
    expect(bad({ ISLET_REDIS_URL: 'rediss://h:1', ISLET_REDIS_CA_FILE: '/nonexistent/ca.pem' })).toThrow(
      'ISLET_REDIS_CA_FILE: cannot read /nonexistent/ca.pem: ENOENT',
    );
    expect(bad({ ISLET_REDIS_URL: 'http://h:1' })).toThrow('scheme must be redis:// or rediss://');
  });
});

describe('sentinel mode against real redis-server processes', () => {
  let group: SentinelGroup;
  beforeAll(async () => {
    group = await startSentinelGroup();
  }, 30_000);
  afterAll(async () => {
    await group?.stop();
  });

  it('BullMQ jobs added and worked across a SIGKILLed master: every job done once', async () => {
    const cfg = {
      ISLET_REDIS_URL: `redis://:${group.password}@unused:1`,
      ISLET_REDIS_MODE: 'sentinel' as const,
      ISLET_REDIS_SENTINELS: group.sentinels,
      ISLET_REDIS_SENTINEL_MASTER: group.masterName,
    };
    const producer = createRedis(cfg);
    const workerConn = createRedis(cfg);
    producer.on('error', () => {});
    workerConn.on('error', () => {});
    const queue = new Queue('failover', { connection: producer });
    const done = new Map<string, number>();
    const worker = new Worker(
      'failover',
      async (job) => {
        done.set(job.data.n, (done.get(job.data.n) ?? 0) + 1);
      },
      { connection: workerConn, concurrency: 4 },
    );
    worker.on('error', () => {});
    try {
      const total = 120;
      let killed = false;
      for (let n = 0; n < total; n++) {
        // Each add is acknowledged before the next: an add that fails during the failover is
        // retried by the caller (the gateway answers 503 and the client retries the same way).
        for (;;) {
          try {
            await queue.add('j', { n: String(n) }, { jobId: `j${n}` });
            // Replication is asynchronous: without WAIT the add acknowledged just before the
            // SIGKILL is lost with the master (observed: job 40 "unknown" on the promoted replica).
            // WAIT 1 holds the acknowledgement until the replica has the write.
            // After the failover the promoted master has no replica left: nothing to wait for.
            const info = await producer.info('replication');
            const replicas = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0);
            if (replicas > 0 && (await producer.wait(1, 2000)) < 1) throw new Error('not replicated');
            break;
          } catch {
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        if (n === 40 && !killed) {
          killed = true;
          await group.killMaster();
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      const deadline = Date.now() + 30_000;
      while (done.size < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const missing = [...Array(total).keys()].filter((n) => !done.has(String(n)));
      const states = await Promise.all(missing.map((n) => queue.getJobState(`j${n}`)));
      expect({ missing, states }).toEqual({ missing: [], states: [] });
      expect(done.size).toBe(total);
      expect([...done.values()].filter((c) => c !== 1)).toEqual([]);
      // The promoted replica is the master now.
      const role = (await producer.role()) as [string, ...unknown[]];
      expect(role[0]).toBe('master');
      expect((producer.options as { port?: number }).port ?? 0).not.toBe(group.masterPort);
    } finally {
      await worker.close(true).catch(() => {});
      await queue.close().catch(() => {});
      producer.disconnect();
      workerConn.disconnect();
    }
  }, 60_000);
});
