/**
 * `npm start`: the whole cluster on this machine — its own redis-server on a free port, or the
 * existing Redis that ISLET_REDIS_URL (+ ISLET_REDIS_MODE, seeds, password, CA: the variables every
 * service reads) names; ISLET_DEV_GATEWAYS gateways (default 1), the first on ISLET_PORT (or a free
 * port); ISLET_DEV_RUNNERS_PER_MODE runners per sandbox mode (default 1); a dev tenant whose key is
 * ISLET_DEV_API_KEY (or the content of ISLET_DEV_API_KEY_FILE) when set. Ctrl-C stops everything
 * it started (an existing Redis is left as it was, data included). On a Redis that other Islet
 * processes use, give it their ISLET_SEAL_KEYS, ISLET_INTERNAL_TOKEN and ISLET_JOURNAL_ARGS_KEY
 * (each also as X_FILE): runners of both serve the same queues, so they must open each other's
 * runs; unset, this stack makes its own.
 */
import { describeRedis, resolveSecretFiles, scrubSecretEnv } from '@islet/core';
import { startCluster } from './cluster.ts';
import { devRedisConfigFromEnv } from './redis-from-env.ts';

const fail = (problems: string[]) => {
  process.stderr.write(`invalid configuration:\n  ${problems.join('\n  ')}\n`);
  process.exit(1);
};
const count = (name: string): number | undefined => {
  const text = process.env[name];
  if (text === undefined || text === '') return undefined;
  const n = Number(text);
  if (!(Number.isInteger(n) && n >= 1 && n <= 64)) fail([`${name}: "${text}" is not a whole number 1..64`]);
  return n;
};

// ISLET_DEV_API_KEY and the Redis secrets, each also as X_FILE; none stays in this environment
// (the children get every secret as a file, see cluster.ts).
const PLATFORM_SECRETS = ['ISLET_SEAL_KEYS', 'ISLET_INTERNAL_TOKEN', 'ISLET_JOURNAL_ARGS_KEY'] as const;
const secrets = resolveSecretFiles(process.env, ['ISLET_DEV_API_KEY', ...PLATFORM_SECRETS]);
const redis = devRedisConfigFromEnv(process.env);
if (secrets.problems.length > 0 || redis.problems.length > 0) fail([...secrets.problems, ...redis.problems]);
const devApiKey = secrets.env.ISLET_DEV_API_KEY;
const platformSecrets = Object.fromEntries(
  PLATFORM_SECRETS.flatMap((name) => (secrets.env[name] ? [[name, secrets.env[name]]] : [])),
) as Record<string, string>;
scrubSecretEnv();
const port = process.env.ISLET_PORT ? Number(process.env.ISLET_PORT) : undefined;
const gateways = count('ISLET_DEV_GATEWAYS');
const runnersPerMode = count('ISLET_DEV_RUNNERS_PER_MODE');
const cluster = await startCluster({
  ...(port ? { gatewayPort: port } : {}),
  ...(devApiKey ? { devApiKey } : {}),
  ...(redis.config ? { redisConfig: redis.config } : {}),
  ...(gateways ? { gateways } : {}),
  ...(runnersPerMode ? { runnersPerMode } : {}),
  ...(process.env.ISLET_DEV_REDIS_MAXMEMORY_BYTES
    ? { redisMaxMemoryBytes: Number(process.env.ISLET_DEV_REDIS_MAXMEMORY_BYTES) }
    : {}),
  ...(Object.keys(platformSecrets).length > 0 ? { env: platformSecrets } : {}),
  verbose: process.env.ISLET_VERBOSE === '1',
  logLevel: process.env.ISLET_LOG_LEVEL ?? 'warn',
});

const example = `curl -s -X POST ${cluster.url}/v1/runs \\
  -H "Authorization: Bearer ${cluster.devKey}" -H "Content-Type: application/json" -H "Prefer: wait=10" \\
  -d '{"code":"console.log(\\"hello from the sandbox\\"); return 6 * 7","description":"Print a greeting and multiply"}'`;

const others = cluster.gatewayUrls.slice(1);
process.stdout.write(`
Islet is running.
  gateway   ${cluster.url}   (console: ${cluster.url}/console, API docs: ${cluster.url}/docs, metrics: ${cluster.url}/metrics)${others.length ? `\n  gateways  ${others.join(', ')} (same API, same Redis)` : ''}
  console   ${cluster.url}/console/ — runs ${cluster.url}/console/#/, decisions #/decisions, keys #/keys, usage #/usage
  health    ${cluster.url}/console/#/health (runs/s, latency, failures, queue depth, slots, decisions: last hour; API: GET ${cluster.url}/v1/health)
  runners   ${cluster.runners.map((r) => `${r.modes?.join(',')} (${r.url}/metrics)`).join('; ')}
  redis     ${describeRedis(cluster.redisConfig)}${cluster.redis ? ' (embedded: started and stopped with this stack)' : ' (existing: left as it is on exit)'}
  tenant    ${cluster.tenantId}
  API key   ${cluster.devKey}
  Code Mode ${cluster.codeModeEnabled ? 'on: this dev stack turned it on in the platform settings (a fresh install has it off)' : 'off'}

For the CLI and the clients (islet run, islet watch, the Python client):
export ISLET_URL=${cluster.url} ISLET_API_KEY=${cluster.devKey}

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
