#!/usr/bin/env node
/**
 * `islet` command line.
 *   islet admin create-tenant --name <name> [--id <id>] [--rate-limit <per-minute>] [--max-in-flight <n>]
 *   islet admin create-key --tenant <id> [--scopes apps.use,sessions.read,decisions,platform.admin]
 *   islet run --code <js> [--description <text>] [--session s] [--wait 30]
 * Admin commands talk to Redis directly when ISLET_REDIS_URL (or --redis-url) is given — the way to
 * make the first platform.admin key — otherwise to the gateway's admin endpoints with
 * ISLET_URL + ISLET_API_KEY (a key with platform.admin).
 */
import { parseArgs } from 'node:util';
import { createRedis, createTenantStore, SCOPES, type Scope } from '@islet/core';
import { createIsletClient } from './client.ts';

export async function runCli(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  const [group, command, ...rest] = argv;
  const { values } = parseArgs({
    args: group === 'run' ? [command ?? '', ...rest].filter(Boolean) : rest,
    options: {
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
      session: { type: 'string', default: 'cli' },
      wait: { type: 'string', default: '30' },
    },
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
      const redis = createRedis(redisUrl);
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
    if (redisUrl) {
      const redis = createRedis(redisUrl);
      try {
        out(await createTenantStore(redis).createKey(values.tenant, scopes as Scope[]));
      } finally {
        redis.disconnect();
      }
    } else out(await client().createKey(values.tenant, scopes));
    return 0;
  }
  if (group === 'run') {
    if (!values.code) throw new Error('--code is required');
    const run = await client().submitRun(
      {
        code: values.code,
        description: values.description,
        sessionId: values.session,
        turnId: 'cli',
        callId: `cli-${Date.now()}`,
      },
      { waitSeconds: Number(values.wait) },
    );
    if (run.text !== undefined) process.stdout.write(`${run.text}\n`);
    else out(run);
    return run.status === 'Completed' ? 0 : 1;
  }
  process.stderr.write(
    'usage:\n  islet admin create-tenant --name <name> [--id <id>]\n  islet admin create-key --tenant <id> [--scopes a,b]\n  islet run --code <js>\n',
  );
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
