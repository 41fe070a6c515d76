#!/usr/bin/env node
/**
 * `islet` command line; `islet --help` prints every command and flag (USAGE below).
 * Admin commands talk to Redis directly when ISLET_REDIS_URL (or --redis-url) is given — the way to
 * make the first platform.admin key — otherwise to the gateway's admin endpoints with
 * ISLET_URL + ISLET_API_KEY (a key with platform.admin). The Redis connection follows the same
 * variables as the services (ISLET_REDIS_MODE, _SENTINELS, _PASSWORD(_FILE), _CA_FILE; cluster
 * seeds comma-separated in the URL).
 */
import { parseArgs } from 'node:util';
import { createRedis, createTenantStore, redisConfigFromEnv, SCOPES, type Scope } from '@islet/core';
import { createIsletClient } from './client.ts';

/** Every flag the CLI takes (`--help` lists each; a test holds the two together). */
export const OPTIONS = {
  name: { type: 'string' },
  id: { type: 'string' },
  tenant: { type: 'string' },
  scopes: { type: 'string', default: 'apps.use,sessions.read,decisions' },
  'rate-limit': { type: 'string' },
  'max-in-flight': { type: 'string' },
  'redis-url': { type: 'string' },
  url: { type: 'string' },
  key: { type: 'string' },
  code: { type: 'string' },
  description: { type: 'string', default: 'Run a program from the command line' },
  session: { type: 'string' },
  style: { type: 'string' },
  principal: { type: 'string' },
  'timeout-ms': { type: 'string' },
  'key-id': { type: 'string' },
  'grace-seconds': { type: 'string', default: '0' },
  'expires-at': { type: 'string' },
  wait: { type: 'string', default: '30' },
} as const;

export const USAGE = `usage:
  islet admin create-tenant --name <name> [--id <id>] [--rate-limit <per-minute>] [--max-in-flight <n>]
  islet admin create-key --tenant <id> [--scopes <a,b>] [--principal <who>] [--expires-at <iso>]
  islet admin list-keys --tenant <id>
  islet admin revoke-key --tenant <id> --key-id <key-…>
  islet admin rotate-key --tenant <id> --key-id <key-…> [--grace-seconds <n>]
  islet run --code <js> [--description <text>] [--style run_code|code-mode] [--session <id>]
            [--timeout-ms <ms>] [--wait <seconds>]
  islet --help

flags:
  --name <name>            tenant name (create-tenant)
  --id <id>                tenant id (create-tenant; default: generated)
  --rate-limit <n>         requests per minute for the tenant (create-tenant)
  --max-in-flight <n>      runs the tenant may have queued or running (create-tenant)
  --tenant <id>            the tenant a key is for (create-key)
  --scopes <a,b>           scopes of the key, from: ${SCOPES.join(', ')}
                           (default: apps.use,sessions.read,decisions)
  --principal <who>        who the key belongs to; sessions belong to principals (default: the key)
  --expires-at <iso>       when the key stops working, ISO 8601 (create-key; default: never)
  --key-id <id>            the key to revoke or rotate (its id, as list-keys shows)
  --grace-seconds <n>      how long a rotated key's old secret keeps working (rotate-key; default 0)
  --code <js>              the program: the body of an async function (run)
  --description <text>     five to ten words saying what it does (run)
  --style <style>          run_code or code-mode (run; default: the tenant's run policy)
  --session <id>           session of the run (run; default: generated)
  --timeout-ms <ms>        run_code time budget (run; default 120000)
  --wait <seconds>         how long to wait for the result (run; default 30)
  --url <url>              gateway URL (default: ISLET_URL, else http://127.0.0.1:8080)
  --key <key>              API key (default: ISLET_API_KEY)
  --redis-url <url>        admin commands straight on Redis (default: ISLET_REDIS_URL)
  -h, --help               this text
`;

