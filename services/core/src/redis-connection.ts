/**
 * Every Redis connection of every service is built here from one configuration, so a process
 * cannot end up on a different Redis (or a different topology) than its peers.
 *
 * - `standalone`: `ISLET_REDIS_URL` names the server (`redis://` or `rediss://` for TLS).
 * - `sentinel`: `ISLET_REDIS_SENTINELS` lists the sentinels (`host:port,host:port,…`) and
 *   `ISLET_REDIS_SENTINEL_MASTER` the master group; ioredis asks them for the current master and
 *   follows a failover. The URL still gives the scheme (`rediss://` = TLS to the data nodes), the
 *   password and the database; its host is not used.
 * - `cluster`: accepted by the schema, refused at connect time (Redis Cluster needs hash-tagged
 *   BullMQ prefixes; not supported yet).
 *
 * The password comes from the URL or from `ISLET_REDIS_PASSWORD` (a secret: give it as
 * `ISLET_REDIS_PASSWORD_FILE`); the CA that verifies a `rediss://` server from `ISLET_REDIS_CA_FILE`.
 */
import { readFileSync } from 'node:fs';
import type { RedisOptions } from 'ioredis';
import { z } from 'zod';

export const REDIS_MODES = ['standalone', 'sentinel', 'cluster'] as const;
export type RedisMode = (typeof REDIS_MODES)[number];

const optional = z
  .string()
  .optional()
  .transform((s) => (s ? s : undefined));

/** The Redis part of a service's configuration schema (gateway, runner and operator share it). */
export const redisConfigShape = {
  ISLET_REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  ISLET_REDIS_MODE: z.enum(REDIS_MODES).default('standalone'),
  /** Sentinel mode: `host:port,host:port,…` (three or more in production). */
  ISLET_REDIS_SENTINELS: optional,
  ISLET_REDIS_SENTINEL_MASTER: z.string().min(1).default('mymaster'),
  /** Overrides a password in the URL. A secret: better as ISLET_REDIS_PASSWORD_FILE. */
  ISLET_REDIS_PASSWORD: optional,
  /** PEM CA bundle that verifies a `rediss://` server (default: the system CAs). */
  ISLET_REDIS_CA_FILE: optional,
};

export type RedisConfig = {
  ISLET_REDIS_URL: string;
  ISLET_REDIS_MODE?: RedisMode | undefined;
  ISLET_REDIS_SENTINELS?: string | undefined;
  ISLET_REDIS_SENTINEL_MASTER?: string | undefined;
  ISLET_REDIS_PASSWORD?: string | undefined;
  ISLET_REDIS_CA_FILE?: string | undefined;
};

/** A URL alone (tests, the CLI) or a whole configuration. */
export type RedisTarget = string | RedisConfig;

export class RedisConfigError extends Error {
  override name = 'RedisConfigError';
}

/** Parses `host:port,host:port`; throws RedisConfigError naming the bad entry. */
export function parseSentinels(list: string): { host: string; port: number }[] {
  const seeds = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(entry);
      const port = Number(m?.[2]);
      if (!m?.[1] || !(port >= 1 && port <= 65535)) {
        throw new RedisConfigError(`ISLET_REDIS_SENTINELS: "${entry}" is not host:port`);
      }
      return { host: m[1].replace(/^\[|\]$/g, ''), port };
    });
  if (seeds.length === 0) throw new RedisConfigError('ISLET_REDIS_SENTINELS: empty');
  return seeds;
}

/** What is wrong with a Redis configuration, one line each (empty when it connects). */
export function redisConfigProblems(cfg: RedisConfig): string[] {
  try {
    redisOptionsFor(cfg);
    return [];
  } catch (err) {
    return [(err as Error).message];
  }
}

