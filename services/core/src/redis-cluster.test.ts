/**
 * Redis Cluster: the connection mode (seeds, auth, refusals), and the core stores (tenants,
 * settings; the run store is tested in @islet/runs) working through a Cluster client on a real
 * six-node cluster, and through a plain client on a slot-checking node, where any MULTI, script or multi-key command spanning two hash
 * slots fails with CROSSSLOT: a future slot-unsafe change fails here.
 */
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { type RedisCluster, startRedisCluster, startSlotCheckingRedis } from '@islet/testkit';
import { onRedisClients } from '@islet/testkit/redis-clients';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { type Cluster, Redis as IORedis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';
import { migratedKeyName, migrateKeyLayout } from './key-migration.ts';
import { keys } from './keys.ts';
import { createRedis, isRedisCluster, type Redis, redisDurabilityProblems, redisNodes } from './redis.ts';
import { describeRedis, redisClusterFor, redisConfigFromEnv } from './redis-connection.ts';
import { generateSealKey } from './sealer.ts';
import { createSettingsCache } from './settings-cache.ts';
import { createSettingsStore } from './settings-store.ts';
import { createTenantStore } from './tenant-store.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

describe('cluster configuration', () => {
  it('seeds: redis://, rediss:// and bare host:port, IPv6 in brackets; the rest is learnt from the cluster', () => {
    const c = loadConfig({
      ...base,
      ISLET_REDIS_MODE: 'cluster',
      ISLET_REDIS_URL: 'redis://:s3cret@10.0.0.1:7000, 10.0.0.2:7001,[fd00::3]:7002',
    });
    const { nodes, options } = redisClusterFor(c);
    expect(nodes).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
      { host: 'fd00::3', port: 7002 },
    ]);
    expect(options.redisOptions).toEqual({ password: 's3cret' });
    expect(options.enableOfflineQueue).toBe(true);
    expect(options.enableReadyCheck).toBe(false);
    expect(options.clusterRetryStrategy?.(100)).toBe(2000);
    expect(describeRedis(c)).toBe('cluster via 10.0.0.1:7000,10.0.0.2:7001,fd00::3:7002');
  });

  it('password from ISLET_REDIS_PASSWORD (or its _FILE) wins; rediss:// turns TLS on for every node', () => {
    const o = redisClusterFor({
      ISLET_REDIS_MODE: 'cluster',
      ISLET_REDIS_URL: 'rediss://user:inurl@a:6379,b:6379',
      ISLET_REDIS_PASSWORD: 'from-env',
    }).options;
    expect(o.redisOptions).toMatchObject({ password: 'from-env', username: 'user', tls: {} });
    expect(typeof o.dnsLookup).toBe('function');
    // The CLI reads the same variables.
    const cfg = redisConfigFromEnv({ ISLET_REDIS_MODE: 'cluster', ISLET_REDIS_URL: 'h1:1,h2:2' });
    expect(redisClusterFor(cfg).nodes).toHaveLength(2);
  });

  it('refuses bad cluster configuration at load, naming the problem', () => {
    const bad =
      (url: string, extra: Record<string, string> = {}) =>
      () =>
        loadConfig({ ...base, ISLET_REDIS_MODE: 'cluster', ISLET_REDIS_URL: url, ...extra });
    expect(bad('h1:7000,h2')).toThrow(
      'ISLET_REDIS_URL seed "h2": not host:port, redis://host:port or rediss://host:port',
    );
    expect(bad('h1:70000')).toThrow('seed "h1:70000": not host:port');
    expect(bad('redis://h1:1,rediss://h2:2')).toThrow(
      'ISLET_REDIS_URL: seeds mix redis:// and rediss:// (TLS is all or nothing)',
    );
    expect(bad('redis://:a@h1:1,redis://:b@h2:2')).toThrow('seeds carry different passwords');
    expect(bad('redis://h1:1/2')).toThrow('Redis Cluster has only database 0');
    expect(bad('redis://h1')).toThrow('seed "redis://h1": needs a port');
    expect(bad('http://h1:1')).toThrow('scheme must be redis:// or rediss://, not http://');
    expect(bad(' , ')).toThrow('ISLET_REDIS_URL: no cluster seed nodes');
    expect(bad('h1:1', { ISLET_REDIS_CA_FILE: '/etc/hostname' })).toThrow(
      'ISLET_REDIS_CA_FILE is set but ISLET_REDIS_URL is not rediss://',
    );
    // Standalone still takes exactly one URL.
    expect(() => loadConfig({ ...base, ISLET_REDIS_URL: 'h1:1,h2:2' })).toThrow('ISLET_REDIS_URL');
    expect(() => redisConfigFromEnv({ ISLET_REDIS_MODE: 'cluster', ISLET_REDIS_URL: 'nope' })).toThrow(
      'seed "nope": not host:port',
    );
  });
});

