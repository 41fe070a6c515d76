/**
 * Secrets come from files (a mounted Kubernetes Secret, devstack's private 0600 files), not from
 * the process environment, so that nothing a tenant reaches through `/proc/<pid>/environ` of a
 * process that serves it holds a secret. `X_FILE` names a file whose trimmed content is `X`.
 */
import { readFileSync } from 'node:fs';

/** Every variable that holds a secret in a service's configuration. Each also has an `_FILE` form. */
export const SECRET_VARIABLES = [
  'ISLET_SEAL_KEYS',
  'ISLET_INTERNAL_TOKEN',
  'ISLET_JOURNAL_ARGS_KEY',
  // A Redis URL may carry a password (redis://:password@host:6379).
  'ISLET_REDIS_URL',
  'ISLET_REDIS_PASSWORD',
  'ISLET_DEV_API_KEY',
  // Not secret, but kept beside the keys in the same Kubernetes Secret, so mounted with them.
  'ISLET_SEAL_ACTIVE_KEY_ID',
] as const;

/**
 * Returns `env` with each `X_FILE` replaced by `X` read from that file. Problems (both forms set,
 * an unreadable or empty file) are returned, not thrown, so the caller lists every one at once.
 */
export function resolveSecretFiles(
  env: Record<string, string | undefined>,
  names: readonly string[] = SECRET_VARIABLES,
): { env: Record<string, string | undefined>; problems: string[] } {
  const out: Record<string, string | undefined> = { ...env };
  const problems: string[] = [];
  for (const name of names) {
    const file = env[`${name}_FILE`];
    delete out[`${name}_FILE`];
    if (file === undefined || file === '') continue;
    if (env[name] !== undefined && env[name] !== '') {
      problems.push(`${name}: set either ${name} or ${name}_FILE, not both`);
      continue;
    }
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch (err) {
      problems.push(
        `${name}_FILE: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
      continue;
    }
    if (!text) {
      problems.push(`${name}_FILE: ${file} is empty`);
      continue;
    }
    out[name] = text;
  }
  return { env: out, problems };
}

/** The files the secrets come from (the `_FILE` values in `env`): what a sandbox must never reach. */
export function secretFilePaths(
  env: Record<string, string | undefined> = process.env,
  names: readonly string[] = SECRET_VARIABLES,
): string[] {
  return names.map((n) => env[`${n}_FILE`]).filter((f): f is string => typeof f === 'string' && f !== '');
}

/**
 * Removes every secret variable and its `_FILE` form from `env` (default `process.env`), after the
 * configuration is loaded: children started later inherit nothing, and `/proc/self/environ` of a
 * process started with secrets in its environment no longer shows what Node's copy holds. (The
 * kernel's copy of the initial environment stays; devstack and the chart therefore pass only `_FILE`.)
 */
export function scrubSecretEnv(
  env: Record<string, string | undefined> = process.env,
  names: readonly string[] = SECRET_VARIABLES,
): void {
  for (const name of names) {
    delete env[name];
    delete env[`${name}_FILE`];
  }
}
