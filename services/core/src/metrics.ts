/**
 * Prometheus metrics with the names agreed in INTERFACES.md. One registry per process; label
 * sets are bounded (never a run id or tenant). Each process also exports default metrics
 * under the `islet_` prefix.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { buildInfoLabels } from './build-info.ts';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export interface MetricsOptions {
  component: string;
  defaults?: boolean;
  /**
   * Fills islet_queue_depth at scrape time (the gateway reads BullMQ's counts from Redis). The
   * gauge is emptied first: a mode whose read fails (Redis down) has no series in that scrape, so
   * Prometheus marks it stale instead of showing the last depth as if it were current.
   */
  collectQueueDepth?: (
    set: (labels: { mode: string; state: string }, value: number) => void,
  ) => Promise<void>;
  /**
   * Fills islet_queue_oldest_job_age_seconds at scrape time: queue wait is observed only when a
   * runner picks a job up, so a mode with no runner would otherwise be silent. Emptied first too.
   */
  collectQueueAge?: (set: (labels: { mode: string }, seconds: number) => void) => Promise<void>;
  /**
   * Reads Redis memory for islet_redis_used_memory_bytes / islet_redis_maxmemory_bytes at scrape
   * time; undefined (Redis unreachable) leaves both series out of the scrape.
   */
  readRedisMemory?: () => Promise<{ used: number; max: number } | undefined>;
  /**
   * PINGs Redis at scrape time (redis-probe.ts) for islet_redis_up (0 when it did not answer) and
   * islet_redis_ping_seconds (left out of a scrape whose ping failed).
   */
  pingRedis?: () => Promise<number | undefined>;
}

