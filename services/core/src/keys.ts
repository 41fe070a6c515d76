/**
 * Every Redis key of Islet, and why each key's hash tag is what it is.
 *
 * Redis Cluster only runs a MULTI, a Lua script or a multi-key command when all its keys hash to
 * one slot; a `{…}` hash tag decides the slot. The rule Islet keeps (and the slot-checking tests
 * enforce): every transaction, script and multi-key command touches
 * keys of ONE of these groups, never two. The `redis-cluster.test.ts` of core, journal and gateway
 * and the runner's `fair-share.cluster.test.ts` run every store on a slot-checking node, where a
 * command spanning two slots fails with CROSSSLOT.
 *
 * - Per run, tag `{<runId>}`: the run record, its event stream, its `client` call mailboxes, its
 *   call journal (`journal:{<runId>}`, @islet/runs's keys.ts) and its decisions (`decisions:{<runId>}`).
 *   A run's own state changes in one script (run-store's TRANSITION, the journal's and decisions'
 *   scripts), and runs spread evenly over the cluster because run ids are random.
 * - Per tenant, tag `{t:<tenant>}`: in-flight runs and skills (counted together for the quota),
 *   rate windows, sessions (run index, owner, grants), idempotency keys, SSE stream leases,
 *   connections, MCP settings, run policy, the tenant record and its pending-decisions index. The
 *   `t:` keeps a tenant called like a run id (or a pool) off that run's slot by accident of naming.
 * - Per pool, tag `{pool:<mode>}` (runner's fair-share.ts): a pool's slot registry, its leases,
 *   queued counts (the gateway's enqueue counts, @islet/runs pool-demand.ts) and waiting index,
 *   plus each tenant's leases and deferred jobs in it, changed together by one script.
 * - Per queue, tag `{runs-<mode>}` (@islet/protocol queues.ts): BullMQ's keys under prefix `islet`,
 *   and `islet:paused:{runs-<mode>}` on the queue's slot on purpose (the operator reads it with the
 *   queue's counts).
 * - Global single keys (tenants set, settings, API keys, failed-auth windows, locks, MCP sessions,
 *   the decisions' expiry index): only ever touched one key per command.
 *
 * Where one logical change spans two groups (a run is created: its record AND its tenant's
 * in-flight set), it is two single-slot writes in a fixed order with a recovery path for a crash
 * between them; run-store.ts and decision-store.ts say which order and who repairs. The one
 * exception is for a server that checks no slots at all (standalone, sentinel; asked with INFO):
 * there an admitted submit writes both halves in one script (run-store's ADMIT_AND_CREATE).
 */

/** The hash tag of a tenant's keys (exported for @islet/runs's prefix-aware keys, its `journalKeys`). */
export const tenantTag = (tenant: string) => `{t:${tenant}}`;
const t = (tenant: string) => `islet:tenant:${tenantTag(tenant)}`;

