/** Gateway process: config from env, dependencies, `listen`, graceful drain on SIGTERM/SIGINT. */
import { createLogger, loadConfig, scrubSecretEnv } from '@islet/core';
import { hardenProcess } from '@islet/kernel-sandbox';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { createGatewayDeps } from './create-deps.ts';
import { createDecisionsService } from './decisions-service.ts';
import { createHealthSampler } from './health-sampler.ts';
import { createGatewayRecovery } from './run-recovery.ts';
import { createRunsService } from './runs-service.ts';
import { createShutdown } from './shutdown.ts';

// Non-dumpable and no_new_privs before any secret is read (kernel-sandbox harden.ts).
const hardening = hardenProcess();
const config = loadConfig(process.env);
// Secrets live in this process's config only: not in process.env, nor in anything it starts.
scrubSecretEnv();
const logger = createLogger({ name: 'gateway', level: config.ISLET_LOG_LEVEL });
if (hardening.notes.length > 0) logger.warn({ hardening }, 'process hardening incomplete');
const deps = await createGatewayDeps(config, logger);
const split = config.ISLET_INTERNAL_PORT > 0;
const metricsSplit = config.ISLET_METRICS_PORT > 0;
const app = await buildApp(deps, { surface: split ? 'public' : 'all', metrics: !metricsSplit });
// The runner channel on its own listener: only runners (NetworkPolicy) reach this port.
const internal = split ? await buildApp(deps, { surface: 'internal' }) : undefined;
// /metrics on its own listener: only the monitoring namespace (NetworkPolicy) reaches it.
const metrics = metricsSplit ? await buildApp(deps, { surface: 'metrics' }) : undefined;
const apps = [app, internal, metrics].filter((a): a is FastifyInstance => !!a);

const runsService = createRunsService(deps);
// Decision expiry, paused-run repair and orphaned runs: one recovery loop per gateway.
const recovery = createGatewayRecovery(deps, runsService, createDecisionsService(deps, runsService));
const healthSampler = createHealthSampler(deps);
const shutdown = createShutdown({
  apps,
  delayMs: config.ISLET_SHUTDOWN_DELAY_MS,
  logger,
  beforeClose: () => {
    healthSampler.stop();
  },
  // The loop's last tick finishes before Redis closes under it.
  afterClose: async () => {
    await recovery.stop();
    await deps.close();
  },
});

const portOf = (a: FastifyInstance | undefined, fallback: number) => {
  const address = a?.server.address();
  return typeof address === 'object' && address ? address.port : fallback;
};
await app.listen({ port: config.ISLET_PORT, host: config.ISLET_HOST });
await internal?.listen({ port: config.ISLET_INTERNAL_PORT, host: config.ISLET_HOST });
await metrics?.listen({ port: config.ISLET_METRICS_PORT, host: config.ISLET_HOST });
const port = portOf(app, config.ISLET_PORT);
const internalPort = portOf(internal, port);
const metricsPort = portOf(metrics, port);
recovery.start();
healthSampler.start();
logger.info({ port, internalPort, metricsPort }, 'gateway listening');
// One machine-readable line for launchers (devstack) that started us on port 0.
process.stdout.write(
  `${JSON.stringify({ islet: 'gateway-ready', port, internalPort, metricsPort, dumpable: hardening.dumpable })}
`,
);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    void shutdown.begin(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'gateway shutdown failed');
        process.exit(1);
      },
    );
  });
}