let seq = 0;

/** Every operation of the core stores; each asserts what it did. */
async function exerciseCoreStores(redis: Redis, subscriber: Redis): Promise<void> {
  const tenant = `t-${seq++}`;
  const tenants = createTenantStore(redis);
  await tenants.createTenant({ id: tenant, name: 'Acme', maxInFlightRuns: 3 });
  expect((await tenants.getTenant(tenant))?.maxInFlightRuns).toBe(3);
  expect((await tenants.listTenants()).map((t) => t.id)).toContain(tenant);
  const key = await tenants.createKey(tenant, ['apps.use'], { principal: 'ann' });
  expect(await tenants.resolveKey(key.key)).toMatchObject({ tenantId: tenant, principal: 'ann' });

  const store = createSettingsStore(redis);
  const cache = createSettingsCache(store, subscriber, { maxAgeMs: 60_000 });
  const s0 = await cache.get();
  const updated = await store.update(s0.version, { timeoutMs: 5000 + seq });
  expect(updated.ok).toBe(true);
  expect(await store.update(s0.version, { timeoutMs: 6000 })).toMatchObject({ ok: false });
  // The change is published; the cache drops its copy and reads the new version.
  await expect.poll(async () => (await cache.get()).version).toBe(s0.version + 1);
  cache.close();
}

describe('a slot-checking node (one slot owner: any cross-slot command fails with CROSSSLOT)', () => {
  const node = onRedisClients(startSlotCheckingRedis, (n) => createRedis(n.url));

  it('really refuses cross-slot work (the guard guards)', async () => {
    await expect(node.redis.multi().set('{a}x', '1').set('{b}x', '1').exec()).rejects.toThrow(/CROSSSLOT/);
  });

  it('tenant and settings stores: every operation stays in one slot', async () => {
    await exerciseCoreStores(node.redis, node.subscriber);
  });
});

