/**
 * Every Redis connection of every service is built here from one configuration, so a process
 * cannot end up on a different Redis (or a different topology) than its peers.
 *
 * - `standalone`: `ISLET_REDIS_URL` names the server (`redis://` or `rediss://` for TLS).
 * - `sentinel`: `ISLET_REDIS_SENTINELS` lists the sentinels (`host:port,host:port,…`) and
 *   `ISLET_REDIS_SENTINEL_MASTER` the master group; ioredis asks them for the current master and
 *   follows a failover. The URL still gives the scheme (`rediss://` = TLS to the data nodes), the
 *   password and the database; its host is not used.
 * - `cluster`: `ISLET_REDIS_URL` lists seed nodes, comma-separated, each `redis://host:port`,
 *   `rediss://host:port` or bare `host:port` (e.g. `rediss://:pw@10.0.0.1:6379,10.0.0.2:6379`). A
 *   few masters are enough: the client learns the rest from `CLUSTER SLOTS` and follows slot moves
 *   and failovers. `rediss://` on any seed means TLS to every node (mixing schemes is refused);
 *   the password may sit in a seed URL; only database 0 exists. Every key layout Islet writes is
 *   slot-safe (keys.ts), so the same code runs on all three modes.
 *
 * The password comes from the URL or from `ISLET_REDIS_PASSWORD` (a secret: give it as
 * `ISLET_REDIS_PASSWORD_FILE`); the CA that verifies a `rediss://` server from `ISLET_REDIS_CA_FILE`.
 */
import { readFileSync } from 'node:fs';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import { z } from 'zod';
import { resolveSecretFiles } from './secret-files.ts';

export const REDIS_MODES = ['standalone', 'sentinel', 'cluster'] as const;
export type RedisMode = (typeof REDIS_MODES)[number];

const optional = z
  .string()
  .optional()
  .transform((s) => (s ? s : undefined));

/** The Redis part of a service's configuration schema (gateway, runner and operator share it). */
export const redisConfigShape = {
  /** standalone/sentinel: one `redis[s]://` URL; cluster: seeds, comma-separated (checked below). */
  ISLET_REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379'),
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
    if ((cfg.ISLET_REDIS_MODE ?? 'standalone') === 'cluster') redisClusterFor(cfg);
    else redisOptionsFor(cfg);
    return [];
  } catch (err) {
    return [(err as Error).message];
  }
}

/**
 * The Redis part of a configuration from an environment (secret `_FILE` variables resolved), for
 * tools that do not load a whole service configuration (the CLI). Throws RedisConfigError.
 */
export function redisConfigFromEnv(env: Record<string, string | undefined>): RedisConfig {
  const resolved = resolveSecretFiles(env, ['ISLET_REDIS_PASSWORD']);
  const parsed = z.object(redisConfigShape).safeParse(resolved.env);
  const problems = [
    ...resolved.problems,
    ...(parsed.success
      ? redisConfigProblems(parsed.data)
      : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)),
  ];
  if (!parsed.success || problems.length > 0) throw new RedisConfigError(problems.join('; '));
  return parsed.data;
}

