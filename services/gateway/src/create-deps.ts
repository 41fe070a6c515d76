/** Wires a gateway's dependencies from its configuration: Redis connections, stores, queues, metrics. */
import {
  createMetrics,
  createRedis,
  createSessionStore,
  createSettingsCache,
  createSettingsStore,
  createTenantStore,
  hashApiKey,
  type IsletConfig,
  keyUsable,
  type Logger,
  migrateKeyLayout,
  type Redis,
  readRepliesDirect,
  readRepliesFast,
  redisDurabilityProblems,
  redisPinger,
  sealerFromConfig,
} from '@islet/core';
import { createMcpStore } from '@islet/mcp';
import {
  createCallJournal,
  createClientCallMailbox,
  createDecisionStore,
  createHealthStore,
  createInFlightStore,
  createPoolDemandStore,
  createRunIndex,
  createRunLifecycle,
  createRunPolicyStore,
  createRunStore,
  createStreamListenersStore,
  createTenantBytesStore,
} from '@islet/runs';
import { CallRunCache } from './call-run-cache.ts';
import { createConnectionStore } from './connection-store.ts';
import type { GatewayDeps } from './deps.ts';
import { createEventHub } from './event-hub.ts';
import { createJobEventsStore } from './job-events-store.ts';
import { memoizeOwnSeals } from './own-seal-memo.ts';
import { queueMetricsCollectors } from './queue-metrics-store.ts';
import { createCacheHub } from './read-cache.ts';
import { createRedisProbeStore } from './redis-probe-store.ts';
import { createRunQueueStore } from './run-queue-store.ts';
import { createSseSlots } from './sse-slot-store.ts';
import { createWindowCountStore } from './window-count-store.ts';

/** The gateway sealer's cipher stock (core's `SealerOptions`); see `createGatewayDeps`. */
const GATEWAY_SEAL_STOCK = { ready: 64, restockBelow: 40 } as const;

/**
 * The gateway's dependencies, plus `redis`: the connection its stores share, for the process that
 * owns it (shutdown, tests); routes and services get `GatewayDeps`, which has none.
 */