export const keys = {
  run: (runId: string) => `islet:run:{${runId}}`,
  runEvents: (runId: string) => `islet:run:{${runId}}:events`,
  /** List a `client` call's answer is pushed to (any gateway may receive it; the waiting one pops it). */
  clientCallResult: (runId: string, index: number) => `islet:run:{${runId}}:call:${index}:result`,
  /** Marks a `client` call as awaiting its answer (value: attempt). */
  clientCallPending: (runId: string, index: number) => `islet:run:{${runId}}:call:${index}:pending`,
  /** ZSET run id → createdAt: a session's runs (tenant slot: written by the tenant half of a create). */
  sessionRuns: (tenant: string, session: string) => `${t(tenant)}:session:${session}:runs`,
  /**
   * Set (with an expiry, refreshed) while a session's events stream listens: a create publishes
   * on `channels.sessionRuns` only then. The admission derives the name from `sessionRuns`'s
   * (`<session runs>:listeners`).
   */
  sessionRunsListeners: (tenant: string, session: string) => `${t(tenant)}:session:${session}:runs:listeners`,
  /**
   * HASH `<connectionId>\n<tool>` → keyId, "allow for the session": ask-policy tools a person allowed
   * for every later call of one session (session-store.ts); lives as long as the runs do
   * (ISLET_RUN_RETENTION_SECONDS). One structure per session, so no session id names another's grant.
   */
  sessionGrants: (tenant: string, session: string) => `${t(tenant)}:session:${session}:grants`,
  /** The principal that opened a session (set by its first run; `sessions.read` shows only your own). */
  sessionOwner: (tenant: string, session: string) => `${t(tenant)}:session:${session}:owner`,
  /**
   * Set for a while after a run's admission refreshed the session's owner (session-store.ts
   * `ownerFreshLua`): later creates meanwhile leave the owner as it is. The admission derives the
   * name from `sessionOwner`'s (`<owner>:fresh`).
   */
  sessionOwnerFresh: (tenant: string, session: string) => `${t(tenant)}:session:${session}:owner:fresh`,
  idempotency: (tenant: string, key: string) => `${t(tenant)}:idem:${key}`,
  /**
   * ZSET run id → createdAt ms: the tenant's runs not yet ended. Tenant slot, not the run's: the
   * quota reads it with `skillsInFlight` in one command. The score lets the recovery loop tell a
   * create still in progress from one that died before writing the run record.
   */
  inFlight: (tenant: string) => `${t(tenant)}:inflight`,
  rateWindow: (tenant: string, window: number) => `${t(tenant)}:rl:${window}`,
  /** Bytes the tenant's retained runs wrote in one retention bucket (tenant-bytes-store.ts). */
  storedBytes: (tenant: string, bucket: number) => `${t(tenant)}:bytes:${bucket}`,
  /** Failed authentications from one client address in one minute window (global single key). */
  authFailures: (address: string, window: number) => `islet:authfail:${address}:${window}`,
  /** A tenant's open event streams: stream id → lease expiry (ms), across gateway replicas. */
  sseStreams: (tenant: string) => `${t(tenant)}:sse`,
  /** One API key's open event streams, as `sseStreams` (tenant slot: taken with it in one script). */
  sseKeyStreams: (tenant: string, keyId: string) => `${t(tenant)}:sse:key:${keyId}`,
  tenant: (tenant: string) => t(tenant),
  /** SET of tenant ids (global: written after the tenant record, see tenant-store.ts). */
  tenants: () => 'islet:tenants',
  connections: (tenant: string) => `${t(tenant)}:connections`,
  apiKey: (hash: string) => `islet:apikey:${hash}`,
  /**
   * HASH key id → the key's listing (tenant-store.ts: prefix, scopes, principal, times, the SHA-256
   * of its secret and of a rotated one in its grace period; never a secret).
   */
  tenantApiKeys: (tenant: string) => `${t(tenant)}:apikeys`,
  /** ZSET run id → createdAt ms: the tenant's runs and skills, what `GET /v1/runs` lists (run-index.ts). */
  indexRuns: (tenant: string) => `${t(tenant)}:index:runs`,
  /** HASH run id → the run's summary JSON (no code, no logs; description sealed). */
  indexRunSummaries: (tenant: string) => `${t(tenant)}:index:summaries`,
  /** ZSET run id → ended ms: the order runs leave the index once their records expired. */
  indexRunsEnded: (tenant: string) => `${t(tenant)}:index:ended`,
  /**
   * LIST of run creates and ends not yet applied to the index, the day's usage and the hour's
   * health (one JSON entry each, appended by a create's and an end's tenant half; folded many at a
   * time by @islet/runs' includes/index-fold.lua, which reads `index:runs` as this key's sibling).
   * Every reader of those keys folds it first.
   */
  indexPending: (tenant: string) => `${t(tenant)}:index:pending`,
  /** ZSET session → last activity ms (a run created or ended in it). */
  indexSessions: (tenant: string) => `${t(tenant)}:index:sessions`,
  /** HASH `<session>\n<field>` → total, a count per final status, principal, created. */
  indexSessionStats: (tenant: string) => `${t(tenant)}:index:session-stats`,
  /**
   * STREAM of the tenant's run and decision changes (`type` run|decision, `id`), what
   * `GET /v1/events` serves; written with the change, kept to ~1000 entries (a decision's append
   * trims, a run's is trimmed by the next fold of `indexPending`), a run's append announced on
   * `channels.tenantFeed` while a stream listens (`tenantFeedListeners`), a decision's always.
   */
  tenantFeed: (tenant: string) => `${t(tenant)}:feed`,
  /**
   * Set (with an expiry, refreshed) while a gateway's events stream of the tenant listens: a create
   * announces its feed entry on `channels.tenantFeed` only then. The admission derives the name from
   * `tenantFeed`'s (`<feed>:listeners`, run index Lua).
   */
  tenantFeedListeners: (tenant: string) => `${t(tenant)}:feed:listeners`,
  /** HASH of a tenant's usage on one UTC day (`YYYY-MM-DD`): counters added at each run's end. */
  usageDay: (tenant: string, day: string) => `${t(tenant)}:usage:${day}`,
  /**
   * HASH of a tenant's health in one UTC hour (`hour` = ms / 3 600 000): `<bucket>|<field>` →
   * value, 10 s buckets (@islet/runs health-store.ts). Counters are added by each run's end in the
   * tenant half of its end script; gauges by the gateway's sampler.
   */
  healthHour: (tenant: string, hour: number) => `${t(tenant)}:health:${hour}`,
  /** HASH of the whole cluster's sampled gauges in one hour, as `healthHour` (global single key). */
  clusterHealthHour: (hour: number) => `islet:health:cluster:${hour}`,
  /** Held by the one gateway that samples health gauges for this bucket (health-sampler.ts). */
  healthSampleLock: (bucket: number) => `islet:lock:health-sample:${bucket}`,
  /** HASH key id → when the key last authenticated, ms (written at most once a minute per replica). */
  tenantApiKeysUsed: (tenant: string) => `${t(tenant)}:apikeys:used`,
  settings: () => 'islet:settings',
  /** Held by the one gateway that walks the in-flight index this interval (the recovery loop's `inFlightFeed`). */
  orphanSweepLock: () => 'islet:lock:orphan-sweep',
  /** Held by the one process that moves keys of the pre-Cluster layout (key-migration.ts). */
  keyMigrationLock: () => 'islet:lock:key-migration',
  /** The key layout version this Redis holds (`2`: slot-safe, nothing of the old layout left). */
  keyLayout: () => 'islet:key-layout',
  /** A tenant's MCP surface settings (`@islet/mcp`): which tools, their names and descriptions. */
  mcpSettings: (tenant: string) => `${t(tenant)}:mcp`,
  /** An MCP session (`Mcp-Session-Id`): its tenant; any gateway replica serves it. Global single key. */
  mcpSession: (session: string) => `islet:mcp:session:${session}`,
  /** The run an MCP request started, so `notifications/cancelled` (maybe at another replica) cancels it. */
  mcpRequestRun: (session: string, requestId: string) => `islet:mcp:session:${session}:req:${requestId}`,
  /** A client's answer to an elicitation Islet sent (any replica may receive it; the asking one polls). */
  mcpElicitation: (session: string, id: string) => `islet:mcp:session:${session}:elicit:${id}`,
  /**
   * Skills a tenant has queued or running (ZSET skill id → expiry ms): counted in the in-flight
   * quota with `inFlight` (same slot); an entry whose gateway died expires on its own.
   */
  skillsInFlight: (tenant: string) => `${t(tenant)}:skills`,
  /**
   * Set with `skillsInFlight`'s own expiry at each reservation: missing, no skill's reservation is
   * live, and a submit's admission does not count them. The Lua derives it (`<skills>:live`).
   */
  skillsInFlightLive: (tenant: string) => `${t(tenant)}:skills:live`,
  /*
   * Fair share (runner's fair-share.ts). One hash tag per pool, `{pool:<mode>}`: the scripts touch
   * a pool's slot registry, its lease and waiting indexes and its tenants' leases and deferred
   * jobs together, in one Cluster slot (a release may hand a slot to another tenant's deferred job).
   */
  /** HASH runner instance → `<slots>:<expiry ms>`: the pool's live slots. */
  poolSlots: (mode: string) => `islet:{pool:${mode}}:slots`,
  /** ZSET job id → lease expiry ms: the tenant's executing runs and skills in the pool. */
  poolTenantLeases: (mode: string, tenant: string) => `islet:{pool:${mode}}:tenant:${tenant}:leases`,
  /** ZSET job id → first deferral ms: the tenant's jobs sent back for being over its share, oldest first. */
  poolTenantDeferred: (mode: string, tenant: string) => `islet:{pool:${mode}}:tenant:${tenant}:deferred`,
  /**
   * ZSET job id → its first deferral ms (its score in `deferred`): the tenant's jobs holding a
   * reservation (a slot a release or a swap leased to them, not taken yet). A reservation given up
   * untaken (its job still active, or the lease lapsed) puts its job back in `deferred` with this
   * score, so it keeps its first place in its tenant's order.
   */
  poolTenantReserved: (mode: string, tenant: string) => `islet:{pool:${mode}}:tenant:${tenant}:reserved`,
  /** The prefix of a pool's tenant keys (`<prefix><tenant>:leases`), for scripts that pick the tenant. */
  poolTenantPrefix: (mode: string) => `islet:{pool:${mode}}:tenant:`,
  /** ZSET job id → lease expiry ms: every tenant's leases in the pool (how many slots are taken). */
  poolBusy: (mode: string) => `islet:{pool:${mode}}:busy`,
  /**
   * HASH tenant → jobs queued and not yet taken by a runner (the gateway counts an enqueue, the
   * runner's acquire a pick-up): tells a runner that another tenant waits behind a flood.
   */
  poolQueued: (mode: string) => `islet:{pool:${mode}}:queued`,
  /** ZSET tenant → turn (ms): tenants with deferred jobs, in the round-robin order slots go to them. */
  poolWaiting: (mode: string) => `islet:{pool:${mode}}:waiting`,
};