/**
 * How often the event-loop lag metrics (`islet_nodejs_eventloop_lag_*`) sample the loop, ms.
 * prom-client's default, 10, is a libuv timer that wakes every process's main thread 100 times a
 * second whether or not it has work: an idle gateway or runner spent ~7.4 ms of CPU a second on
 * it (~47 µs a wake-up on this machine's scheduler), and a one-client gateway waiting for Redis or
 * the runner between a run's messages was woken by it 0.3–0.8 times a run. At 100 the lag is
 * still sampled ten times a second (150 samples a 15 s scrape); idle CPU fell to ~3.2 ms a second
 * (test/bench/README.md, round 24).
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

export function createMetrics(options: MetricsOptions) {
  const registry = new Registry();
  registry.setDefaultLabels({ component: options.component });
  if (options.defaults !== false) {
    collectDefaultMetrics({
      register: registry,
      prefix: 'islet_',
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
    // prom-client names three gauges `..._total`, a suffix Prometheus reserves for counters
    // (`promtool check metrics` rejects them; test/prometheus checks every component): drop them.
    for (const name of ['active_handles', 'active_requests', 'active_resources'])
      registry.removeSingleMetric(`islet_nodejs_${name}_total`);
  }
  const registers = [registry];
  new Gauge({
    name: 'islet_build_info',
    help: 'Always 1; the labels say which build runs where',
    labelNames: ['version', 'revision', 'node'],
    registers,
  }).set(buildInfoLabels(), 1);
  // The registry collects gauges concurrently: both share one in-flight INFO read.
  let memoryRead: Promise<{ used: number; max: number } | undefined> | undefined;
  const readMemory = (read: NonNullable<MetricsOptions['readRedisMemory']>) =>
    (memoryRead ??= read().finally(() => {
      memoryRead = undefined;
    }));
  // Only where someone reads Redis memory (the gateway): elsewhere a constant 0 would mislead.
  const readRedisMemory = options.readRedisMemory;
  if (readRedisMemory) {
    // remove(), not reset(): an unlabelled gauge resets to 0, which is not "unknown".
    new Gauge({
      name: 'islet_redis_used_memory_bytes',
      help: 'Redis used_memory as read by this process (INFO memory)',
      registers,
      async collect(this: Gauge) {
        this.remove();
        const m = await readMemory(readRedisMemory);
        if (m) this.set(m.used);
      },
    });
    new Gauge({
      name: 'islet_redis_maxmemory_bytes',
      help: 'Redis maxmemory as read by this process (0: no limit)',
      registers,
      async collect(this: Gauge) {
        this.remove();
        const m = await readMemory(readRedisMemory);
        if (m) this.set(m.max);
      },
    });
  }
  const pingRedis = options.pingRedis;
  if (pingRedis) {
    let pingRead: Promise<number | undefined> | undefined;
    const ping = () =>
      (pingRead ??= pingRedis().finally(() => {
        pingRead = undefined;
      }));
    new Gauge({
      name: 'islet_redis_up',
      help: 'Whether this process reached Redis at scrape time (PING answered within 1 s)',
      registers,
      async collect(this: Gauge) {
        this.set((await ping()) === undefined ? 0 : 1);
      },
    });
    new Gauge({
      name: 'islet_redis_ping_seconds',
      help: 'Round trip of a PING to Redis at scrape time (the slowest master in a Cluster)',
      registers,
      async collect(this: Gauge) {
        this.remove();
        const seconds = await ping();
        if (seconds !== undefined) this.set(seconds);
      },
    });
  }
  return {
    registry,
    runsTotal: new Counter({
      name: 'islet_runs_total',
      help: 'Runs that reached a final status',
      labelNames: ['status', 'kind', 'mode'],
      registers,
    }),
    runDuration: new Histogram({
      name: 'islet_run_duration_seconds',
      help: 'Execution time of a run_code run on a runner, by outcome',
      labelNames: ['mode', 'status', 'kind'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    skillRunsTotal: new Counter({
      name: 'islet_skill_runs_total',
      help: 'Skill runs (run_code skill commands) that ended',
      labelNames: ['status', 'kind', 'mode'],
      registers,
    }),
    skillDuration: new Histogram({
      name: 'islet_skill_run_duration_seconds',
      help: 'Execution time of a skill run on a runner, by outcome',
      labelNames: ['mode', 'status'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    queueWait: new Histogram({
      name: 'islet_queue_wait_seconds',
      help: 'Time from submit to a runner picking the run up',
      labelNames: ['mode'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    queueDepth: new Gauge({
      name: 'islet_queue_depth',
      help: 'Jobs in the run queue of a mode by state',
      labelNames: ['mode', 'state'],
      registers,
      ...(options.collectQueueDepth
        ? {
            async collect(this: Gauge) {
              this.reset();
              await options.collectQueueDepth!((labels, value) => this.set(labels, value));
            },
          }
        : {}),
    }),
    queueOldestAge: new Gauge({
      name: 'islet_queue_oldest_job_age_seconds',
      help: 'Age of the oldest job waiting in the run queue of a mode (0 when none waits)',
      labelNames: ['mode'],
      registers,
      ...(options.collectQueueAge
        ? {
            async collect(this: Gauge) {
              this.reset();
              await options.collectQueueAge!((labels, value) => this.set(labels, value));
            },
          }
        : {}),
    }),
    bindingCalls: new Counter({
      name: 'islet_binding_calls_total',
      help: 'Binding calls served, by outcome',
      labelNames: ['outcome'],
      registers,
    }),
    bindingCallDuration: new Histogram({
      name: 'islet_binding_call_duration_seconds',
      help: 'Time to serve one binding call',
      labelNames: ['outcome'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    decisionsPending: new Gauge({
      name: 'islet_decisions_pending',
      help: 'Decisions waiting for an answer',
      registers,
    }),
    sandboxProcesses: new Gauge({
      name: 'islet_sandbox_processes',
      help: 'Sandbox host processes alive',
      labelNames: ['mode'],
      registers,
    }),
    sandboxRestarts: new Counter({
      name: 'islet_sandbox_process_restarts_total',
      help: 'Sandbox host processes replaced',
      labelNames: ['mode', 'reason'],
      registers,
    }),
    sandboxStartFailures: new Counter({
      name: 'islet_sandbox_process_start_failures_total',
      help: 'Sandbox host process starts that never became ready (spawn, jail or start-up failed)',
      labelNames: ['mode'],
      registers,
    }),
    sandboxEnforcement: new Gauge({
      name: 'islet_sandbox_enforcement',
      help: '1 on the sandbox enforcement level in effect',
      labelNames: ['mode', 'level'],
      registers,
    }),
    sandboxUnavailableRuns: new Counter({
      name: 'islet_sandbox_unavailable_runs_total',
      help: 'Runs that did not start because the required file-sandbox enforcement was not available',
      labelNames: ['mode'],
      registers,
    }),
    replayMismatches: new Counter({
      name: 'islet_replay_mismatches_total',
      help: 'Runs stopped because they diverged from their journal',
      registers,
    }),
    runnerSlots: new Gauge({
      name: 'islet_runner_slots',
      help: 'Runner execution slots by state',
      labelNames: ['mode', 'state'],
      registers,
    }),
    parkedRuns: new Gauge({
      name: 'islet_runner_parked_runs',
      help: 'Runs waiting for a binding call outside the slots; isolate="kept" still hold their isolate, "released" replay when answered',
      labelNames: ['mode', 'isolate'],
      registers,
    }),
    fetchedUnstarted: new Gauge({
      name: 'islet_runner_fetched_unstarted',
      help: 'Jobs the runner fetched (active, their lock held) whose run waits for a slot',
      labelNames: ['mode'],
      registers,
    }),
    fetchedWaitOldest: new Gauge({
      name: 'islet_runner_fetched_wait_oldest_seconds',
      help: 'How long the fetched job waiting longest for a slot has waited so far (0: none waits)',
      labelNames: ['mode'],
      registers,
    }),
    fetchedWaitLongest: new Gauge({
      name: 'islet_runner_fetched_wait_longest_seconds',
      help: 'The longest wait for a slot of a fetched job that got one, since the runner started',
      labelNames: ['mode'],
      registers,
    }),
    fetchedWaits: new Counter({
      name: 'islet_runner_fetched_waits_total',
      help: 'Fetched jobs that had to wait for a slot (fetched without one kept for them)',
      labelNames: ['mode'],
      registers,
    }),
    slotsPassedOver: new Counter({
      name: 'islet_runner_slots_passed_over_total',
      help: 'Slots kept for a job a completion started while a job fetched before it waited for one',
      labelNames: ['mode'],
      registers,
    }),
    parkings: new Counter({
      name: 'islet_runner_parkings_total',
      help: 'Runs parked while a binding call waited (gave their slot back), by what happened to their isolate',
      labelNames: ['mode', 'isolate'],
      registers,
    }),
    // A run's end fused with its job's completion sent with every key and name as an argument, not
    // in a baked text (@islet/runs baked-call.ts): `reason` one of `shape`, `derived`, `texts`
    // (runner end-complete-store.ts). Read from the runner's bakers when scraped.
    endsUnbaked: new Counter({
      name: 'islet_runner_end_unbaked_total',
      help: "Runs' ends fused with their job's completion sent unbaked (names and keys as arguments), by reason: shape (a part not of its length), derived (a key not made from its run id or tenant), texts (past the baked texts a script may have)",
      labelNames: ['reason'],
      registers,
    }),
    shareDeferrals: new Counter({
      name: 'islet_tenant_share_deferrals_total',
      help: 'Jobs sent back to the queue to wait for a slot (their tenant over its share while others wait, or the pool full)',
      labelNames: ['mode'],
      registers,
    }),
    workerRestarts: new Counter({
      name: 'islet_runner_worker_restarts_total',
      help: 'Workers restarted because they held no job while jobs waited (a worker that stopped fetching)',
      labelNames: ['mode'],
      registers,
    }),
    // Both label sets are fixed: `action` is a recovery action's type (reconcile-run.ts), `feed`
    // one of the recovery loop's feeds (or `worker-failed`, a runner's own failed-job event).
    recoveryActions: new Counter({
      name: 'islet_run_recovery_actions_total',
      help: 'Actions the run recovery loop applied, by action and by the feed that handed the run in',
      labelNames: ['action', 'feed'],
      registers,
    }),
    recoveryFailures: new Counter({
      name: 'islet_run_recovery_failures_total',
      help: 'Feeds or runs the run recovery loop could not recover in a tick (retried the next tick), by feed',
      labelNames: ['feed'],
      registers,
    }),
    // The gateway's take-back of a job its add handed to an idle runner registration that never took
    // it (its runner killed while registered: gateway handoff-reclaim-store.ts), which BullMQ's
    // stalled check would otherwise have given back ~40 s later. `mode` is a sandbox mode.
    handoffReclaims: new Counter({
      name: 'islet_handoff_reclaims_total',
      help: 'Jobs handed to an idle runner that never took them (killed while registered), taken back to the wait list by the gateway, by mode',
      labelNames: ['mode'],
      registers,
    }),
    // Usage for billing, by tenant: a tenant is a label value only when an operator lists it
    // (ISLET_METRICS_TENANTS, `meteredTenant`); every other tenant is counted as `other`, so the
    // series stay bounded however many tenants there are. Exact per-tenant figures: GET /v1/usage.
    tenantRuns: new Counter({
      name: 'islet_tenant_runs_total',
      help: 'Runs ended, by tenant (listed tenants, else "other") and final status',
      labelNames: ['tenant', 'status'],
      registers,
    }),
    tenantRunSeconds: new Counter({
      name: 'islet_tenant_run_seconds_total',
      help: 'Wall time of ended runs from acceptance to end, by tenant (listed tenants, else "other")',
      labelNames: ['tenant'],
      registers,
    }),
    tenantBindingCalls: new Counter({
      name: 'islet_tenant_binding_calls_total',
      help: 'Binding calls of ended runs, by tenant (listed tenants, else "other")',
      labelNames: ['tenant'],
      registers,
    }),
    tenantOutputBytes: new Counter({
      name: 'islet_tenant_output_bytes_total',
      help: 'Result text bytes of ended runs, by tenant (listed tenants, else "other")',
      labelNames: ['tenant'],
      registers,
    }),
    tenantSandboxCpuSeconds: new Counter({
      name: 'islet_tenant_sandbox_cpu_seconds_total',
      help: 'CPU time of ended runs\' isolates, by tenant (listed tenants, else "other")',
      labelNames: ['tenant'],
      registers,
    }),
    httpRequests: new Counter({
      name: 'islet_http_requests_total',
      help: 'HTTP requests served',
      labelNames: ['route', 'method', 'code'],
      registers,
    }),
    httpDuration: new Histogram({
      name: 'islet_http_request_duration_seconds',
      help: 'HTTP request duration',
      labelNames: ['route', 'method'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** The `tenant` label of the usage metrics: the tenant when listed (ISLET_METRICS_TENANTS), else `other`. */
export function meteredTenant(listed: readonly string[], tenant: string): string {
  return listed.includes(tenant) ? tenant : 'other';
}
