import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildHost, builtHostScript } from './host-build.ts';
import { HOST_SCRIPT } from './host-process.ts';
import { createEngine } from './index.ts';
import { HOST_SEMI_SPACE_MB } from './limits.ts';

const PACKAGE = fileURLToPath(new URL('../', import.meta.url));
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A copy of the engine package's sources, to build and change without touching this checkout. */
function copyPackage(): string {
  const dir = mkdtempSync(join(tmpdir(), 'islet-host-build-'));
  dirs.push(dir);
  cpSync(join(PACKAGE, 'src'), join(dir, 'src'), { recursive: true });
  cpSync(join(PACKAGE, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(PACKAGE, '..', '..', 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

describe('the sandbox host built as plain JavaScript', () => {
  it('is what the engine starts (scripts/toolchain.sh builds it), and it runs programs', async () => {
    expect(HOST_SCRIPT).toBe(builtHostScript());
    expect(HOST_SCRIPT.endsWith(join('dist', 'host', 'host.js'))).toBe(true);
    const engine = createEngine({ prewarm: false });
    try {
      const out = await engine.execute('console.log("hi"); return [1, 2].map((n) => n * 2)');
      expect(out.status).toBe('completed');
      expect(out.valueJson).toBe('[2,4]');
      expect(out.logs).toEqual([{ level: 'log', text: 'hi' }]);
      // The host process runs the .js file, so Node never loads its TypeScript stripper there.
      const cmdline = readFileSync(`/proc/${out.hostPid}/cmdline`, 'utf8').split('\0');
      expect(cmdline).toContain(HOST_SCRIPT);
      // Its young generation is capped: without it the host grew ~4 MB within its first runs.
      expect(cmdline).toContain(`--max-semi-space-size=${HOST_SEMI_SPACE_MB}`);
    } finally {
      await engine.close();
    }
  });

  it('is the sources with their types erased, nothing else, and a changed source makes it stale', () => {
    const dir = copyPackage();
    const root = pathToFileURL(`${dir}/`);
    expect(builtHostScript(root)).toBeUndefined();
    expect(buildHost(root)).toBe(true);
    expect(buildHost(root)).toBe(false); // current: nothing to do
    const script = builtHostScript(root);
    expect(script).toBe(join(dir, 'dist', 'host', 'host.js'));
    for (const name of ['host', 'frame', 'limits', 'utf8']) {
      const ts = readFileSync(join(dir, 'src', `${name}.ts`), 'utf8');
      const js = readFileSync(join(dir, 'dist', 'host', `${name}.js`), 'utf8');
      expect(js).toBe(
        stripTypeScriptTypes(ts, { mode: 'strip' }).replace(/(from\s+'\.\/[\w-]+)\.ts'/g, "$1.js'"),
      );
      expect(js).not.toMatch(/from\s+'\.\/[\w-]+\.ts'/);
    }
    expect(readFileSync(join(dir, 'dist', 'host', 'guest', 'harness.js'), 'utf8')).toBe(
      readFileSync(join(dir, 'src', 'guest', 'harness.js'), 'utf8'),
    );
    // The built host loads and answers the handshake as the source does.
    const started = spawnSync(process.execPath, ['--no-node-snapshot', script!], {
      input: '',
      timeout: 30_000,
    });
    expect(started.status).toBe(0);
    expect(started.stdout.subarray(5).toString('utf8')).toMatch(/^\{"t":"ready","pid":\d+\}/);
    // Any change to a source the host loads (the harness too) makes the build stale: never run.
    appendFileSync(join(dir, 'src', 'guest', 'harness.js'), '\n');
    expect(builtHostScript(root)).toBeUndefined();
    expect(buildHost(root)).toBe(true);
    expect(builtHostScript(root)).toBe(script);
    appendFileSync(join(dir, 'src', 'limits.ts'), '\n');
    expect(builtHostScript(root)).toBeUndefined();
  });
});