/** Pub/sub channels. Messages carry a run id only; subscribers read the state from Redis. */
export const channels = {
  /** A run was asked to stop: every runner aborts it if it holds it. */
  cancel: 'islet:cancel',
  /**
   * A run's event stream grew with something a `Prefer: wait` request acts on (a status other than
   * Running, an end, a decision, a `client` call): gateways wake waiters and SSE readers.
   */
  runEvents: 'islet:run-events',
  /**
   * A run's event stream grew with progress only (`<id> running`, `<id> call`, `<id> log`): an
   * attempt's start, a move back to Running, a binding call's event, printed output. Only SSE
   * readers want these, so a gateway subscribes to it only while one of its streams listens.
   */
  runProgress: 'islet:run-progress',
  /** A run was created; the message is the session's index key (`keys.sessionRuns`), which the
   * console's session stream listens on (published while one does: `keys.sessionRunsListeners`). */
  sessionRuns: 'islet:session-runs',
  /** Platform settings changed. */
  settings: 'islet:settings-changed',
  /** A `client` call's answer arrived; the message is `<runId> <index>` (client-call-mailbox.ts). */
  clientCallAnswers: 'islet:client-call-answers',
  /** A tenant's feed (`keys.tenantFeed`) grew; the message is the tenant id. */
  tenantFeed: 'islet:tenant-feed',
  /**
   * `<kind>:<key>`: every gateway drops the key from its read cache of that kind (the gateway's
   * read-cache.ts); `key-revoked:<sha256>` also ends the key's open event streams.
   */
  gatewayCache: 'islet:gateway-cache',
};
