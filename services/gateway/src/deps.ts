import type { IsletConfig, Logger, Metrics, Sealer, SettingsStore, TenantStore } from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import type { CallJournal, DecisionStore, RunIndex, RunJobData, RunPolicyStore, RunStore } from '@islet/runs';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { postToApp } from './app-http.ts';
import type { ConnectionStore } from './connections.ts';
import type { EventHub } from './event-hub.ts';
import type { CacheHub } from './read-cache.ts';

export interface GatewayDeps {
  config: IsletConfig;
  redis: Redis;
  sealer: Sealer;
  /** A connection only for blocking reads (BLPOP of client-call answers); duplicated per wait. */
  blockingRedis: () => Redis;
  runs: RunStore;
  /** The tenants' run and session index (`GET /v1/runs`, `GET /v1/sessions`). */
  runIndex: RunIndex;
  tenants: TenantStore;
  settings: SettingsStore;
  connections: ConnectionStore;
  journal: CallJournal;
  decisions: DecisionStore;
  queues: Record<SandboxMode, Queue<RunJobData>>;
  hub: EventHub;
  /** Per-replica read caches dropped over pub/sub (read-cache.ts); absent = no caching. */
  caches?: CacheHub;
  /** Tenants' run policies (cached with `caches`); absent = read from Redis each time. */
  runPolicies?: RunPolicyStore;
  metrics: Metrics;
  logger: Logger;
  /** HTTP client for `http` App calls (injectable for tests). */
  postToApp?: typeof postToApp;
}