/** The ioredis options (no URL: everything is in the options) for a Redis configuration. */
export function redisOptionsFor(target: RedisTarget): RedisOptions {
  const cfg: RedisConfig = typeof target === 'string' ? { ISLET_REDIS_URL: target } : target;
  const mode = cfg.ISLET_REDIS_MODE ?? 'standalone';
  if (mode === 'cluster') {
    throw new RedisConfigError('ISLET_REDIS_MODE=cluster is not supported yet: use standalone or sentinel');
  }
  let url: URL;
  try {
    url = new URL(cfg.ISLET_REDIS_URL);
  } catch {
    throw new RedisConfigError('ISLET_REDIS_URL: not a URL');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new RedisConfigError(
      `ISLET_REDIS_URL: scheme must be redis:// or rediss://, not ${url.protocol}//`,
    );
  }
  const tlsOn = url.protocol === 'rediss:';
  if (cfg.ISLET_REDIS_CA_FILE && !tlsOn) {
    throw new RedisConfigError('ISLET_REDIS_CA_FILE is set but ISLET_REDIS_URL is not rediss://');
  }
  let tls: RedisOptions['tls'];
  if (tlsOn) {
    tls = {};
    if (cfg.ISLET_REDIS_CA_FILE) {
      try {
        tls.ca = readFileSync(cfg.ISLET_REDIS_CA_FILE, 'utf8');
      } catch (err) {
        throw new RedisConfigError(
          `ISLET_REDIS_CA_FILE: cannot read ${cfg.ISLET_REDIS_CA_FILE}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
      }
    }
    // Verify the name the client dialled (sentinel mode: the address the sentinels report).
    if (mode === 'standalone') tls.servername = url.hostname;
  }
  const password = cfg.ISLET_REDIS_PASSWORD ?? (url.password ? decodeURIComponent(url.password) : undefined);
  const username = url.username ? decodeURIComponent(url.username) : undefined;
  const dbText = url.pathname.replace(/^\//, '');
  const db = dbText ? Number(dbText) : 0;
  if (!Number.isInteger(db) || db < 0)
    throw new RedisConfigError(`ISLET_REDIS_URL: bad database "${dbText}"`);
  const common: RedisOptions = {
    ...(password !== undefined ? { password } : {}),
    ...(username !== undefined ? { username } : {}),
    db,
    ...(tls ? { tls } : {}),
  };
  if (mode === 'sentinel') {
    if (!cfg.ISLET_REDIS_SENTINELS) {
      throw new RedisConfigError('ISLET_REDIS_MODE=sentinel needs ISLET_REDIS_SENTINELS (host:port,…)');
    }
    return {
      ...common,
      sentinels: parseSentinels(cfg.ISLET_REDIS_SENTINELS),
      name: cfg.ISLET_REDIS_SENTINEL_MASTER ?? 'mymaster',
      // Sentinels speak plain TCP unless configured otherwise; the data nodes get `tls`.
      ...(tls ? { enableTLSForSentinelMode: true } : {}),
      // After a failover the old master may come back as a replica: a READONLY reply means
      // "ask the sentinels again", not an error for the caller.
      reconnectOnError: (err) => err.message.startsWith('READONLY'),
      sentinelRetryStrategy: (times) => Math.min(100 * times, 2000),
    };
  }
  return {
    ...common,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : 6379,
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  };
}

/** A short description for logs (never the password). */
export function describeRedis(target: RedisTarget): string {
  const cfg: RedisConfig = typeof target === 'string' ? { ISLET_REDIS_URL: target } : target;
  const mode = cfg.ISLET_REDIS_MODE ?? 'standalone';
  if (mode === 'sentinel') {
    return `sentinel ${cfg.ISLET_REDIS_SENTINEL_MASTER ?? 'mymaster'} via ${cfg.ISLET_REDIS_SENTINELS ?? ''}`;
  }
  try {
    const u = new URL(cfg.ISLET_REDIS_URL);
    return `${mode} ${u.protocol}//${u.host}`;
  } catch {
    return mode;
  }
}
