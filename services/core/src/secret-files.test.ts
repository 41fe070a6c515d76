import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';
import { generateSealKey } from './sealer.ts';
import { resolveSecretFiles, SECRET_VARIABLES, scrubSecretEnv } from './secret-files.ts';

const dir = mkdtempSync(join(tmpdir(), 'islet-secret-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const seal = generateSealKey('k1');
const token = 'internal-token-0123456789';

/** A Kubernetes Secret volume: files are symlinks through ..data to a timestamped directory. */
function secretVolume(values: Record<string, string>): string {
  const vol = mkdtempSync(join(dir, 'vol-'));
  const stamp = join(vol, '..2026_11_30_17_00_00.000');
  mkdirSync(stamp);
  for (const [k, v] of Object.entries(values)) writeFileSync(join(stamp, k), v, { mode: 0o600 });
  symlinkSync('..2026_11_30_17_00_00.000', join(vol, '..data'));
  for (const k of Object.keys(values)) symlinkSync(join('..data', k), join(vol, k));
  return vol;
}

describe('secrets from files (X_FILE)', () => {
  it('reads every secret from a mounted Secret volume, trimmed, and never keeps the _FILE form', () => {
    const vol = secretVolume({
      'seal-keys': `${seal}\n`,
      'internal-token': `  ${token}\n`,
      'journal-args-key': 'journal-key-0123456789\n',
      'redis-url': 'redis://:s3cret@127.0.0.1:6390\n',
    });
    const config = loadConfig({
      ISLET_SEAL_KEYS_FILE: join(vol, 'seal-keys'),
      ISLET_INTERNAL_TOKEN_FILE: join(vol, 'internal-token'),
      ISLET_JOURNAL_ARGS_KEY_FILE: join(vol, 'journal-args-key'),
      ISLET_REDIS_URL_FILE: join(vol, 'redis-url'),
    });
    expect(config.ISLET_SEAL_KEYS).toBe(seal);
    expect(config.ISLET_INTERNAL_TOKEN).toBe(token);
    expect(config.ISLET_JOURNAL_ARGS_KEY).toBe('journal-key-0123456789');
    expect(config.ISLET_REDIS_URL).toBe('redis://:s3cret@127.0.0.1:6390');
    expect(Object.keys(config).some((k) => k.endsWith('_FILE'))).toBe(false);
  });

  it('refuses both forms, a missing file and an empty file, listing every problem at once', () => {
    const empty = join(dir, 'empty');
    writeFileSync(empty, ' \n');
    let error: unknown;
    try {
      loadConfig({
        ISLET_SEAL_KEYS: seal,
        ISLET_SEAL_KEYS_FILE: join(dir, 'whatever'),
        ISLET_INTERNAL_TOKEN_FILE: join(dir, 'missing'),
        ISLET_JOURNAL_ARGS_KEY_FILE: empty,
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(
      'ISLET_SEAL_KEYS: set either ISLET_SEAL_KEYS or ISLET_SEAL_KEYS_FILE, not both',
    );
    expect(message).toContain(`ISLET_INTERNAL_TOKEN_FILE: cannot read ${join(dir, 'missing')}: ENOENT`);
    expect(message).toContain(`ISLET_JOURNAL_ARGS_KEY_FILE: ${empty} is empty`);
    // The secret values never appear in the error.
    expect(message).not.toContain(seal.split(':')[1]);
  });

  it('the plain variable still works; an empty _FILE is unset', () => {
    const r = resolveSecretFiles({ ISLET_INTERNAL_TOKEN: token, ISLET_INTERNAL_TOKEN_FILE: '' });
    expect(r).toEqual({ env: { ISLET_INTERNAL_TOKEN: token }, problems: [] });
  });

  it('scrubSecretEnv removes every secret and its _FILE form and nothing else', () => {
    const env: Record<string, string | undefined> = { ISLET_PORT: '1', PATH: '/bin' };
    for (const n of SECRET_VARIABLES) {
      env[n] = 'x';
      env[`${n}_FILE`] = '/f';
    }
    scrubSecretEnv(env);
    expect(env).toEqual({ ISLET_PORT: '1', PATH: '/bin' });
  });
});
