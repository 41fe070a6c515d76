/**
 * Islet's process configuration: one zod schema over the environment, units in the names.
 * `loadConfig(env)` is called from each `main.ts`, never at import, so tests build apps
 * from explicit values and a bad variable fails the process at start with every problem listed.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUN_CODE_LIMITS, SANDBOX_MODES, type SandboxMode } from '@islet/protocol';
import { z } from 'zod';
import { redisConfigProblems, redisConfigShape } from './redis-connection.ts';
import { resolveSecretFiles } from './secret-files.ts';

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
const list = (def: string) =>
  z
    .string()
    .default(def)
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    );

export const configSchema = z.object({
  /** HTTP port of the gateway (or of the runner's metrics/health endpoint via ISLET_RUNNER_METRICS_PORT). */
  ISLET_PORT: int(8080),
  ISLET_HOST: z.string().default('0.0.0.0'),
  /**
   * When set, the gateway serves the runner channel (/internal/v1/*) only on this port and not on
   * ISLET_PORT, so the public Service/Ingress never routes to it. 0 = one port for everything.
   */
  ISLET_INTERNAL_PORT: int(0),
  /**
   * When set, the gateway serves /metrics only on this port (with /healthz and /readyz), so
   * Prometheus scrapes a port no public Service exposes. 0 = /metrics on ISLET_PORT.
   */
  ISLET_METRICS_PORT: int(0),
  /**
   * On SIGTERM the gateway fails /readyz at once but keeps serving this long, so load balancers
   * (Endpoints, ingress) stop sending before it closes; then it drains in-flight requests.
   */
  ISLET_SHUTDOWN_DELAY_MS: int(0),
  /** Redis: URL, mode (standalone|sentinel|cluster), sentinels, password, CA (redis-connection.ts). */
  ...redisConfigShape,
  /**
   * The gateway checks at start that Redis keeps runs: AOF on and maxmemory-policy noeviction.
   * `warn` (default: a managed Redis may hide CONFIG) logs, `refuse` stops the gateway, `off` skips.
   */
  ISLET_REDIS_DURABILITY_CHECK: z.enum(['warn', 'refuse', 'off']).default('warn'),
  /**
   * `kid:base64,kid2:base64`, each key 32 bytes. Old keys stay listed so old records open.
   * Like every secret (secret-files.ts), better given as ISLET_SEAL_KEYS_FILE, a file holding the value.
   */
  ISLET_SEAL_KEYS: z.string().min(1, 'ISLET_SEAL_KEYS is required (kid:base64-32-bytes,…)'),
  /** Key id new records are sealed with. Default: the first key listed. */
  ISLET_SEAL_ACTIVE_KEY_ID: z.string().optional(),
  /** Shared secret on the runner→gateway channel (/internal/v1/*). */
  ISLET_INTERNAL_TOKEN: z.string().min(16, 'ISLET_INTERNAL_TOKEN must be at least 16 characters'),
  ISLET_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  // gateway
  /** Largest accepted request body. */
  ISLET_BODY_LIMIT_BYTES: int(1_048_576, 1024),
  /** Requests per tenant per minute (fixed window). */
  ISLET_RATE_LIMIT_PER_MINUTE: int(1200, 1),
  /** Runs of one tenant that may be queued or running at once. */
  ISLET_MAX_IN_FLIGHT_RUNS: int(200, 1),
  /** Longest `Prefer: wait=N` honoured. */
  ISLET_PREFER_WAIT_MAX_SECONDS: int(60, 0),
  /** How long the gateway waits for an `http` App to answer one call. */
  ISLET_APP_CALL_TIMEOUT_MS: int(30_000, 1),
  /** Connections (Apps) one tenant may hold: each may hold gateway resources (an mcp watch). */
  ISLET_TENANT_MAX_CONNECTIONS: int(100, 1),
  /** mcp connections a gateway watches for tool-list changes at once (a stream and a socket each). */
  ISLET_MCP_WATCHED_CONNECTIONS: int(32, 1),
  /**
   * Whether `http` connections may reach loopback, private, link-local (cloud metadata) and other
   * non-public addresses. Off in production: a tenant's URL must not reach the cluster's inside.
   * The local dev stack turns it on (its Apps run on 127.0.0.1).
   */
  ISLET_APP_ALLOW_PRIVATE_NETWORKS: z.enum(['true', 'false']).default('false'),
  /**
   * Largest answer of one App call: an `http` App's response body (read stops there and the call
   * fails as AppCallFailed `answer-too-large`) and a `client` connection's posted answer (413).
   */
  ISLET_APP_ANSWER_MAX_BYTES: int(4_194_304, 1024),
  /** Deepest nesting of arrays/objects accepted in any JSON body (checked before parsing). */
  ISLET_JSON_MAX_DEPTH: int(64, 2),
  /** Requests with a missing or unknown API key one client address may send per minute (then 429). */
  ISLET_AUTH_FAILURES_PER_MINUTE: int(30, 1),
  /**
   * Proxy hops in front of the gateway whose X-Forwarded-For is trusted for the client address
   * (the ingress: 1). 0 = the socket's peer address. Per-address limits need the real address.
   */
  ISLET_TRUST_PROXY_HOPS: int(0),
  /**
   * A development stack served over plain http (devstack sets it): cookies are set without
   * `Secure`. Off everywhere else, so a cookie never travels in the clear behind a TLS ingress.
   */
  ISLET_DEV_PLAIN_HTTP: z.enum(['true', 'false']).default('false'),
  /** Event streams (SSE) one tenant may hold open at once, across gateway replicas (then 429). */
  ISLET_SSE_STREAMS_PER_TENANT: int(64, 1),
  /** Event streams one API key may hold open at once, across replicas (then 429); within the tenant's. */
  ISLET_SSE_STREAMS_PER_KEY: int(16, 1),
  /** How long a `client` call waits for its answer before failing as AppCallFailed. */
  ISLET_CLIENT_CALL_TIMEOUT_MS: int(300_000, 1),
  /** A decision not answered within this time expires and its paused run ends Cancelled (helper-5). */
  ISLET_DECISION_EXPIRE_MS: int(86_400_000, 1000),
  /**
   * Secret key of the HMAC the call journal compares arguments with (arguments stay sealed). The
   * same on every gateway; set it once at install (changing it makes in-flight replays mismatch).
   * Unset: a fixed built-in key, which hides arguments only from casual reads of Redis.
   */
  ISLET_JOURNAL_ARGS_KEY: z.string().min(16).optional(),
  /**
   * The run_code ceiling of this deployment, ms: a longer `timeoutMs` is capped to it (the run_code
   * document: "a lower ceiling can apply in some setups"). Never above RUN_CODE_LIMITS.maxTimeoutMs.
   */
  ISLET_RUN_CODE_MAX_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1)
    .max(RUN_CODE_LIMITS.maxTimeoutMs)
    .default(RUN_CODE_LIMITS.maxTimeoutMs),
  /**
   * What this setup's program runtime can honour. `false` makes a request carrying the control
   * fail with `timeoutMs is not available for this PTC runtime` / `sandbox_permissions is not
   * available for this PTC runtime` (e.g. a deployment with one fixed budget, or only a read-only pool).
   */
  ISLET_RUNTIME_TIMEOUT_MS: z.enum(['true', 'false']).default('true'),
  ISLET_RUNTIME_SANDBOX_PERMISSIONS: z.enum(['true', 'false']).default('true'),
  /** Run records, events and idempotency keys live this long. */
  ISLET_RUN_RETENTION_SECONDS: int(7 * 24 * 3600, 60),
  /**
   * Bytes of Redis one tenant's retained runs may hold (sealed code, request, result and logs,
   * counted as written, kept for the retention period): past it the tenant's submits get 507 and
   * other tenants are not affected. The effective bound is the smaller of this and
   * ISLET_TENANT_REDIS_SHARE of Redis's `maxmemory` (when Redis has one).
   */
  ISLET_TENANT_STORED_MAX_BYTES: int(1_073_741_824, 1024),
  ISLET_TENANT_REDIS_SHARE: z.coerce.number().gt(0).max(1).default(0.25),

  // runner
  /** Jobs one runner process executes at once (one sandbox slot each). */
  ISLET_RUNNER_CONCURRENCY: int(4, 1),
  /**
   * Runs per mode a runner keeps parked: a run whose binding call waits (a person's decision held
   * in place, a slow App, a `client` call) gives its slot back and waits outside the slots, so
   * slots bound CPU-bound work only; its time budget keeps counting. The worker takes up to
   * slots + this many jobs, but fetches a new one only while a slot is free. Past it a waiting run
   * keeps its slot. 0 = no parking. A parked run without its isolate costs a few KiB and one open
   * request to a gateway.
   */
  ISLET_RUNNER_PARKED_MAX: int(256, 0),
  /**
   * Of the parked runs, how many keep their isolate (and its sandbox host process: ~60 MB
   * resident idle, plus the program's heap, at most its memoryMb): the memory budget of parking,
   * default 4 × (60 MB + heap). Past it the run parked longest is released: its isolate ends, and
   * once its calls are answered (journaled by the gateway) it replays from its journal with the
   * same clock and seed, sending nothing twice, within the rest of its budget. 0 = release every
   * parked run.
   */
  ISLET_RUNNER_PARKED_ISOLATES_MAX: int(4, 0),
  /**
   * A run parks once one of its binding calls went this long without an answer, ms: long enough
   * that a gateway round trip (~1-3 ms) or a quick App never parks (parking and resuming cost two
   * fair-share scripts and may queue the run behind busy slots), short enough that a slow App or a
   * person frees the slot at once.
   */
  ISLET_RUNNER_PARK_AFTER_MS: int(100, 1),
  /**
   * Log text a run sends live on its event stream (`log` events) at most, bytes; past it one
   * `log` event says `truncated` (the end record keeps what the output cap kept).
   */
  ISLET_LIVE_LOG_MAX_BYTES: int(1024 * 1024, 0),
  /** How long printed lines gather before they go out as one `log` event, ms. */
  ISLET_LIVE_LOG_FLUSH_MS: int(250, 10),
  /**
   * Tenants whose usage metrics (`islet_tenant_*_total`) carry their own `tenant` label; every
   * other tenant is counted as `other` (bounded cardinality). Comma-separated; default none.
   */
  ISLET_METRICS_TENANTS: list(''),
  /** Sandbox modes this runner serves; one BullMQ worker per mode. */
  ISLET_RUNNER_MODES: list('read-only').pipe(z.array(z.enum(SANDBOX_MODES)).min(1)),
  /** Gateways the runner sends binding calls to (any replica serves any call). */
  ISLET_GATEWAY_URLS: list('http://127.0.0.1:8080').pipe(z.array(z.string().url()).min(1)),
  /**
   * BullMQ worker name (the pod name in Kubernetes): the operator matches busy workers to pods
   * so scale-in removes idle runners first. Unset: the host name.
   */
  ISLET_RUNNER_NAME: z.string().min(1).optional(),
  /** Runner's /metrics, /healthz, /readyz port; 0 = pick a free one. */
  ISLET_RUNNER_METRICS_PORT: int(9464),
  /** BullMQ job lock; renewed every half of it while the job runs. */
  ISLET_RUNNER_LOCK_DURATION_MS: int(30_000, 1000),
  /** How often workers look for jobs whose lock expired (a dead runner). */
  ISLET_RUNNER_STALLED_INTERVAL_MS: int(15_000, 500),
  /** A job stalled more often than this is failed (the run ends Unavailable). */
  ISLET_RUNNER_MAX_STALLED_COUNT: int(3, 0),
  /**
   * Every this many ms the runner checks each mode's worker: one that held no job while jobs waited
   * at two checks in a row, with no pick-up in between, is closed and replaced (BullMQ workers can
   * stop fetching without any error, e.g. a blocking client that re-dialled and never settled, so
   * this is the one guard that notices an idle runner beside a growing queue). Costs one count
   * query per mode and check, only while the worker is idle. 0 = off.
   */
  ISLET_RUNNER_PICKUP_WATCHDOG_MS: int(5_000, 0).refine((ms) => ms === 0 || ms >= 100, {
    message: 'ISLET_RUNNER_PICKUP_WATCHDOG_MS is 0 (off) or at least 100',
  }),
  /**
   * Direct hand-off (one server, fair share on): a runner's worker blocked idle registers itself,
   * and the gateway's submit moves the job to active for it, takes its lease and begins its attempt
   * in the add's own script (no fetch). Read by the gateway (hands off) and the runner (registers).
   */
  ISLET_IDLE_HANDOFF: z.enum(['on', 'off']).default('on'),
  /**
   * A runner's idle registrations in the compact form (@islet/runs handoff-terms.ts: ~260 B, only
   * what differs between workers; the names a submit's script holds in its text): a hand-off's
   * decode of them −41.6 k Redis instructions (test/bench/README.md round 44 `handoff-terms`).
   * Read by gateways since 9ec25e04 (the release after e8feb7a0, whose submit script fails on one:
   * its submit errors), so `on` by default since the release after 9ec25e04; `off` (the full form,
   * which every gateway reads) for a roll from a release older than 9ec25e04. Read by the runner.
   */
  ISLET_HANDOFF_COMPACT_TERMS: z.enum(['on', 'off']).default('on'),
  /**
   * A runner's idle registration is refused while its queue's marker stands (@islet/runs
   * idle-scripts.ts `REGISTER_IDLE`'s 5th key): its pop is served the marker at once, so the
   * registration would only stand, no pop blocked, until its take-back, and a submit in between
   * would hand its job to a worker already woken; refused, no take-back follows the pop. Hand-offs
   * taken by a take-back ~55 % → ~14 % at 6 clients, take-backs 0.24 → 0.03 a run; the 6-client
   * submit → answer not separated (higher on it in 5 of 6 ABBA pairs against the previous release,
   * lower in 2 of 2 of this flag on one commit: test/bench/README.md round 48 `pop-registration`);
   * `on` by default since round 50: the flag alone, on one commit, lowered the 6-client submit →
   * answer p50 in 4 of 4 pairs over two cycles (round 49 `fetch-takeback` at load 6–10, round 50's
   * lead at load 0.7–3.5) and cut the take-backs ~85 %. `off`: as before. The runner's own script:
   * no stored form; runners with it on and off may serve one queue.
   */
  ISLET_HANDOFF_REFUSE_ON_MARKER: z.enum(['on', 'off']).default('on'),
  /**
   * The gateway's add hands a job only to an idle registration whose runner still holds its live
   * channel (@islet/runs handoff-live.ts: a subscription Redis drops with a dead runner's
   * connections), so a runner killed while registered takes no submit (before: one a mode, taken
   * back by the gateway 1 s later). Runners subscribe since round 46 (6b60376a, the release after
   * 9f886855), so `on` by default since the release after 6b60376a (round 47); 9f886855's and older
   * runners hold no channel, and a gateway checking hands them nothing (no loss: they fetch), so
   * `off` for a roll from such a release (charts/islet/README.md, upgrading). Read by the gateway.
   */
  ISLET_HANDOFF_LIVE_CHECK: z.enum(['on', 'off']).default('on'),
  /** BullMQ attempts per run (a run whose processor crashed is retried). */
  ISLET_JOB_ATTEMPTS: int(3, 1),
  /**
   * The stored formats this process writes. `2` (the default since the release after e807b91): the
   * leaner record, index entries, job data and call journal, which e807b91 and every later release
   * read, and since the release after d92635a no `kind none` for a Completed run, which d92635a and
   * later read as absent. `1`: the bytes of releases before e807b91, which read nothing else — an
   * operator upgrading straight from a release older than d92635a sets `1` for that roll (older pods still serve
   * beside the new ones) and `2` once no older pod is left (charts/islet/README.md, upgrading).
   * Readers accept both forms whatever it says, and stay until retention has dropped format-1
   * records (ISLET_RUN_RETENTION_SECONDS, 7 days by default).
   */
  ISLET_WRITE_FORMAT: z.enum(['1', '2']).default('2'),
  /**
   * The runner stores a run's stage stamps with its end (the record's `timings`: enqueued, fetched,
   * picked up, engine called and returned, end sent, in µs, ~45 B; services/runs run-timings.ts).
   * No product reader reads them (the API, the console and the operator do not): only the benches'
   * stage rows (test/bench/stages.ts turns it on for the clusters they start). Off: ~64 B less of
   * a run's AOF, in the end's fsync'd write (test/bench/README.md round 43 `format-43`).
   */
  ISLET_RUN_STAGE_TIMINGS: z.enum(['true', 'false']).default('false'),
  /**
   * A binding call's `call` event written as a reference to its journal entry (`i`, `ms`), not a
   * sealed copy of the call's outcome and arguments: one seal a call fewer (the outcome is sealed
   * once, in the journal), its reader (services/runs call-event-reads.ts) opening the event's data
   * from the run's journal, which a run's end expires with its events (includes/transition.lua).
   * Default `true` since round 45: 9ec25e04 (round 44) and later read both forms (two-release
   * rule; e8feb7a0 and older read the new form's events as `{}`). `false` writes the sealed copy
   * again (an operator rolling back past 9ec25e04 sets it first). Gateways and runners (files
   * calls) alike. Round 44 `outcome-seal`, round 45 `seal-on`.
   */
  ISLET_CALL_ONE_SEAL: z.enum(['true', 'false']).default('true'),
  /**
   * Start sandbox hosts under the kernel launcher (islet-jail: no_new_privs, seccomp, Landlock,
   * rlimits per mode). `off` runs them as plain child processes (dev machines without the helper).
   */
  ISLET_SANDBOX_JAIL: z.enum(['on', 'off']).default('off'),
  /**
   * Where a root runner installs the sandbox runtime (node, the host script and what it imports)
   * when the application directory is not traversable by the per-run uids (e.g. a clone under a
   * 0700 home): a root-owned directory every user can traverse. Read by @islet/kernel-sandbox
   * (runtime.ts) from the environment; listed here so it is documented and validated.
   */
  ISLET_SANDBOX_RUNTIME_DIR: z.string().regex(/^\//, 'an absolute path').default('/var/lib/islet/runtime'),
  /**
   * The file-sandbox enforcement a run_code run requires. `full`: on a host that enforces only
   * partly, runs fail `sandbox-unavailable` before they start (counted in
   * `islet_sandbox_unavailable_runs_total`) instead of running with partial limits, and the
   * runner's /readyz answers 503. `partial` is the default here for dev machines without the
   * launcher; the chart and deploy/production require `full` (runners.sandboxEnforcementRequired),
   * `partial` there being the explicit opt-out.
   */
  ISLET_SANDBOX_ENFORCEMENT_REQUIRED: z.enum(['partial', 'full']).default('partial'),
  /**
   * Directory holding every session workspace (`<root>/<tenant>/<session>`): the gateway's file
   * routes and the runners' `files.*` bindings and skills use the same path (a shared volume in
   * Kubernetes). Sandbox processes in danger-full-access are walled off from it. Must lie outside
   * the application directory. Default `<os tmpdir>/islet-workspaces`.
   */
  ISLET_WORKSPACE_ROOT: z.string().min(1).default(join(tmpdir(), 'islet-workspaces')),
  /** On SIGTERM, how long running jobs may finish before they are handed back. */
  ISLET_RUNNER_SHUTDOWN_GRACE_MS: int(25_000, 0),

  // fair share (runner side; services/runner/src/fair-share.ts)
  /**
   * Fraction (0 < x <= 1) of a pool's live slots (the sum of ISLET_RUNNER_CONCURRENCY over the
   * pool's live runners) that one tenant's executing runs and skills may hold at once while other
   * tenants have work waiting in the pool, rounded down, at least 1. Work-conserving: a tenant
   * alone may use every slot. 1 = no share (no lease, no count). Default 0.5.
   */
  ISLET_TENANT_POOL_SHARE: z.coerce.number().gt(0).max(1).default(0.5),
  /** Absolute cap on one tenant's executing runs and skills per pool, on top of the share; 0 = none. */
  ISLET_TENANT_MAX_EXECUTING_PER_POOL: int(0, 0),
  /**
   * Life of a tenant's slot lease (and of a runner's slot registration) without a heartbeat; the
   * runner renews every third of it. A SIGKILLed runner's slots come back after at most this long.
   */
  ISLET_TENANT_SHARE_LEASE_MS: int(30_000, 1000),
  /**
   * A job that must wait for a slot goes back to the queue (delayed, no attempt spent) for this
   * long, unless a freed slot is handed to it first (then it is promoted at once).
   */
  ISLET_TENANT_SHARE_RECHECK_MS: int(5_000, 50),
});

export type IsletConfig = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses `env`; each secret may instead come from the file its `X_FILE` variable names (see
 * secret-files.ts). The caller removes the secrets from its environment afterwards (`scrubSecretEnv`).
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): IsletConfig {
  const resolved = resolveSecretFiles(env);
  const parsed = configSchema.safeParse(resolved.env);
  const lines = [
    ...resolved.problems,
    ...(parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)),
    ...(parsed.success ? redisConfigProblems(parsed.data) : []),
  ];
  if (lines.length > 0 || !parsed.success) {
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return parsed.data;
}

export type { SandboxMode };
