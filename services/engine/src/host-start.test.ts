/**
 * A sandbox host's start: what it loads before its `ready`. The engine names isolated-vm's addon on
 * the host's command line and the host opens it itself (no isolated-vm.js, no node-gyp-build); the
 * host takes Node's builtins without their ES module facades (no fs/promises, readline or the REPL's
 * history behind node:fs's getters). Each cost the start CPU (test/bench/README.md, round 39
 * `host-start`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOST_ADDON_ARG, isolatedVmAddon } from './host-addon.ts';
import { HOST_SCRIPT } from './host-process.ts';
import { createEngine } from './index.ts';

const dir = mkdtempSync(join(tmpdir(), 'islet-host-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A CommonJS preload (no ES module facade of its own) that reports what the process loaded, at exit. */
const PRELOAD = join(dir, 'loaded.cjs');
writeFileSync(
  PRELOAD,
  `process.on('exit', () => require('node:fs').writeSync(2, '\\nLOADED ' + JSON.stringify({
  builtins: process.moduleLoadList, commonjs: Object.keys(require.cache) }) + '\\n'));\n`,
);

interface Started {
  stderr: string;
  loaded: { builtins: string[]; commonjs: string[] };
}

/** Starts the host script with `args` after it, waits for its `ready`, ends its input (it exits). */
function startHost(args: string[]): Promise<Started> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--no-node-snapshot', `--require=${PRELOAD}`, HOST_SCRIPT, ...args],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('latin1');
      if (stdout.includes('"t":"ready"')) child.stdin.end();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 || !stdout.includes('"t":"ready"')) {
        reject(new Error(`host exited ${code} before ready: ${stderr}`));
        return;
      }
      const line = stderr.split('\n').find((l) => l.startsWith('LOADED '));
      resolve({ stderr, loaded: JSON.parse(line!.slice('LOADED '.length)) });
    });
  });
}

describe("a sandbox host's start", () => {
  it('is given isolated-vm’s addon by the engine and opens it itself', async () => {
    const addon = isolatedVmAddon();
    expect(addon).toMatch(/isolated-vm.*\.node$/);
    const engine = createEngine({ prewarm: false });
    try {
      const out = await engine.execute('return [1, 2].map((n) => n * 3)');
      expect(out.valueJson).toBe('[3,6]');
      const cmdline = readFileSync(`/proc/${out.hostPid}/cmdline`, 'utf8').split('\0');
      expect(cmdline.slice(cmdline.indexOf(HOST_SCRIPT) + 1, -1)).toEqual([HOST_ADDON_ARG, addon]);
      expect(readFileSync(`/proc/${out.hostPid}/maps`, 'utf8')).toContain(addon);
    } finally {
      await engine.close();
    }
  });

  it('loads neither isolated-vm.js nor node-gyp-build, nor node:fs’s facade’s fs/promises', async () => {
    const { loaded, stderr } = await startHost([HOST_ADDON_ARG, isolatedVmAddon()!]);
    expect(stderr).not.toContain('islet host:');
    expect(loaded.commonjs.filter((f) => !f.endsWith('loaded.cjs'))).toEqual([]);
    expect(loaded.builtins).not.toContain('NativeModule internal/fs/promises');
    expect(loaded.builtins).not.toContain('NativeModule internal/readline/interface');
  });

  it('imports the package as before without the argument, or when the named file cannot be opened', async () => {
    const plain = await startHost([]);
    expect(plain.loaded.commonjs.some((f) => f.endsWith(join('isolated-vm', 'isolated-vm.js')))).toBe(true);
    const wrong = await startHost([HOST_ADDON_ARG, join(dir, 'missing.node')]);
    expect(wrong.stderr).toContain('islet host: could not open the isolated-vm addon');
    expect(wrong.loaded.commonjs.some((f) => f.endsWith(join('isolated-vm', 'isolated-vm.js')))).toBe(true);
  });
});
