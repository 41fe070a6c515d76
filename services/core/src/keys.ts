/**
 * The Redis keys of the gateway and runner stores (runs, tenants, settings, sessions, locks). The call
 * journal, decisions and run policies keep theirs in `@islet/journal` (prefix configurable there);
 * queue names are in `@islet/protocol` `queues.ts`. Per-run keys share the hash tag
 * `{<runId>}` so a run's record, event stream and call mailboxes live in one Cluster slot.
 */
export const keys = {
  run: (runId: string) => `islet:run:{${runId}}`,
  runEvents: (runId: string) => `islet:run:{${runId}}:events`,
  /** List a `client` call's answer is pushed to (any gateway may receive it; the waiting one BLPOPs). */
  clientCallResult: (runId: string, index: number) => `islet:run:{${runId}}:call:${index}:result`,
  /** Marks a `client` call as awaiting its answer (value: attempt). */
  clientCallPending: (runId: string, index: number) => `islet:run:{${runId}}:call:${index}:pending`,
  sessionRuns: (tenant: string, session: string) => `islet:tenant:${tenant}:session:${session}:runs`,
  /**
   * "Allow for the session": an ask-policy tool a person allowed for every later call of one
   * session. Value `<keyId>`; lives as long as the runs do (ISLET_RUN_RETENTION_SECONDS).
   */
  sessionGrant: (tenant: string, session: string, connectionId: string, tool: string) =>
    `islet:tenant:${tenant}:session:${session}:grant:${connectionId}:${tool}`,
  /** The principal that opened a session (set by its first run; `sessions.read` shows only your own). */
  sessionOwner: (tenant: string, session: string) => `islet:tenant:${tenant}:session:${session}:owner`,
  idempotency: (tenant: string, key: string) => `islet:tenant:${tenant}:idem:${key}`,
  inFlight: (tenant: string) => `islet:tenant:${tenant}:inflight`,
  rateWindow: (tenant: string, window: number) => `islet:tenant:${tenant}:rl:${window}`,
  /** Failed authentications from one client address in one minute window. */
  authFailures: (address: string, window: number) => `islet:authfail:${address}:${window}`,
  /** A tenant's open event streams: stream id → lease expiry (ms), across gateway replicas. */
  sseStreams: (tenant: string) => `islet:tenant:${tenant}:sse`,
  tenant: (tenant: string) => `islet:tenant:${tenant}`,
  tenants: () => 'islet:tenants',
  connections: (tenant: string) => `islet:tenant:${tenant}:connections`,
  apiKey: (hash: string) => `islet:apikey:${hash}`,
  settings: () => 'islet:settings',
  /** Held by the one gateway that runs the orphan sweep this interval (see the gateway's orphan-sweeper.ts). */
  orphanSweepLock: () => 'islet:lock:orphan-sweep',
  /** A tenant's MCP surface settings (`@islet/mcp`): which tools, their names and descriptions. */
  mcpSettings: (tenant: string) => `islet:tenant:${tenant}:mcp`,
  /** An MCP session (`Mcp-Session-Id`): its tenant; any gateway replica serves it. */
  mcpSession: (session: string) => `islet:mcp:session:${session}`,
  /** The run an MCP request started, so `notifications/cancelled` (maybe at another replica) cancels it. */
  mcpRequestRun: (session: string, requestId: string) => `islet:mcp:session:${session}:req:${requestId}`,
  /** A client's answer to an elicitation Islet sent (any replica may receive it; the asking one polls). */
  mcpElicitation: (session: string, id: string) => `islet:mcp:session:${session}:elicit:${id}`,
  /**
   * Skills a tenant has queued or running (ZSET skill id → expiry ms): counted in the in-flight
   * quota with `inFlight`; an entry whose gateway died expires on its own.
   */
  skillsInFlight: (tenant: string) => `islet:tenant:${tenant}:skills`,
  /*
   * Fair share (runner's fair-share.ts). One hash tag per pool, `{pool:<mode>}`: the scripts touch
   * a pool's slot registry and one tenant's leases and deferred jobs together, in one Cluster slot.
   */
  /** HASH runner instance → `<slots>:<expiry ms>`: the pool's live slots. */
  poolSlots: (mode: string) => `islet:{pool:${mode}}:slots`,
  /** ZSET job id → lease expiry ms: the tenant's executing runs and skills in the pool. */
  poolTenantLeases: (mode: string, tenant: string) => `islet:{pool:${mode}}:tenant:${tenant}:leases`,
  /** ZSET job id → first deferral ms: the tenant's jobs sent back for being over its share, oldest first. */
  poolTenantDeferred: (mode: string, tenant: string) => `islet:{pool:${mode}}:tenant:${tenant}:deferred`,
};

/** Pub/sub channels. Messages carry a run id only; subscribers read the state from Redis. */
export const channels = {
  /** A run was asked to stop: every runner aborts it if it holds it. */
  cancel: 'islet:cancel',
  /** A run's event stream grew: gateways wake SSE readers and `Prefer: wait` requests. */
  runEvents: 'islet:run-events',
  /** A run was created; the message is the session's index key (`keys.sessionRuns`), which the
   * console's session stream listens on. */
  sessionRuns: 'islet:session-runs',
  /** Platform settings changed. */
  settings: 'islet:settings-changed',
};
