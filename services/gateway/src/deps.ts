import type {
  IsletConfig,
  Logger,
  Metrics,
  Sealer,
  SessionStore,
  SettingsStore,
  TenantStore,
} from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import type {
  CallJournal,
  ClientCallMailbox,
  DecisionStore,
  HealthStore,
  RunIndex,
  RunJobData,
  RunPolicyStore,
  RunStore,
  TenantBytesStore,
} from '@islet/runs';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { postToApp } from './app-http.ts';
import type { ConnectionStore } from './connections.ts';
import type { EventHub } from './event-hub.ts';
import type { CacheHub } from './read-cache.ts';
import type { SseSlots } from './sse-slots.ts';

export interface GatewayDeps {
  config: IsletConfig;
  redis: Redis;
  sealer: Sealer;
  /** `client` calls' answers: opened and waited for here, delivered by whichever replica gets them. */
  clientCalls: ClientCallMailbox;
  runs: RunStore;
  /** The tenants' run and session index (`GET /v1/runs`, `GET /v1/sessions`). */
  runIndex: RunIndex;
  /** Health series (`GET /v1/health`): run ends count in them, the health sampler adds gauges. */
  health: HealthStore;
  tenants: TenantStore;
  /** Session owners and "allow for the session" grants. */
  sessions: SessionStore;
  /** Bytes each tenant's retained data holds (storage-quota.ts). */
  storedBytes: TenantBytesStore;
  settings: SettingsStore;
  connections: ConnectionStore;
  journal: CallJournal;
  decisions: DecisionStore;
  queues: Record<SandboxMode, Queue<RunJobData>>;
  hub: EventHub;
  /** Open event streams per key and tenant (sse-slots.ts): every SSE route takes one. */
  streamSlots: SseSlots;
  /** Per-replica read caches dropped over pub/sub (read-cache.ts); absent = no caching. */
  caches?: CacheHub;
  /** Tenants' run policies (cached with `caches`); absent = read from Redis each time. */
  runPolicies?: RunPolicyStore;
  metrics: Metrics;
  logger: Logger;
  /** HTTP client for `http` App calls (injectable for tests). */
  postToApp?: typeof postToApp;
}