export async function runCli(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const [group, command, ...rest] = argv;
  const { values } = parseArgs({
    args: group === 'run' ? [command ?? '', ...rest].filter(Boolean) : rest,
    options: OPTIONS,
    allowPositionals: true,
  });
  const out = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
  const redisUrl = values['redis-url'] ?? env.ISLET_REDIS_URL;
  const client = () =>
    createIsletClient({
      url: values.url ?? env.ISLET_URL ?? 'http://127.0.0.1:8080',
      key: values.key ?? env.ISLET_API_KEY ?? '',
    });

  if (group === 'admin' && command === 'create-tenant') {
    if (!values.name) throw new Error('--name is required');
    const input = {
      name: values.name,
      ...(values.id ? { id: values.id } : {}),
      ...(values['rate-limit'] ? { rateLimitPerMinute: Number(values['rate-limit']) } : {}),
      ...(values['max-in-flight'] ? { maxInFlightRuns: Number(values['max-in-flight']) } : {}),
    };
    if (redisUrl) {
      const redis = createRedis(redisConfigFromEnv({ ...env, ISLET_REDIS_URL: redisUrl }));
      try {
        out(await createTenantStore(redis).createTenant(input));
      } finally {
        redis.disconnect();
      }
    } else out(await client().createTenant(input));
    return 0;
  }
  if (group === 'admin' && command === 'create-key') {
    if (!values.tenant) throw new Error('--tenant is required');
    const scopes = values.scopes.split(',').map((s) => s.trim());
    const bad = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
    if (bad.length) throw new Error(`unknown scopes: ${bad.join(', ')} (known: ${SCOPES.join(', ')})`);
    const expiresAt = values['expires-at'] ? Date.parse(values['expires-at']) : undefined;
    if (Number.isNaN(expiresAt)) throw new Error('--expires-at must be an ISO 8601 date-time');
    if (redisUrl) {
      const redis = createRedis(redisConfigFromEnv({ ...env, ISLET_REDIS_URL: redisUrl }));
      try {
        const options = {
          ...(values.principal ? { principal: values.principal } : {}),
          ...(expiresAt !== undefined ? { expiresAt } : {}),
        };
        out(await createTenantStore(redis).createKey(values.tenant, scopes as Scope[], options));
      } finally {
        redis.disconnect();
      }
    } else out(await client().createKey(values.tenant, scopes, values.principal, expiresAt));
    return 0;
  }
  if (
    group === 'admin' &&
    (command === 'list-keys' || command === 'revoke-key' || command === 'rotate-key')
  ) {
    const tenant = values.tenant;
    const keyId = values['key-id'];
    if (!tenant) throw new Error('--tenant is required');
    if (command !== 'list-keys' && !keyId) throw new Error('--key-id is required');
    const grace = Number(values['grace-seconds']);
    if (!Number.isInteger(grace) || grace < 0) throw new Error('--grace-seconds must be a whole number ≥ 0');
    const api = redisUrl ? undefined : client();
    const redis = redisUrl
      ? createRedis(redisConfigFromEnv({ ...env, ISLET_REDIS_URL: redisUrl }))
      : undefined;
    try {
      const store = redis && createTenantStore(redis);
      if (command === 'list-keys')
        out(store ? { items: await store.listKeys(tenant) } : await api?.listKeys(tenant));
      else if (command === 'revoke-key') {
        const found = store
          ? (await store.revokeKey(tenant, keyId ?? '')) !== null
          : await api?.revokeKey(tenant, keyId ?? '');
        if (!found) throw new Error(`tenant ${tenant} has no key ${keyId}`);
        out({ revoked: keyId });
      } else {
        const rotated = store
          ? await store.rotateKey(tenant, keyId ?? '', grace)
          : await api?.rotateKey(tenant, keyId ?? '', grace);
        if (!rotated) throw new Error(`tenant ${tenant} has no key ${keyId}`);
        const { dropped: _dropped, ...shown } = rotated as typeof rotated & { dropped?: unknown };
        out(shown);
      }
    } finally {
      redis?.disconnect();
    }
    return 0;
  }
  if (group === 'run') {
    if (!values.code) throw new Error('--code is required');
    if (values.style !== undefined && values.style !== 'run_code' && values.style !== 'code-mode')
      throw new Error('--style must be run_code or code-mode');
    const run = await client().submitRun(
      {
        code: values.code,
        description: values.description,
        ...(values.style ? { style: values.style } : {}),
        ...(values.session ? { sessionId: values.session } : {}),
        ...(values['timeout-ms'] ? { timeoutMs: Number(values['timeout-ms']) } : {}),
      },
      { waitSeconds: Number(values.wait) },
    );
    if (run.text !== undefined) process.stdout.write(`${run.text}\n`);
    else out(run);
    return run.status === 'Completed' ? 0 : 1;
  }
  process.stderr.write(USAGE);
  return 2;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`islet: ${err.message}\n`);
      process.exit(1);
    },
  );
}
