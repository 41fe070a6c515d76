import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { useKeySlot } from './cluster-slot.ts';
import { type RedisConfig, type RedisTarget, redisClusterFor, redisOptionsFor } from './redis-connection.ts';

/**
 * A Redis connection configured the way BullMQ asks (`maxRetriesPerRequest: null`) and that
 * keeps reconnecting after a Redis restart instead of giving up, so processes outlive it.
 *
 * In cluster mode it is an ioredis `Cluster`, typed as `Redis`: a Cluster has the same command,
 * MULTI, script, pub/sub and `duplicate()` surface (and BullMQ takes it as a connection), and
 * every key layout Islet writes is slot-safe (keys.ts), so no caller needs to know. What differs
 * is what spans the keyspace (CONFIG, INFO, SCAN): ask `redisNodes` for the masters.
 */
export function createRedis(target: RedisTarget, options: RedisOptions = {}): Redis {
  // Every service connects through redis-connection.ts: one configuration, one topology.
  const cfg: RedisConfig = typeof target === 'string' ? { ISLET_REDIS_URL: target } : target;
  const perNode: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(50 * times, 2000),
    ...options,
  };
  if ((cfg.ISLET_REDIS_MODE ?? 'standalone') === 'cluster') {
    const { nodes, options: clusterOptions } = redisClusterFor(cfg);
    // Each command's slot without cluster-key-slot's byte array (cluster-slot.ts): once a process.
    useKeySlot();
    const { lazyConnect, retryStrategy: _nodeRetry, ...nodeOptions } = perNode;
    const cluster = new Cluster(nodes, {
      ...clusterOptions,
      ...(lazyConnect !== undefined ? { lazyConnect } : {}),
      redisOptions: { ...nodeOptions, ...clusterOptions.redisOptions },
    });
    return cluster as unknown as Redis;
  }
  return new Redis({ ...redisOptionsFor(cfg), ...perNode });
}

export type { Redis };

/** Whether a connection from `createRedis` is a Redis Cluster client. */
/**
 * Whether the server checks no hash slots (standalone, sentinel), so one script may span keys of
 * different slots; asked once (`INFO cluster`). A cluster-enabled server refuses that even through
 * a plain client; a server that will not say (INFO refused, unreachable) gets single-slot scripts
 * and is asked again next time.
 */
export function slotFreeCheck(redis: Redis): () => Promise<boolean> {
  let answer: Promise<boolean> | undefined;
  return () => {
    answer ??= isRedisCluster(redis)
      ? Promise.resolve(false)
      : redis.info('cluster').then(
          (text) => !/^cluster_enabled:1/m.test(text),
          () => {
            answer = undefined;
            return false;
          },
        );
    return answer;
  };
}

export function isRedisCluster(redis: Redis): boolean {
  return redis.isCluster;
}

/**
 * Runs `fn` with the connection's socket corked until the end of this turn (its microtasks
 * included), so the commands `fn` sends, and those its promise chain sends without waiting for
 * I/O (a BullMQ add behind a script), reach Redis in one write. Redis then reads and runs them in
 * one pass of its loop, and under `appendfsync always` waits for one fsync before answering, not
 * one per command that happened to arrive while it was writing the previous one's. A Cluster client (no socket of its own) sends as usual.
 */
export function sendTogether<T>(redis: Redis, fn: () => T): T {
  const socket = isRedisCluster(redis)
    ? undefined
    : (redis as unknown as { stream?: { cork?: () => void; uncork?: () => void } }).stream;
  if (!socket?.cork || !socket.uncork) return fn();
  socket.cork();
  try {
    return fn();
  } finally {
    process.nextTick(() => socket.uncork?.());
  }
}

/**
 * The connections a keyspace-wide command must be sent to: every master of a cluster (waiting
 * until the client knows them), or the connection itself.
 */
export async function redisNodes(redis: Redis): Promise<Redis[]> {
  if (!redis.isCluster) return [redis];
  const cluster = redis as unknown as Cluster;
  if (cluster.status !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const ok = () => {
        cluster.off('error', fail);
        resolve();
      };
      const fail = (err: Error) => {
        // The cluster client reports node errors and keeps trying; only give up when it does.
        if (cluster.status === 'end' || cluster.status === 'close') {
          cluster.off('ready', ok);
          reject(err);
        }
      };
      cluster.once('ready', ok);
      cluster.on('error', fail);
    });
  }
  return cluster.nodes('master');
}

/**
 * BullMQ needs `maxmemory-policy noeviction` (an evicted job key loses a run). Returns the policy
 * (a cluster: the first master's whose policy is not noeviction, else noeviction), or undefined
 * when the server does not allow CONFIG (some managed Redis); callers warn.
 */
export async function evictionPolicy(redis: Redis): Promise<string | undefined> {
  try {
    const policies = await Promise.all(
      (await redisNodes(redis)).map(
        async (node) => ((await node.config('GET', 'maxmemory-policy')) as string[])[1],
      ),
    );
    return policies.find((p) => p !== 'noeviction') ?? policies[0];
  } catch {
    return undefined;
  }
}

/**
 * What makes this Redis unsafe for queued runs: AOF off (a restart loses every acknowledged run
 * since the last snapshot) or an eviction policy other than noeviction (a full Redis drops job
 * keys). A cluster is checked node by node, replicas too (one becomes the master on a failover;
 * each problem names its node). Undefined when the server does not allow CONFIG (some managed
 * Redis): unknown, not safe.
 */
export async function redisDurabilityProblems(redis: Redis): Promise<string[] | undefined> {
  let replicas: Redis[] = [];
  try {
    // Inside the try: a CLUSTER NODES refused (CONFIG/CLUSTER locked down) is "unknown", not a throw.
    if (redis.isCluster) replicas = await replicaConnections(redis as unknown as Cluster);
    const nodes = [...(await redisNodes(redis)), ...replicas];
    const problems: string[] = [];
    for (const node of nodes) {
      const where = redis.isCluster ? ` on ${node.options.host}:${node.options.port}` : '';
      const aof = ((await node.config('GET', 'appendonly')) as string[])[1];
      const policy = ((await node.config('GET', 'maxmemory-policy')) as string[])[1];
      if (aof !== 'yes') problems.push(`appendonly is ${aof ?? 'unknown'}, not yes${where}`);
      if (policy !== 'noeviction')
        problems.push(`maxmemory-policy is ${policy ?? 'unknown'}, not noeviction${where}`);
    }
    return problems;
  } catch {
    return undefined;
  } finally {
    for (const r of replicas) r.disconnect();
  }
}

/**
 * Short-lived connections to a cluster's live replicas (the Cluster client, reading from masters,
 * keeps none), with the cluster's own per-node options (password, TLS). The caller disconnects.
 */
async function replicaConnections(cluster: Cluster): Promise<Redis[]> {
  const [master] = await redisNodes(cluster as unknown as Redis);
  if (!master) return [];
  const text = String(await master.cluster('NODES'));
  const out: Redis[] = [];
  for (const line of text.split('\n')) {
    const [, address, flags] = line.split(' ');
    if (!address || !flags || !/\bslave\b/.test(flags) || /fail|noaddr|handshake/.test(flags)) continue;
    const hostPort = address.split('@')[0] ?? '';
    const cut = hostPort.lastIndexOf(':');
    out.push(
      new Redis({
        ...cluster.options.redisOptions,
        host: hostPort.slice(0, cut),
        port: Number(hostPort.slice(cut + 1)),
        maxRetriesPerRequest: 1,
        retryStrategy: () => null,
      }),
    );
  }
  return out;
}
