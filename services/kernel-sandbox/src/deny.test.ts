/**
 * `--deny` (JailOptions.denyPaths, protectPaths): the service's secret files stay out of reach of
 * every mode, danger-full-access included, even where file permissions would let the sandbox in
 * (in a pod the sandbox shares the runner's uid; here the files are world-readable to model that).
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SANDBOX_MODES } from '@islet/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { makeLayout, runJailed } from '../test/test-helpers.ts';
import { jailArgs, protectPaths } from './jail.ts';

const layout = makeLayout('islet-deny-');
afterAll(() => layout.cleanup());
const secrets = join(layout.outside, 'secrets');
mkdirSync(secrets, { mode: 0o755 });
chmodSync(secrets, 0o755);
const keyFile = join(secrets, 'ISLET_SEAL_KEYS');
writeFileSync(keyFile, 'k1:c2VjcmV0LXNlYWwta2V5\n', { mode: 0o644 });

const cat = (mode: (typeof SANDBOX_MODES)[number], denyPaths: string[]) =>
  runJailed(
    mode,
    { require: 'full', readPaths: [], workspaceRoot: layout.root, workspaceDir: layout.ws, denyPaths },
    ['/bin/cat', keyFile],
  );

describe('islet-jail --deny', () => {
  it('danger-full-access reads the file without --deny (the control) and not with it', () => {
    const open = cat('danger-full-access', []);
    expect(open.status).toBe(0);
    expect(open.stdout).toContain('c2VjcmV0LXNlYWwta2V5');
    const walled = cat('danger-full-access', [secrets]);
    expect(walled.report?.enforcement).toBe('full');
    expect(walled.status).not.toBe(0);
    expect(walled.stdout).toBe('');
    expect(walled.stderr).toMatch(/Permission denied/);
  });

  it.each(['read-only', 'workspace-write'] as const)('%s never reaches it', (mode) => {
    const res = cat(mode, [secrets]);
    expect(res.report?.enforcement).toBe('full');
    expect(res.stdout).toBe('');
  });

  it('refuses (sandbox-unavailable) a --deny path under a granted one, e.g. /etc', () => {
    const res = runJailed('read-only', { require: 'full', readPaths: [], denyPaths: ['/etc/ssl'] }, [
      '/bin/true',
    ]);
    expect(res.status).toBe(78);
    expect(res.stderr).toContain('refused: --deny /etc/ssl lies under the granted /etc');
  });

  // Dropping Landlock for such a launch (partial) would expose the secrets and every other file.
  it.each([
    ['a system path', { readPaths: [], denyPaths: [join('/etc', 'ssl')] }, '/etc'],
    ['a --read grant', { readPaths: [layout.outside], denyPaths: [secrets] }, layout.outside],
    ['the workspace', { readPaths: [], workspaceDir: layout.outside, denyPaths: [secrets] }, layout.outside],
  ])('refuses contradictory grants (%s) even when full enforcement is not required', (_, opts, grant) => {
    for (const mode of ['read-only', 'danger-full-access'] as const) {
      const res = runJailed(mode, { require: 'none', workspaceRoot: layout.root, ...opts }, [
        '/bin/cat',
        keyFile,
      ]);
      expect(res.status).toBe(78);
      expect(res.stdout).toBe('');
      expect(res.stderr).toContain(`lies under the granted ${grant}`);
      expect(res.report).toMatchObject({ enforcement: 'partial', missing: ['landlock'] });
    }
  });

  it('protectPaths registers paths every later launch denies', () => {
    protectPaths(['/var/run/secrets/islet']);
    const args = jailArgs('danger-full-access', { readPaths: [] });
    expect(args.slice(args.indexOf('--deny'), args.indexOf('--deny') + 2)).toEqual([
      '--deny',
      '/var/run/secrets/islet',
    ]);
  });
});
