/**
 * 2b: the sandbox runs wherever Islet is installed. A copy of the application under a 0700
 * directory (root's home, `mktemp -d`) is what the per-run uid cannot traverse; the runtime
 * installed from it must run jailed programs and skills, and start-up must name what blocks it.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, HOST_SCRIPT } from '@islet/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireRoot } from '../test/test-helpers.ts';
import { wrapCommandForMode } from './jail.ts';
import {
  APP_ROOT,
  RUNTIME_TREES,
  SandboxRuntimeError,
  sandboxRuntime,
  unreachableComponent,
} from './runtime.ts';
import { runSkill } from './skill-runner.ts';

let base: string;
let privateDir: string;
let app: string;
let node: string;
let runtimeBase: string;

beforeAll(() => {
  requireRoot('the per-run uid test');
  base = mkdtempSync(join(tmpdir(), 'islet-runtime-test-'));
  chmodSync(base, 0o755);
  // The clone: under a 0700 directory, hard-linked from this checkout (cheap; the inodes keep
  // their modes, only the directory above is closed, as in a clone under /root).
  privateDir = join(base, 'home');
  mkdirSync(privateDir, { mode: 0o700 });
  app = join(privateDir, 'islet');
  for (const tree of RUNTIME_TREES) {
    mkdirSync(join(app, tree, '..'), { recursive: true });
    const r = spawnSync('cp', ['-al', join(APP_ROOT, tree), join(app, tree)]);
    if (r.status !== 0) throw new Error(`cp ${tree}: ${r.stderr}`);
  }
  mkdirSync(join(privateDir, 'node', 'bin'), { recursive: true });
  node = join(privateDir, 'node', 'bin', 'node');
  spawnSync('cp', ['-l', process.execPath, node]);
  runtimeBase = join(base, 'runtime');
  mkdirSync(runtimeBase, { mode: 0o755 });
});

afterAll(() => {
  if (base) rmSync(base, { recursive: true, force: true });
});

/** The engine's host, started from the 0700 clone instead of this checkout (its isolated-vm addon too). */
const fromClone = (wrap: ReturnType<typeof wrapCommandForMode>) => (command: string, args: string[]) =>
  wrap(
    command === process.execPath ? node : command,
    args.map((a) =>
      a === HOST_SCRIPT
        ? join(app, 'services/engine/src/host.ts')
        : a.startsWith(`${APP_ROOT}/node_modules/`)
          ? join(app, a.slice(APP_ROOT.length + 1))
          : a,
    ),
  );

describe('sandbox runtime from a clone under a 0700 directory', () => {
  it('reproduces the failure in place: the per-run uid cannot execute the clone’s node', async () => {
    expect(unreachableComponent(node, 'exec')).toBe(
      `${privateDir} (mode 0700: not traversable by other users)`,
    );
    const inPlace = sandboxRuntime({ appRoot: app, node, baseDir: runtimeBase, forceInstall: false });
    // As root with a blocked path the runtime is installed, never used in place.
    expect(inPlace.installed).toBe(true);
    const unmapped = {
      dir: app,
      installed: false,
      node,
      readPaths: [app, join(privateDir, 'node')],
      map: (p: string) => p,
    };
    const engine = createEngine({
      wrapCommand: fromClone(wrapCommandForMode('read-only', { runtime: unmapped })),
    });
    try {
      const out = await engine.execute('return 1');
      expect(out.status).toBe('failed');
      expect(out.failure?.kind).toBe('sandbox-unavailable');
      expect(out.failure?.message).toMatch(/Permission denied/);
    } finally {
      await engine.close();
    }
  });

  it('installs a root-owned, world-readable runtime and runs a jailed program and a javascript skill from it', async () => {
    const runtime = sandboxRuntime({ appRoot: app, node, baseDir: runtimeBase });
    expect(runtime.installed).toBe(true);
    expect(runtime.dir.startsWith(`${runtimeBase}/`)).toBe(true);
    expect(unreachableComponent(runtime.node, 'exec')).toBeUndefined();
    for (const p of [runtime.dir, runtime.node, join(runtime.dir, 'app/services/engine/src/host.ts')]) {
      const st = statSync(p);
      expect(st.uid).toBe(0);
      expect(st.mode & 0o022).toBe(0); // only root writes
    }
    // Test files are not part of the runtime.
    expect(() => statSync(join(runtime.dir, 'app/services/engine/src/engine.test.ts'))).toThrow();
    // Same sources, same folder: a second runner reuses the install.
    expect(sandboxRuntime({ appRoot: app, node, baseDir: runtimeBase, forceInstall: true }).dir).toBe(
      runtime.dir,
    );

    const engine = createEngine({
      wrapCommand: fromClone(wrapCommandForMode('read-only', { runtime, require: 'full' })),
    });
    try {
      const out = await engine.execute('console.log("from the runtime"); return 6 * 7;');
      expect(out.failure).toBeUndefined();
      expect(out.valueJson).toBe('42');
      expect(out.logs).toEqual([{ level: 'log', text: 'from the runtime' }]);
    } finally {
      await engine.close();
    }
    const skill = await runSkill({
      language: 'javascript',
      code: 'console.log(process.execPath, process.getuid() !== 0)',
      mode: 'read-only',
      runtime,
      requireFull: true,
    });
    expect(skill).toEqual({
      success: true,
      output: `${runtime.node} true\n`,
      error: '',
      exitCode: 0,
      language: 'javascript',
    });
  });

  it('refuses at start-up, naming the path, when the runtime folder is not root’s alone', () => {
    const shared = join(base, 'shared');
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o777);
    expect(() => sandboxRuntime({ appRoot: app, node, baseDir: join(shared, 'rt') })).toThrow(
      SandboxRuntimeError,
    );
    expect(() => sandboxRuntime({ appRoot: app, node, baseDir: join(shared, 'rt') })).toThrow(
      `${shared} is writable by users other than root`,
    );
    const foreign = join(base, 'foreign');
    mkdirSync(foreign, { mode: 0o755 });
    chownSync(foreign, 1234, 1234);
    expect(() => sandboxRuntime({ appRoot: app, node, baseDir: foreign })).toThrow(
      `the sandbox runtime is not reachable by the sandbox uid (${privateDir} (mode 0700: not traversable by other users)) and could not be installed under ${foreign}: the sandbox runtime directory is not safe: ${foreign} is owned by uid 1234, not root`,
    );
  });
});