describe('a real Redis Cluster (3 masters, 3 replicas, password) through the Cluster client', () => {
  let cluster: RedisCluster;
  let redis: Redis;
  let subscriber: Redis;
  let cfg: ReturnType<typeof loadConfig>;
  /** The clients' config: two seeds are enough (the client finds the other nodes), the password. */
  const configOf = (c: RedisCluster) =>
    loadConfig({
      ...base,
      ISLET_REDIS_MODE: 'cluster',
      ISLET_REDIS_URL: c.seeds.split(',').slice(0, 2).join(','),
      ISLET_REDIS_PASSWORD: 'cluster-pass',
    });
  const rc = onRedisClients(
    // Failover takes a few seconds (node timeout 3 s), as in production: longer than BullMQ's
    // blocking-pop watchdog, so an idle worker re-dials while the slot has no master.
    () => startRedisCluster({ password: 'cluster-pass', nodeTimeoutMs: 3000 }),
    (c) => createRedis(configOf(c)),
  );
  beforeAll(() => {
    ({ server: cluster, redis, subscriber } = rc);
    cfg = configOf(cluster);
  });

  it('connects as a Cluster client and finds every master', async () => {
    expect(isRedisCluster(redis)).toBe(true);
    const masters = await redisNodes(redis);
    expect(masters.map((m) => m.options.port).sort()).toEqual((await cluster.masters()).sort());
  });

  it('tenant and settings stores work across the masters', async () => {
    await exerciseCoreStores(redis, subscriber);
    // The keys really are spread: runs and tenants on more than one master.
    const owners = new Set<string>();
    const table = (redis as unknown as Cluster).slots;
    for (let i = 0; i < 12; i++) {
      const slot = Number(await redis.cluster('KEYSLOT', keys.run(`spread-${i}`)));
      owners.add(table[slot]?.[0] ?? '');
    }
    expect(owners.size).toBeGreaterThan(1);
  });

  it('a wrong password is refused by the nodes (WRONGPASS reported)', async () => {
    const wrong = createRedis({ ...cfg, ISLET_REDIS_PASSWORD: 'nope' }, { maxRetriesPerRequest: 1 });
    const errors: string[] = [];
    // The cluster client reports "Failed to refresh slots cache." with the node's reply beside it.
    wrong.on('error', (e: Error & { lastNodeError?: Error }) =>
      errors.push(`${e.message} ${e.lastNodeError?.message ?? ''}`),
    );
    try {
      await expect.poll(() => errors.join('\n'), { timeout: 10_000 }).toMatch(/WRONGPASS/);
    } finally {
      wrong.disconnect();
    }
  });

  it('the durability check asks every node (replicas too) and names the one that is unsafe', async () => {
    expect(await redisDurabilityProblems(redis)).toEqual([]);
    // A replica: it becomes the master on a failover, so it is checked too.
    const masters = await cluster.masters();
    const replicaPort = cluster.nodes.map((n) => n.port).find((p) => !masters.includes(p))!;
    const replica = createRedis(`redis://:cluster-pass@127.0.0.1:${replicaPort}`);
    await replica.config('SET', 'appendonly', 'no');
    try {
      expect(await redisDurabilityProblems(redis)).toEqual([
        `appendonly is no, not yes on 127.0.0.1:${replicaPort}`,
      ]);
      const [master] = await redisNodes(redis);
      await master!.config('SET', 'maxmemory-policy', 'allkeys-lru');
      try {
        expect(await redisDurabilityProblems(redis)).toContain(
          `maxmemory-policy is allkeys-lru, not noeviction on ${master!.options.host}:${master!.options.port}`,
        );
      } finally {
        await master!.config('SET', 'maxmemory-policy', 'noeviction');
      }
    } finally {
      await replica.config('SET', 'appendonly', 'yes');
      replica.disconnect();
    }
  });

  it('moves keys of the pre-Cluster layout to their tagged names, on every master, once', async () => {
    expect(migratedKeyName('islet:tenant:old1:session:s:runs')).toBe(keys.sessionRuns('old1', 's'));
    expect(migratedKeyName('islet:tenant:old1')).toBe(keys.tenant('old1'));
    expect(migratedKeyName(keys.inFlight('old1'))).toBeUndefined();
    await redis.del(keys.keyLayout());
    await redis.sadd(keys.tenants(), 'old1');
    await redis.set('islet:tenant:old1', JSON.stringify({ id: 'old1', name: 'Old', createdAt: 1 }));
    await redis.hset('islet:tenant:old1:connections', 'c1', '{}');
    await redis.expire('islet:tenant:old1:connections', 1000);
    await redis.zadd('islet:tenant:old1:decisions', 5, 'r\n1');
    await redis.hset(keys.run('r-old'), 'createdAt', '12345');
    await redis.sadd('islet:tenant:old1:inflight', 'r-old', 'r-gone');
    await redis.set('islet:tenant:old2:mcp', 'old');
    await redis.set(keys.mcpSettings('old2'), 'new');
    const first = await migrateKeyLayout(redis);
    expect(first).toEqual({ moved: 4, conflicts: ['islet:tenant:old2:mcp'] });
    expect((await createTenantStore(redis).getTenant('old1'))?.name).toBe('Old');
    expect(await redis.hget(keys.connections('old1'), 'c1')).toBe('{}');
    expect(await redis.ttl(keys.connections('old1'))).toBeGreaterThan(900);
    expect(await redis.zscore('islet:tenant:{t:old1}:decisions', 'r\n1')).toBe('5');
    // The in-flight SET became the ZSET the quota and the recovery loop read.
    expect(await redis.zscore(keys.inFlight('old1'), 'r-old')).toBe('12345');
    expect(Number(await redis.zscore(keys.inFlight('old1'), 'r-gone'))).toBeGreaterThan(Date.now() - 60_000);
    expect(await redis.exists('islet:tenant:old1')).toBe(0);
    expect(await redis.exists('islet:tenant:old1:inflight')).toBe(0);
    // The conflict stays (and keeps the migration open) until someone resolves it.
    expect(await redis.get(keys.mcpSettings('old2'))).toBe('new');
    expect(await migrateKeyLayout(redis)).toEqual({ moved: 0, conflicts: ['islet:tenant:old2:mcp'] });
    expect(await redis.get(keys.keyLayout())).toBeNull();
    await redis.del('islet:tenant:old2:mcp');
    expect(await migrateKeyLayout(redis)).toEqual({ moved: 0, conflicts: [] });
    expect(await redis.get(keys.keyLayout())).toBe('2');
    // Closed: later starts skip the scan.
    await redis.set('islet:tenant:late:x', '1');
    expect(await migrateKeyLayout(redis)).toEqual({ moved: 0, conflicts: [] });
    expect(await redis.get('islet:tenant:late:x')).toBe('1');
  });

  it("BullMQ Queue, Worker and QueueEvents on Islet's queue names over Cluster connections", async () => {
    const name = runQueueName('read-only');
    const queue = new Queue(name, { connection: redis, prefix: QUEUE_PREFIX });
    const eventsConnection = createRedis(cfg);
    const workerConnection = createRedis(cfg);
    // From the stream's start: a loaded machine may complete a job before the first XREAD.
    const events = new QueueEvents(name, {
      connection: eventsConnection,
      prefix: QUEUE_PREFIX,
      lastEventId: '0-0',
    });
    const done = new Map<string, number>();
    const worker = new Worker(
      name,
      async (job) => {
        done.set(job.id ?? '', (done.get(job.id ?? '') ?? 0) + 1);
        return job.data.n * 2;
      },
      { connection: workerConnection, prefix: QUEUE_PREFIX, concurrency: 4 },
    );
    try {
      await events.waitUntilReady();
      const completed: string[] = [];
      events.on('completed', ({ jobId }) => completed.push(jobId));
      for (let n = 0; n < 30; n++) await queue.add('run', { n }, { jobId: `job-${n}` });
      await expect.poll(() => done.size, { timeout: 30_000 }).toBe(30);
      expect([...done.values()].every((c) => c === 1)).toBe(true);
      await expect.poll(() => new Set(completed).size, { timeout: 30_000 }).toBe(30);
      expect(await (await queue.getJob('job-7'))?.returnvalue).toBe(14);
      // Every queue key lives in the queue's slot, on one master.
      const slotOwner = await cluster.masterOf(`islet:${name}:wait`);
      expect(await cluster.masterOf(`islet:${name}:job-7`)).toBe(slotOwner);
    } finally {
      await worker.close();
      await events.close();
      await queue.obliterate({ force: true });
      await queue.close();
      eventsConnection.disconnect();
      workerConnection.disconnect();
    }
  }, 60_000);
  // Last: it kills a master (the replica takes over its slots).
  it('a master killed: the Cluster client follows the promotion; queue and stores keep working', async () => {
    const name = runQueueName('workspace-write');
    const queue = new Queue(name, { connection: redis, prefix: QUEUE_PREFIX });
    const workerConnection = createRedis(cfg);
    workerConnection.on('error', () => {});
    const done = new Map<string, number>();
    const worker = new Worker(
      name,
      async (job) => {
        await new Promise((r) => setTimeout(r, 150));
        done.set(job.id ?? '', (done.get(job.id ?? '') ?? 0) + 1);
      },
      { connection: workerConnection, prefix: QUEUE_PREFIX, concurrency: 4 },
    );
    worker.on('error', () => {});
    const add = async (n: number) => {
      // A write refused while the slot has no master is retried by the caller (the gateway answers
      // 503 and its client retries); the job id makes the retry idempotent.
      for (;;) {
        try {
          await queue.add('run', { n }, { jobId: `f-${n}` });
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    try {
      for (let n = 0; n < 20; n++) await add(n);
      // Completed as stored (not just run), so nothing of these 20 is still being written.
      await expect
        .poll(async () => (await queue.getJobCounts('completed')).completed, { timeout: 30_000 })
        .toBe(20);
      // Replication is asynchronous: let the replica catch up first, so this test is about the
      // client following the failover, not about the writes of the last millisecond (see
      // ARCHITECTURE.md, failover guarantee).
      const port = await cluster.masterOf(`islet:${name}:wait`);
      const owner = (await redisNodes(redis)).find((m) => m.options.port === port);
      expect(await owner?.wait(1, 5000)).toBe(1);
      // The kill lands while the worker is idle, parked in its blocking pop on that master: the
      // hard case. BullMQ re-dials its blocking client during the failover, and with ioredis'
      // Cluster ready check that connect() never settled (the worker never fetched again); the
      // connection options turn the check off (redis-connection.ts).
      const redial = createRedis(cfg);
      redial.on('error', () => {});
      await redial.ping();
      const witness = new IORedis({
        port: cluster.nodes.find((n) => n.port !== port)!.port,
        password: 'cluster-pass',
      });
      try {
        const killed = cluster.killMaster(port);
        // The minute BullMQ re-dials in: the cluster has seen the master fail, no replica promoted
        // yet. connect() must settle (ready or an error BullMQ retries); it used to hang for ever.
        await expect
          .poll(async () => /cluster_state:fail/.test(await witness.cluster('INFO')), {
            timeout: 20_000,
            interval: 20,
          })
          .toBe(true);
        // As BullMQ re-dials: disconnect, wait for 'end', connect.
        const ended = new Promise((r) => redial.once('end', r));
        redial.disconnect();
        await ended;
        const settled = redial.connect().then(
          () => 'ready',
          () => 'error',
        );
        const outcome = await Promise.race([settled, new Promise((r) => setTimeout(() => r('hung'), 8_000))]);
        expect(outcome).not.toBe('hung');
        await killed;
      } finally {
        redial.disconnect();
        witness.disconnect();
      }
      for (let n = 20; n < 40; n++) await add(n);
      await expect.poll(() => done.size, { timeout: 60_000, interval: 200 }).toBe(40);
      expect([...done.values()].filter((c) => c !== 1)).toEqual([]);
      // The stores (and pub/sub) work on the new topology without a new client.
      await exerciseCoreStores(redis, subscriber);
    } finally {
      await worker.close(true).catch(() => {});
      await queue.close().catch(() => {});
      workerConnection.disconnect();
    }
  }, 180_000);
});
