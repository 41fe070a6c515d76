/** Runner process: config from env, engines per mode, BullMQ workers, /metrics + health, SIGTERM drain. */
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname } from 'node:path';
import {
  createLogger,
  createMetrics,
  createRedis,
  createSettingsCache,
  createSettingsStore,
  loadConfig,
  readRepliesFast,
  redisPinger,
  scrubSecretEnv,
  sealerFromConfig,
  secretFilePaths,
} from '@islet/core';
import { createEngine, type Engine, type SandboxFacts } from '@islet/engine';
import {
  hardenProcess,
  probeEnforcement,
  protectPaths,
  sandboxRuntime,
  WorkspaceStore,
  wrapCommandForMode,
} from '@islet/kernel-sandbox';
import { problem, type SandboxMode } from '@islet/protocol';
import { createCallJournal, createRunStore } from '@islet/runs';
import { endCipherStock } from './end-ciphers.ts';
import { createGatewayClient } from './gateway-client.ts';
import { createRunExecutor } from './run-executor.ts';
import { createRunner } from './runner.ts';
import { sandboxReadiness } from './sandbox-readiness.ts';
import { createSkillExecutor } from './skill-executor.ts';

// Non-dumpable and no_new_privs before any secret is read (kernel-sandbox harden.ts).
const hardening = hardenProcess();
const config = loadConfig(process.env);
// The secret files' directories are walled off from every sandbox (islet-jail --deny), since in a
// pod the sandbox runs under this process's uid.
protectPaths([...new Set(secretFilePaths().map((f) => dirname(f)))]);
// Secrets live in this process's config only: not in process.env, nor in any sandbox it starts.
scrubSecretEnv();
const logger = createLogger({ name: 'runner', level: config.ISLET_LOG_LEVEL });
if (hardening.notes.length > 0) logger.warn({ hardening }, 'process hardening incomplete');
const redis = createRedis(config);
// The stores' connection (a run's end and journal writes): replies read with no stream push or tick.
// …and parsed straight to text for the commands that ask for text (core's redis-text-replies.ts).
readRepliesFast(redis);
// islet_redis_up / islet_redis_ping_seconds: what this runner sees of Redis, at scrape time.
const metrics = createMetrics({ component: 'runner', pingRedis: redisPinger(redis) });
// Settings changes arrive here (pub/sub) and drop the runner's cached settings.
const settingsSubscriber = createRedis(config);
settingsSubscriber.on('error', (err) =>
  logger.warn({ err: err.message }, 'settings subscriber connection error'),
);
redis.on('error', (err) => logger.warn({ err: err.message }, 'redis connection error'));
// A run's end seals its result and text between the program's end and the end's write: their
// ciphers are made beforehand (core's sealer, `ready`), two for each slot's end, and made again
// in batches (end-ciphers.ts).
const sealer = sealerFromConfig(config, endCipherStock(config.ISLET_RUNNER_CONCURRENCY));

// What the kernel launcher can enforce here, per mode: reported as a metric and carried into
// each run's result text ("File sandbox enforcement is partial on this host.").
// Session workspaces (shared with the gateway's file routes); danger-full-access hosts and skills
// are walled off from this root (islet-jail --workspace-root).
const workspaceRoot = config.ISLET_WORKSPACE_ROOT;
if (config.ISLET_SANDBOX_JAIL === 'on') {
  // The per-run uid must be able to execute Node and the host script: checked (and, as root, the
  // runtime installed) before anything starts, with the blocking path named (kernel-sandbox runtime.ts).
  try {
    const runtime = sandboxRuntime();
    logger.info({ runtime: runtime.dir, installed: runtime.installed }, 'sandbox runtime');
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, 'the sandbox runtime cannot be used');
    process.exit(1);
  }
}
await mkdir(workspaceRoot, { recursive: true, mode: 0o755 });
const workspaces = new WorkspaceStore({ root: workspaceRoot });
const facts = new Map<SandboxMode, SandboxFacts>();
for (const mode of config.ISLET_RUNNER_MODES) {
  const levels = ['full', 'partial', 'none'] as const;
  let level: (typeof levels)[number] = 'none';
  // Without the launcher the file sandbox is the files binding's own checks only: partial.
  facts.set(mode, { mode, enforcement: 'partial' });
  if (config.ISLET_SANDBOX_JAIL === 'on') {
    const report = await probeEnforcement(mode, { workspaceRoot });
    level = report.enforcement;
    if (level === 'none') {
      logger.fatal(
        { mode, report },
        'ISLET_SANDBOX_JAIL=on but the kernel launcher cannot enforce anything here',
      );
      process.exit(1);
    }
    facts.set(mode, { mode, enforcement: level });
  }
  for (const l of levels) metrics.sandboxEnforcement.set({ mode, level: l }, l === level ? 1 : 0);
  metrics.sandboxUnavailableRuns.inc({ mode }, 0); // present from the start, so rate() sees the first one
}