function tlsOptions(cfg: RedisConfig, tlsOn: boolean): RedisOptions['tls'] {
  if (cfg.ISLET_REDIS_CA_FILE && !tlsOn) {
    throw new RedisConfigError('ISLET_REDIS_CA_FILE is set but ISLET_REDIS_URL is not rediss://');
  }
  if (!tlsOn) return undefined;
  const tls: NonNullable<RedisOptions['tls']> = {};
  if (cfg.ISLET_REDIS_CA_FILE) {
    try {
      tls.ca = readFileSync(cfg.ISLET_REDIS_CA_FILE, 'utf8');
    } catch (err) {
      throw new RedisConfigError(
        `ISLET_REDIS_CA_FILE: cannot read ${cfg.ISLET_REDIS_CA_FILE}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }
  return tls;
}

function parseUrl(text: string, what = 'ISLET_REDIS_URL'): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RedisConfigError(`${what}: not a URL`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new RedisConfigError(`${what}: scheme must be redis:// or rediss://, not ${url.protocol}//`);
  }
  return url;
}

function credentials(cfg: RedisConfig, url: URL | undefined): Pick<RedisOptions, 'password' | 'username'> {
  const password = cfg.ISLET_REDIS_PASSWORD ?? (url?.password ? decodeURIComponent(url.password) : undefined);
  const username = url?.username ? decodeURIComponent(url.username) : undefined;
  return {
    ...(password !== undefined ? { password } : {}),
    ...(username !== undefined ? { username } : {}),
  };
}

/** Cluster mode: the seed nodes and the ioredis Cluster options (per-node options in `redisOptions`). */
export function redisClusterFor(target: RedisConfig): {
  nodes: { host: string; port: number }[];
  options: ClusterOptions & { redisOptions: RedisOptions };
} {
  const entries = target.ISLET_REDIS_URL.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new RedisConfigError('ISLET_REDIS_URL: no cluster seed nodes');
  const urls: URL[] = [];
  const nodes = entries.map((entry) => {
    if (entry.includes('://')) {
      const url = parseUrl(entry, `ISLET_REDIS_URL seed "${entry}"`);
      if (!url.port) throw new RedisConfigError(`ISLET_REDIS_URL seed "${entry}": needs a port`);
      const db = url.pathname.replace(/^\//, '');
      if (db && db !== '0')
        throw new RedisConfigError(`ISLET_REDIS_URL seed "${entry}": Redis Cluster has only database 0`);
      urls.push(url);
      return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) };
    }
    const m = /^(\[[^\]]+\]|[^:/@]+):(\d{1,5})$/.exec(entry);
    const port = Number(m?.[2]);
    if (!m?.[1] || !(port >= 1 && port <= 65535)) {
      throw new RedisConfigError(
        `ISLET_REDIS_URL seed "${entry}": not host:port, redis://host:port or rediss://host:port`,
      );
    }
    return { host: m[1].replace(/^\[|\]$/g, ''), port };
  });
  const schemes = new Set(urls.map((u) => u.protocol));
  if (schemes.size > 1)
    throw new RedisConfigError('ISLET_REDIS_URL: seeds mix redis:// and rediss:// (TLS is all or nothing)');
  const passwords = new Set(urls.filter((u) => u.password).map((u) => u.password));
  if (passwords.size > 1)
    throw new RedisConfigError('ISLET_REDIS_URL: seeds carry different passwords (a cluster has one)');
  const withCredentials = urls.find((u) => u.password || u.username);
  const tls = tlsOptions(target, schemes.has('rediss:'));
  return {
    nodes,
    options: {
      redisOptions: { ...credentials(target, withCredentials), ...(tls ? { tls } : {}) },
      // Keep the node's host name for TLS verification instead of resolving it first (the
      // certificate names the host; managed clusters announce names, not addresses).
      ...(tls
        ? { dnsLookup: (address: string, done: (e: null, a: string) => void) => done(null, address) }
        : {}),
      // Commands wait in the offline queue while the client (re)learns the slots after a failover
      // (BullMQ needs this); the cluster is re-dialled for ever, at most every 2 s.
      enableOfflineQueue: true,
      // No CLUSTER INFO ready check: when it sees `cluster_state:fail` (the minutes of a failover)
      // ioredis reconnects from inside connect() and that connect()'s promise never settles;
      // BullMQ awaits it when it re-dials its blocking client, and an idle worker then never
      // fetches again. Without the check connect() always settles, and a command sent while the
      // cluster is down gets CLUSTERDOWN, which is retried below.
      enableReadyCheck: false,
      clusterRetryStrategy: (times: number) => Math.min(100 * times, 2000),
      // Reads go to masters: a run's state is read right after it is written.
      scaleReads: 'master',
      // A loaded node answers CLUSTER SLOTS slowly; do not give up on the topology after 1 s.
      slotsRefreshTimeout: 2000,
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 100,
    },
  };
}

/**
 * The ioredis options (no URL: everything is in the options) for a standalone or sentinel
 * configuration; cluster mode is `redisClusterFor`.
 */
export function redisOptionsFor(target: RedisTarget): RedisOptions {
  const cfg: RedisConfig = typeof target === 'string' ? { ISLET_REDIS_URL: target } : target;
  const mode = cfg.ISLET_REDIS_MODE ?? 'standalone';
  if (mode === 'cluster') {
    throw new RedisConfigError('ISLET_REDIS_MODE=cluster: build the connection with redisClusterFor');
  }
  const url = parseUrl(cfg.ISLET_REDIS_URL);
  const tls = tlsOptions(cfg, url.protocol === 'rediss:');
  // Verify the name the client dialled (sentinel mode: the address the sentinels report).
  if (tls && mode === 'standalone') tls.servername = url.hostname;
  const dbText = url.pathname.replace(/^\//, '');
  const db = dbText ? Number(dbText) : 0;
  if (!Number.isInteger(db) || db < 0)
    throw new RedisConfigError(`ISLET_REDIS_URL: bad database "${dbText}"`);
  const common: RedisOptions = {
    ...credentials(cfg, url),
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
  if (mode === 'cluster') {
    try {
      const { nodes, options } = redisClusterFor(cfg);
      return `cluster${options.redisOptions.tls ? ' (TLS)' : ''} via ${nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
    } catch {
      return mode;
    }
  }
  try {
    const u = new URL(cfg.ISLET_REDIS_URL);
    return `${mode} ${u.protocol}//${u.host}`;
  } catch {
    return mode;
  }
}