export async function createGatewayDeps(
  config: IsletConfig,
  logger: Logger,
): Promise<GatewayDeps & { redis: Redis; close(): Promise<void> }> {
  const redis = createRedis(config);
  // Its replies (a binding call's claim and outcome among them) read with no stream push or tick.
  // …and parsed straight to text for the commands that ask for text (core's redis-text-replies.ts).
  readRepliesFast(redis);
  const subscriber = createRedis(config);
  // Where a waiter's end push (and every other channel's message) arrives: read the same way.
  readRepliesDirect(subscriber);
  // A submit seals its program, description and request before its one write: their ciphers are
  // made beforehand (core's sealer, `ready`), in batches of at least 24 (8 submits' worth), and
  // 40 or more are left when a batch is due: 13 submits arriving in one turn find theirs made.
  const sealer = sealerFromConfig(config, GATEWAY_SEAL_STOCK);
  const runQueue = createRunQueueStore(
    redis,
    (err) => logger.warn({ err }, 'queue connection error'),
    config.ISLET_IDLE_HANDOFF === 'on',
    config.ISLET_WRITE_FORMAT,
    // A runner killed while registered idle was handed a job: taken back for a live one, logged
    // and counted (islet_handoff_reclaims_total{mode}; `metrics` is made below, before any add).
    (r, mode) => {
      metrics.handoffReclaims.inc({ mode });
      logger.warn(
        { jobId: r.jobId, handOff: r.handOff, moved: r.moved, mode },
        'handed job taken back: its worker never took it',
      );
    },
    // A runner killed while registered takes no job at all (its live channel gone with it).
    config.ISLET_HANDOFF_LIVE_CHECK === 'on',
  );
  const { queues } = runQueue;
  // Queue depth, queue age, Redis memory and reachability are read from Redis at scrape time:
  // accurate across replicas, no background loop.
  const metrics = createMetrics({
    component: 'gateway',
    ...queueMetricsCollectors(redis, queues),
    pingRedis: redisPinger(redis),
  });
  if (config.ISLET_REDIS_DURABILITY_CHECK !== 'off') {
    const problems = await redisDurabilityProblems(redis);
    const text =
      problems === undefined
        ? 'Redis does not allow CONFIG GET: AOF and maxmemory-policy noeviction cannot be checked'
        : problems.length > 0
          ? `Redis can lose queued runs: ${problems.join('; ')}`
          : undefined;
    // Unknown (CONFIG refused) only warns even under `refuse`: managed Redis hides CONFIG.
    if (text && problems?.length && config.ISLET_REDIS_DURABILITY_CHECK === 'refuse') {
      redis.disconnect();
      subscriber.disconnect();
      throw new Error(`${text} (ISLET_REDIS_DURABILITY_CHECK=refuse)`);
    }
    if (text) logger.warn({ problems }, text);
  }
  // An installation upgraded in place keeps its tenants' keys (see key-migration.ts).
  await migrateKeyLayout(redis, logger);
  const hub = createEventHub(subscriber);
  await hub.start();
  const caches = createCacheHub(subscriber, redis);
  const tenantStore = createTenantStore(redis);
  // Every authenticated request resolves its key and reads its tenant: both cached (read-cache.ts).
  // Keyed by the key's hash (what Redis holds), so neither the cache nor its channel carries a key.
  // A revoke or rotation drops the hashes it changed here and on every replica before it answers
  // (the store announces them; `key-revoked` ends the key's open event streams: key-watch.ts).
  // The expiry is checked on every read, cached or not.
  const identities = caches.cache('api-key', (hash) => tenantStore.readKeyIdentity(hash));
  const usable = async (hash: string) => {
    const identity = await identities.get(hash);
    return keyUsable(identity) ? identity : null;
  };
  // The store announces the change to every replica; this one drops its entries before answering.
  const dropHere = async (hashes: string[]) => {
    for (const hash of hashes) await identities.invalidate(hash);
  };
  const tenantsById = caches.cache('tenant', (id) => tenantStore.getTenant(id));
  // Read on every submit; written only through the admin route, which drops it everywhere.
  const policyStore = createRunPolicyStore(redis);
  const policies = caches.cache('run-policy', (tenant) => policyStore.get(tenant));
  const runPolicies: GatewayDeps['runPolicies'] = {
    ...policyStore,
    get: async (tenant) => (await policies.get(tenant)) ?? policyStore.get(tenant),
    // What `get` gives from the cache once read: a submit's run built without a promise.
    peek: (tenant) => policies.peek(tenant),
    async set(tenant, policy) {
      const saved = await policyStore.set(tenant, policy);
      await policies.invalidate(tenant);
      return saved;
    },
  };
  const clientCalls = createClientCallMailbox({
    redis,
    subscriber,
    sealer,
    timeoutMs: config.ISLET_CLIENT_CALL_TIMEOUT_MS,
  });
  // A read of a run this gateway submitted opens the program, description and request it sealed
  // (a whole pushed end from a runner before round 41, a record read back): those come from memory
  // (own-seal-memo.ts). A binding call's events are sealed past the memo: this gateway never opens
  // them on a run's path, and a hundred-call program's hundred would push other runs' submit
  // entries out of it. So is a run's end: its runner sealed it, so the memo never held the one a
  // waiter opens from its push, and looking it up there cost that turn a miss.
  const runs = createRunStore(redis, memoizeOwnSeals(sealer), {
    retentionSeconds: config.ISLET_RUN_RETENTION_SECONDS,
    eventSealer: sealer,
    endSealer: sealer,
    writeFormat: config.ISLET_WRITE_FORMAT,
    callOneSeal: config.ISLET_CALL_ONE_SEAL === 'true',
  });
  const journal = createCallJournal({
    redis,
    sealer,
    // A run's waiter reads back every outcome this gateway journaled for it (its record's calls):
    // from memory, not a decryption each. A memo of its own, so a hundred-call run's outcomes do
    // not push the submits' entries out of the run store's.
    outcomeSealer: memoizeOwnSeals(sealer, { maxEntries: 4096, maxValueChars: 16 * 1024 }),
    ttlSeconds: config.ISLET_RUN_RETENTION_SECONDS,
    writeFormat: config.ISLET_WRITE_FORMAT,
    ...(config.ISLET_JOURNAL_ARGS_KEY ? { argsHashKey: config.ISLET_JOURNAL_ARGS_KEY } : {}),
  });
  return {
    config,
    redis,
    sealer,
    clientCalls,
    runs,
    lifecycle: createRunLifecycle({ runs, journal }),
    inFlight: createInFlightStore(redis),
    runIndex: createRunIndex(redis, sealer, {
      retentionSeconds: config.ISLET_RUN_RETENTION_SECONDS,
      writeFormat: config.ISLET_WRITE_FORMAT,
    }),
    streamListeners: createStreamListenersStore(redis),
    health: createHealthStore(redis),
    tenants: {
      ...tenantStore,
      resolveKey: (key) => usable(hashApiKey(key)),
      resolveKeyHash: usable,
      async revokeKey(tenantId, keyId) {
        const hashes = await tenantStore.revokeKey(tenantId, keyId);
        if (hashes) await dropHere(hashes);
        return hashes;
      },
      async rotateKey(tenantId, keyId, graceSeconds) {
        const rotated = await tenantStore.rotateKey(tenantId, keyId, graceSeconds);
        if (rotated) await dropHere(rotated.dropped);
        return rotated;
      },
      getTenant: (id) => tenantsById.get(id),
      // As `resolveKeyHash` (the expiry checked on every read) and `getTenant`, from what the caches
      // hold and have read: no promise (auth.ts's submit path).
      knownKeyHash: (hash) => {
        const identity = identities.peek(hash);
        return identity === undefined ? undefined : keyUsable(identity) ? identity : null;
      },
      knownTenant: (id) => tenantsById.peek(id),
    },
    sessions: createSessionStore(redis),
    storedBytes: createTenantBytesStore(redis, { retentionSeconds: config.ISLET_RUN_RETENTION_SECONDS }),
    // Read on every submit; cached, dropped on the settings channel (see settings-cache.ts).
    settings: createSettingsCache(createSettingsStore(redis), subscriber),
    connections: createConnectionStore(redis, sealer, caches, config.ISLET_TENANT_MAX_CONNECTIONS),
    journal,
    callRuns: new CallRunCache(),
    decisions: createDecisionStore({
      redis,
      sealer,
      expireAfterMs: config.ISLET_DECISION_EXPIRE_MS,
      // Decisions (and their answers' input) live as long as the run they belong to.
      ttlSeconds: config.ISLET_RUN_RETENTION_SECONDS,
    }),
    runQueue,
    poolDemand: createPoolDemandStore(redis, config),
    hub,
    streamSlots: createSseSlots(redis, {
      perTenant: config.ISLET_SSE_STREAMS_PER_TENANT,
      perKey: config.ISLET_SSE_STREAMS_PER_KEY,
    }),
    windowCounts: createWindowCountStore(redis),
    jobEvents: createJobEventsStore(redis, (err, mode) =>
      logger.warn({ err: err.message, mode }, 'skill queue events error'),
    ),
    redisProbe: createRedisProbeStore(redis),
    mcpStorage: createMcpStore(redis),
    caches,
    runPolicies,
    metrics,
    logger,
    async close() {
      clientCalls.close();
      caches.close();
      hub.close();
      await runQueue.close();
      subscriber.disconnect();
      redis.disconnect();
    },
  };
}
