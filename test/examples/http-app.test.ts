/**
 * The example App's own tests (`npm test` in examples/http-app, node's test runner), run as a
 * newcomer would run them, so the example cannot rot while the gateway's test uses it.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const DIR = join(import.meta.dirname, '../../examples/http-app');

describe('examples/http-app', () => {
  it('passes its own tests', () => {
    const res = spawnSync(process.execPath, ['--test', '--test-reporter=tap', 'test/app.test.ts'], {
      cwd: DIR,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(res.status, `${res.stdout}\n${res.stderr}`).toBe(0);
    expect(res.stdout).toMatch(/# pass [1-9]/);
    expect(res.stdout).toMatch(/# fail 0/);
  });
});
