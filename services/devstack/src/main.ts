/**
 * `npm start`: the whole cluster on this machine — redis-server on a free port, one gateway on
 * ISLET_PORT (or a free port), a runner per sandbox mode, a dev tenant whose key is
 * ISLET_DEV_API_KEY (or the content of ISLET_DEV_API_KEY_FILE) when set. Ctrl-C stops everything.
 */
import { resolveSecretFiles, scrubSecretEnv } from '@islet/core';
import { startCluster } from './cluster.ts';

// ISLET_DEV_API_KEY or ISLET_DEV_API_KEY_FILE; neither stays in this environment (the children
// get every secret as a file, see cluster.ts).
const secrets = resolveSecretFiles(process.env, ['ISLET_DEV_API_KEY']);
if (secrets.problems.length > 0) {
  process.stderr.write(`invalid configuration:\n  ${secrets.problems.join('\n  ')}\n`);
  process.exit(1);
}
const devApiKey = secrets.env.ISLET_DEV_API_KEY;
scrubSecretEnv();
const port = process.env.ISLET_PORT ? Number(process.env.ISLET_PORT) : undefined;
const cluster = await startCluster({
  ...(port ? { gatewayPort: port } : {}),
  ...(devApiKey ? { devApiKey } : {}),
  ...(process.env.ISLET_DEV_REDIS_MAXMEMORY_BYTES
    ? { redisMaxMemoryBytes: Number(process.env.ISLET_DEV_REDIS_MAXMEMORY_BYTES) }
    : {}),
  verbose: process.env.ISLET_VERBOSE === '1',
  logLevel: process.env.ISLET_LOG_LEVEL ?? 'warn',
});

const example = `curl -s -X POST ${cluster.url}/v1/runs \\
  -H "Authorization: Bearer ${cluster.devKey}" -H "Content-Type: application/json" -H "Prefer: wait=10" \\
  -d '{"code":"console.log(\\"hello from the sandbox\\"); return 6 * 7","description":"Print a greeting and multiply"}'`;

process.stdout.write(`
Islet is running.
  gateway   ${cluster.url}   (console: ${cluster.url}/console, API docs: ${cluster.url}/docs, metrics: ${cluster.url}/metrics)
  runners   ${cluster.runners.map((r) => `${r.modes?.join(',')} (${r.url}/metrics)`).join('; ')}
  redis     ${cluster.redisUrl}
  tenant    ${cluster.tenantId}
  API key   ${cluster.devKey}
  Code Mode ${cluster.codeModeEnabled ? 'on: this dev stack turned it on in the platform settings (a fresh install has it off)' : 'off'}

Try:
${example}

Ctrl-C stops everything.
`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('\nstopping Islet…\n');
    await cluster.stop();
    process.exit(0);
  });
}
