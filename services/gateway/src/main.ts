/** Gateway process: config from env, dependencies, `listen`, graceful close on SIGTERM/SIGINT. */
import { createLogger, loadConfig } from '@islet/core';
import { buildApp } from './app.ts';
import { createGatewayDeps } from './create-deps.ts';

const config = loadConfig(process.env);
const logger = createLogger({ name: 'gateway', level: config.ISLET_LOG_LEVEL });
const deps = await createGatewayDeps(config, logger);
const app = await buildApp(deps);
await app.listen({ port: config.ISLET_PORT, host: config.ISLET_HOST });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : config.ISLET_PORT;
logger.info({ port }, 'gateway listening');
// One machine-readable line for launchers (devstack) that started us on port 0.
process.stdout.write(`${JSON.stringify({ islet: 'gateway-ready', port })}\n`);

let closing = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, async () => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'gateway closing');
    await app.close();
    await deps.close();
    process.exit(0);
  });
}
