/**
 * The environment the local cluster's children (cluster.ts) get: secrets only as files, nothing
 * secret and no other Redis configuration inherited.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SECRET_VARIABLES } from '@islet/core';

/**
 * Writes each secret of `env` into a 0600 file of `dir` (0700) and returns the environment with
 * `X_FILE` in place of `X`: what a process shows in /proc/<pid>/environ holds no secret.
 */
export function secretsToFiles(env: Record<string, string>, dir: string): Record<string, string> {
  const out: Record<string, string> = { ...env };
  for (const name of SECRET_VARIABLES) {
    const value = out[name];
    if (value === undefined) continue;
    const file = join(dir, name.toLowerCase());
    writeFileSync(file, value, { mode: 0o600 });
    delete out[name];
    out[`${name}_FILE`] = file;
  }
  return out;
}

/**
 * This process's environment without any secret (nor its `_FILE`) and without any ISLET_REDIS_*
 * variable (the stack's Redis configuration is the only one its children see: an inherited
 * ISLET_REDIS_MODE=cluster must not meet the stack's own standalone Redis): the children's base.
 */
export function inheritedEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  const secret = new Set<string>(SECRET_VARIABLES.flatMap((n) => [n, `${n}_FILE`]));
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !secret.has(k) && !k.startsWith('ISLET_REDIS_')) out[k] = v;
  return out;
}
