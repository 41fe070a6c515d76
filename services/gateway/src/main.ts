/** Gateway process: config from env, dependencies, `listen`, graceful close on SIGTERM/SIGINT. */
import { createLogger, loadConfig, scrubSecretEnv } from '@islet/core';
import { hardenProcess } from '@islet/kernel-sandbox';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { createGatewayDeps } from './create-deps.ts';
import { createOrphanSweeper } from './orphan-sweeper.ts';
import { createRunsService } from './runs-service.ts';

// Non-dumpable and no_new_privs before any secret is read (kernel-sandbox harden.ts).
const hardening = hardenProcess();
const config = loadConfig(process.env);
// Secrets live in this process's config only: not in process.env, nor in anything it starts.
scrubSecretEnv();
const logger = createLogger({ name: 'gateway', level: config.ISLET_LOG_LEVEL });
if (hardening.notes.length > 0) logger.warn({ hardening }, 'process hardening incomplete');
const deps = await createGatewayDeps(config, logger);
const split = config.ISLET_INTERNAL_PORT > 0;
const app = await buildApp(deps, { surface: split ? 'public' : 'all' });
const apps: FastifyInstance[] = [app];
const portOf = (a: FastifyInstance, fallback: number) => {
  const address = a.server.address();
  return typeof address === 'object' && address ? address.port : fallback;
};
await app.listen({ port: config.ISLET_PORT, host: config.ISLET_HOST });
const port = portOf(app, config.ISLET_PORT);
let internalPort = port;
if (split) {
  // The runner channel on its own listener: only runners (NetworkPolicy) reach this port.
  const internal = await buildApp(deps, { surface: 'internal' });
  await internal.listen({ port: config.ISLET_INTERNAL_PORT, host: config.ISLET_HOST });
  internalPort = portOf(internal, config.ISLET_INTERNAL_PORT);
  apps.push(internal);
}
const sweeper = createOrphanSweeper(deps, createRunsService(deps));
sweeper.start();
logger.info({ port, internalPort }, 'gateway listening');
// One machine-readable line for launchers (devstack) that started us on port 0.
process.stdout.write(
  `${JSON.stringify({ islet: 'gateway-ready', port, internalPort, dumpable: hardening.dumpable })}\n`,
);

let closing = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, async () => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'gateway closing');
    sweeper.stop();
    await Promise.all(apps.map((a) => a.close()));
    await deps.close();
    process.exit(0);
  });
}
