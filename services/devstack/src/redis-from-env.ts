/**
 * `npm start` against an existing Redis: the same variables every service reads (ISLET_REDIS_URL,
 * ISLET_REDIS_MODE, the sentinel or cluster seeds, ISLET_REDIS_PASSWORD, ISLET_REDIS_CA_FILE, and
 * any other ISLET_REDIS_* knob), so a stack that works here works with the same configuration in a
 * pod. Every ISLET_REDIS_* variable is taken, not a fixed list: a knob added to the services'
 * schema reaches the children without a change here.
 */
import { type RedisConfig, redisConfigProblems, resolveSecretFiles, SECRET_VARIABLES } from '@islet/core';

const PREFIX = 'ISLET_REDIS_';

/** The Redis variables of `env` that are secrets (their `_FILE` form is resolved here). */
const REDIS_SECRETS = SECRET_VARIABLES.filter((n) => n.startsWith(PREFIX));

interface RedisFromEnv {
  /** undefined: ISLET_REDIS_URL is not set, the stack starts its own standalone Redis. */
  config: RedisConfig | undefined;
  problems: string[];
}

export function devRedisConfigFromEnv(env: Record<string, string | undefined>): RedisFromEnv {
  const resolved = resolveSecretFiles(env, REDIS_SECRETS);
  if (resolved.problems.length > 0) return { config: undefined, problems: resolved.problems };
  const url = resolved.env.ISLET_REDIS_URL;
  if (!url) {
    // A mode or password without a URL would silently be ignored: say so instead.
    const stray = Object.keys(resolved.env).filter(
      (k) => k.startsWith(PREFIX) && resolved.env[k] && k !== 'ISLET_REDIS_DURABILITY_CHECK',
    );
    return {
      config: undefined,
      problems: stray.length
        ? [`${stray.join(', ')} set without ISLET_REDIS_URL (the embedded Redis takes no configuration)`]
        : [],
    };
  }
  const picked: Record<string, string> = {};
  for (const [k, v] of Object.entries(resolved.env)) if (k.startsWith(PREFIX) && v) picked[k] = v;
  const config = { ...picked, ISLET_REDIS_URL: url } as RedisConfig;
  return { config, problems: redisConfigProblems(config) };
}
