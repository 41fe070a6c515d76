/**
 * Every status change goes through run-lifecycle.ts: no product source outside it moves a run's
 * status with the store's or the journal's own methods.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SERVICES = fileURLToPath(new URL('../../', import.meta.url));
const LIFECYCLE = join(SERVICES, 'runs/src/run-lifecycle.ts');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? e.name === 'node_modules'
        ? []
        : sources(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

/** A status change made behind the lifecycle's back. */
const DIRECT = /\b(?:runs|deps\.runs)\.(?:setStatus|finish|create)\(|\bjournal\.beginAttempt\(/;

describe('run-lifecycle is the only way a status changes', () => {
  it('no gateway, runner or mcp source calls setStatus, finish, create or beginAttempt directly', () => {
    const files = ['gateway', 'runner', 'mcp', 'runs'].flatMap((s) => sources(join(SERVICES, s, 'src')));
    expect(files.length).toBeGreaterThan(50);
    const offenders = files
      .filter((f) => f !== LIFECYCLE)
      .filter((f) => DIRECT.test(readFileSync(f, 'utf8')))
      .map((f) => f.slice(SERVICES.length));
    expect(offenders).toEqual([]);
  });

  it('would catch one', () => {
    expect(DIRECT.test("await runs.setStatus(run, 'Waiting');")).toBe(true);
    expect(DIRECT.test('await lifecycle.suspend(run);')).toBe(false);
  });
});
