import type {
  ApiKeyIdentity,
  IsletConfig,
  Logger,
  Metrics,
  PlatformSettings,
  Sealer,
  SessionStore,
  SettingsStore,
  Tenant,
  TenantStore,
} from '@islet/core';
import type { McpStore } from '@islet/mcp';
import type {
  CallJournal,
  ClientCallMailbox,
  DecisionStore,
  HealthStore,
  InFlightStore,
  PoolDemandStore,
  RunIndex,
  RunLifecycle,
  RunPolicy,
  RunPolicyStore,
  RunStore,
  StreamListenersStore,
  TenantBytesStore,
} from '@islet/runs';
import type { postToApp } from './app-http.ts';
import type { CallRunCache } from './call-run-cache.ts';
import type { ConnectionStore } from './connection-store.ts';
import type { EventHub } from './event-hub.ts';
import type { JobEventsStore } from './job-events-store.ts';
import type { CacheHub } from './read-cache.ts';
import type { RedisProbeStore } from './redis-probe-store.ts';
import type { RunQueueStore } from './run-queue-store.ts';
import type { SseSlots } from './sse-slot-store.ts';
import type { WindowCountStore } from './window-count-store.ts';

/**
 * What the gateway's routes and services are given. No Redis connection: every Redis command is
 * sent by a store (`@islet/runs`, `@islet/core`, or a gateway `*-store.ts`); redis-boundary.test.ts
 * keeps it so.
 */
export interface GatewayDeps {
  config: IsletConfig;
  sealer: Sealer;
  /** `client` calls' answers: opened and waited for here, delivered by whichever replica gets them. */
  clientCalls: ClientCallMailbox;
  runs: RunStore;
  /** The only way a run's status changes (admit, attempt, suspend, resume, finish, fail, cancel, give up). */
  lifecycle: RunLifecycle;
  /** The tenants' in-flight index, walked by the recovery loop (run-recovery.ts). */
  inFlight: InFlightStore;
  /** The tenants' run and session index (`GET /v1/runs`, `GET /v1/sessions`). */
  runIndex: RunIndex;
  /** Markers of the tenant and session events streams listening (a create publishes only then). */
  streamListeners: StreamListenersStore;
  /** Health series (`GET /v1/health`): run ends count in them, the health sampler adds gauges. */
  health: HealthStore;
  /**
   * `knownKeyHash`/`knownTenant`: what `resolveKeyHash`/`getTenant` would give now when it is in
   * the gateway's cache and read (read-cache.ts `peek`), else `undefined`: a submit's
   * authentication without a promise (auth.ts). Absent: every request takes the async reads.
   */
  tenants: TenantStore & {
    knownKeyHash?(hash: string): ApiKeyIdentity | null | undefined;
    knownTenant?(id: string): Tenant | undefined;
  };
  /** Session owners and "allow for the session" grants. */
  sessions: SessionStore;
  /** Bytes each tenant's retained data holds (storage-quota.ts). */
  storedBytes: TenantBytesStore;
  /**
   * `peek`: the settings `get` would give now when cached and read (core's settings-cache.ts),
   * else `undefined`: a submit's run built without a promise (run-build.ts). Absent: always `get`.
   */
  settings: SettingsStore & { peek?(): PlatformSettings | undefined };
  connections: ConnectionStore;
  journal: CallJournal;
  /** The runs binding calls are served for, kept briefly; seeded at submit (call-run-cache.ts). */
  callRuns: CallRunCache;
  decisions: DecisionStore;
  /** Every job command of routes and services: run and skill jobs, removals, depths (run-queue-store.ts). */
  runQueue: RunQueueStore;
  /** Each job put on a mode's queue, counted for its tenant before the add (the runners' fair share). */
  poolDemand: PoolDemandStore;
  hub: EventHub;
  /** Open event streams per key and tenant (sse-slot-store.ts): every SSE route takes one. */
  streamSlots: SseSlots;
  /** Per-window counters: the tenant rate limit and failed authentications per address. */
  windowCounts: WindowCountStore;
  /** BullMQ queue events for callers that wait for a job to end (skills). */
  jobEvents: JobEventsStore;
  /** `/readyz`: whether Redis answers. */
  redisProbe: RedisProbeStore;
  /**
   * The store `@islet/mcp` keeps its own state in (MCP sessions, request→run ids, elicitation
   * answers, MCP settings); handed to its plugin, never used by the gateway itself.
   */
  mcpStorage: McpStore;
  /** Per-replica read caches dropped over pub/sub (read-cache.ts); absent = no caching. */
  caches?: CacheHub;
  /**
   * Tenants' run policies (cached with `caches`). `peek`: the policy `get` would give now when
   * cached and read (read-cache.ts), else `undefined` (run-build.ts, as `settings.peek`).
   */
  runPolicies: RunPolicyStore & { peek?(tenant: string): RunPolicy | undefined };
  metrics: Metrics;
  logger: Logger;
  /** HTTP client for `http` App calls (injectable for tests). */
  postToApp?: typeof postToApp;
}