// One engine per mode, created up front so the sandbox process metrics exist from the start.
const engines = new Map<SandboxMode, Engine>();
for (const mode of config.ISLET_RUNNER_MODES) {
  const engine: Engine = createEngine({
    // Every slot keeps its host between runs: with fewer idle hosts than slots, each burst of
    // concurrent runs stopped the surplus hosts and started new ones in the runs' path, each start
    // costing as much CPU as many runs. The bench measured this as
    // the largest cost under 16 concurrent clients.
    maxIdlePerPartition: config.ISLET_RUNNER_CONCURRENCY,
    // …but not per tenant without bound: a runner serving many tenants keeps this many at most.
    maxIdleTotal: Math.max(8, 2 * config.ISLET_RUNNER_CONCURRENCY),
    ...(config.ISLET_SANDBOX_JAIL === 'on'
      ? { wrapCommand: wrapCommandForMode(mode, { workspaceRoot }) }
      : {}),
    onProcessEvent(event) {
      if (event.type === 'retired') metrics.sandboxRestarts.inc({ mode, reason: event.reason });
      else if (event.type === 'start-failed') {
        metrics.sandboxStartFailures.inc({ mode });
        logger.warn({ mode, err: event.message }, 'sandbox host failed to start');
      } else metrics.sandboxProcesses.set({ mode }, engine.stats?.().processes ?? 0);
    },
  });
  engines.set(mode, engine);
  metrics.sandboxProcesses.set({ mode }, 0);
}
const engineFor = (mode: SandboxMode) => {
  const engine = engines.get(mode);
  if (!engine) throw new Error(`this runner does not serve ${mode}`);
  return engine;
};

const executor = createRunExecutor({
  runs: createRunStore(redis, sealer, {
    retentionSeconds: config.ISLET_RUN_RETENTION_SECONDS,
    writeFormat: config.ISLET_WRITE_FORMAT,
    stageTimings: config.ISLET_RUN_STAGE_TIMINGS === 'true',
    callOneSeal: config.ISLET_CALL_ONE_SEAL === 'true',
  }),
  settings: createSettingsCache(createSettingsStore(redis), settingsSubscriber),
  journal: createCallJournal({
    redis,
    sealer,
    ttlSeconds: config.ISLET_RUN_RETENTION_SECONDS,
    writeFormat: config.ISLET_WRITE_FORMAT,
    // The gateway's key: both sides claim entries of one journal and must hash arguments alike.
    ...(config.ISLET_JOURNAL_ARGS_KEY ? { argsHashKey: config.ISLET_JOURNAL_ARGS_KEY } : {}),
  }),
  engineFor,
  sandboxFacts: (mode) => facts.get(mode),
  workspaces,
  requireFullEnforcement: config.ISLET_SANDBOX_ENFORCEMENT_REQUIRED === 'full',
  liveLog: { maxBytes: config.ISLET_LIVE_LOG_MAX_BYTES, flushMs: config.ISLET_LIVE_LOG_FLUSH_MS },
  meteredTenants: config.ISLET_METRICS_TENANTS,
  parkAfterMs: config.ISLET_RUNNER_PARK_AFTER_MS,
  stageTimings: config.ISLET_RUN_STAGE_TIMINGS === 'true',
  gateway: createGatewayClient({ urls: config.ISLET_GATEWAY_URLS, token: config.ISLET_INTERNAL_TOKEN }),
  metrics,
  logger,
});
const skills = createSkillExecutor({ sealer, workspaces, metrics, logger });
const runner = createRunner({ config, executor, skills, metrics, logger });
await runner.start();

let ready = true;
// Enforcement is probed once at start: a host below the requirement stays NotReady for its life.
const sandbox = sandboxReadiness(config.ISLET_SANDBOX_ENFORCEMENT_REQUIRED, facts.values());
if (!sandbox.ready) logger.error({ reason: sandbox.reason }, 'runner not ready: sandbox enforcement');
const server = createServer(async (req, res) => {
  if (req.url === '/metrics') {
    res.writeHead(200, { 'content-type': metrics.registry.contentType });
    res.end(await metrics.registry.metrics());
  } else if (req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
  } else if (req.url === '/readyz') {
    const ok = ready && redis.status === 'ready' && sandbox.ready;
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        status: ok ? 'ready' : 'not ready',
        ...(sandbox.reason ? { reason: sandbox.reason } : {}),
      }),
    );
  } else {
    res
      .writeHead(404, { 'content-type': 'application/problem+json' })
      .end(JSON.stringify(problem('not-found')));
  }
});
await new Promise<void>((resolve) =>
  server.listen(config.ISLET_RUNNER_METRICS_PORT, config.ISLET_HOST, resolve),
);
const address = server.address();
const port = typeof address === 'object' && address ? address.port : config.ISLET_RUNNER_METRICS_PORT;
logger.info(
  { port, modes: config.ISLET_RUNNER_MODES, concurrency: config.ISLET_RUNNER_CONCURRENCY },
  'runner ready',
);
process.stdout.write(
  `${JSON.stringify({ islet: 'runner-ready', port, modes: config.ISLET_RUNNER_MODES, dumpable: hardening.dumpable })}\n`,
);

let closing = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, async () => {
    if (closing) return;
    closing = true;
    ready = false;
    logger.info({ signal, active: runner.activeRuns().length }, 'runner draining');
    await runner.close();
    await Promise.all([...engines.values()].map((e) => e.close()));
    server.close();
    settingsSubscriber.disconnect();
    redis.disconnect();
    process.exit(0);
  });
}
