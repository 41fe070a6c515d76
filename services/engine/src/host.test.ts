import { execFile, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { childPids, cmdlineOf, environOf, sleep } from '../test/processes.ts';
import { HOST_ADDON_ARG, isolatedVmAddon } from './host-addon.ts';
import { HOST_ENV, HOST_SCRIPT } from './host-process.ts';
import { createEngine, renderResultText } from './index.ts';
import { HOST_SEMI_SPACE_MB } from './limits.ts';
import type { BindingOutcome, Engine, EngineOptions } from './types.ts';

const FAKE_HOST = fileURLToPath(new URL('../test/fake-host.ts', import.meta.url));
const engines: Engine[] = [];
afterAll(() => Promise.all(engines.map((e) => e.close())));

function newEngine(options: EngineOptions = {}): Engine {
  const engine = createEngine({ prewarm: false, ...options });
  engines.push(engine);
  return engine;
}

/** The pid of the host running the program, seen from inside a binding call. */
async function hostPidOf(engine: Engine, partition?: string): Promise<number> {
  const out = await engine.execute('return 1', partition ? { partition } : {});
  expect(out.status).toBe('completed');
  return out.hostPid ?? -1;
}

describe('the sandbox host process', () => {
  it("leaves a program's isolate isolated-vm's young generation, not the host's own small one", () => {
    // The host runs with --max-semi-space-size for its own heap; V8 reads that flag again for every
    // isolate it makes, over isolated-vm's limits (a program building a large live structure ran
    // ~1.5x slower). The host unsets it with releaseHostSemiSpaceFlag before any program's isolate.
    // An isolate's heap limit counts its young generation: 512 MB + 3 x the semi-space here.
    const limits = new URL('./limits.ts', import.meta.url).href;
    const ivmUrl = pathToFileURL(createRequire(import.meta.url).resolve('isolated-vm')).href;
    const script = [
      `import ivm from ${JSON.stringify(ivmUrl)};`,
      `import { releaseHostSemiSpaceFlag } from ${JSON.stringify(limits)};`,
      "if (process.argv[1] === 'release') releaseHostSemiSpaceFlag();",
      'const isolate = new ivm.Isolate({ memoryLimit: 512 });',
      'process.stdout.write(String(isolate.getHeapStatisticsSync().heap_size_limit));',
    ].join('\n');
    const heapLimit = (mode: 'keep' | 'release' | 'no flag') => {
      const flag = mode === 'no flag' ? [] : [`--max-semi-space-size=${HOST_SEMI_SPACE_MB}`];
      const out = spawnSync(
        process.execPath,
        ['--no-node-snapshot', ...flag, '--input-type=module', '-e', script, mode],
        { encoding: 'utf8' },
      );
      expect(out.status, out.stderr).toBe(0);
      return Number(out.stdout);
    };
    const unflagged = heapLimit('no flag');
    expect(heapLimit('release')).toBe(unflagged);
    // Held, the flag shrinks the program's young generation (515 against 536 MB here).
    expect(heapLimit('keep')).toBeLessThan(unflagged - 8 * 1024 * 1024);
  });

  it('leaves nothing of its warm-up isolate to the first run (logs, clock, random, globals)', async () => {
    // The host warms its harness code cache by running a program of its own in a throwaway isolate.
    const probe =
      'console.log("mine"); return { t: Date.now(), d: new Date().getTime(), r: Math.random(), g: typeof globalThis.__warm, keys: Object.keys(globalThis).sort() }';
    const first = await newEngine().execute(probe, { clockMs: 1234, randomSeed: 'seed-1' });
    const again = await newEngine().execute(probe, { clockMs: 1234, randomSeed: 'seed-1' });
    expect(first.status).toBe('completed');
    expect(first.logs).toEqual([{ level: 'log', text: 'mine' }]);
    const value = JSON.parse(first.valueJson ?? 'null') as { t: number; d: number; r: number; g: string };
    expect(value).toMatchObject({ t: 1234, d: 1234, g: 'undefined' });
    expect(first.valueJson).toBe(again.valueJson);
  });

  it('runs isolates in a child process started with --no-node-snapshot and only HOST_ENV for environment', async () => {
    const engine = newEngine();
    const pid = await hostPidOf(engine);
    expect(childPids()).toContain(pid);
    expect(pid).not.toBe(process.pid);
    expect(cmdlineOf(pid)).toContain('--no-node-snapshot');
    // glibc splits GLIBC_TUNABLES at its `:`s in place (host-env.test.ts): joined back here.
    expect(environOf(pid).join(':')).toBe(`GLIBC_TUNABLES=${HOST_ENV.GLIBC_TUNABLES}`);
  });

  it('reuses a healthy host, and replaces it after maxRunsPerProcess runs', async () => {
    const engine = newEngine({ maxRunsPerProcess: 2 });
    const a = await hostPidOf(engine);
    const b = await hostPidOf(engine);
    const c = await hostPidOf(engine);
    expect(b).toBe(a);
    expect(c).not.toBe(a);
  });

  it('replaces the host after any failure', async () => {
    const engine = newEngine();
    const a = await hostPidOf(engine);
    const failed = await engine.execute('throw new Error("x")');
    expect(failed.status).toBe('failed');
    const b = await hostPidOf(engine);
    expect(b).not.toBe(a);
    await sleep(100);
    expect(childPids()).not.toContain(a);
  });

  it('never shares a process between partitions (tenants)', async () => {
    const engine = newEngine();
    const a1 = await hostPidOf(engine, 'tenant-a');
    const b1 = await hostPidOf(engine, 'tenant-b');
    const a2 = await hostPidOf(engine, 'tenant-a');
    expect(b1).not.toBe(a1);
    expect(a2).toBe(a1);
  });

  it('runs of one engine proceed in parallel, each in its own host', async () => {
    const engine = newEngine();
    let inFlight = 0;
    let most = 0;
    const wait = async (): Promise<BindingOutcome> => {
      inFlight++;
      most = Math.max(most, inFlight);
      await sleep(1500);
      inFlight--;
      return { type: 'result', valueJson: '1' };
    };
    const outs = await Promise.all(
      [1, 2, 3].map(() => engine.execute('return await t()', { bindings: ['t'], onCall: wait })),
    );
    expect(outs.map((o) => o.valueJson)).toEqual(['1', '1', '1']);
    expect(most).toBeGreaterThanOrEqual(2);
    expect(new Set(outs.map((o) => o.hostPid)).size).toBe(3);
  });

  it('idle hosts do not keep the caller alive: a process that never calls close() still exits', async () => {
    const script = fileURLToPath(new URL('../test/no-close.ts', import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--disable-warning=ExperimentalWarning', script],
        { timeout: 20_000 },
        (e, out) => (e ? reject(e) : resolve(out)),
      );
    });
    // execFile rejects a process its timeout had to kill: resolving means it exited on its own.
    expect(stdout).toBe('42\n');
    const closing = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--disable-warning=ExperimentalWarning', script, 'close'],
        { timeout: 20_000 },
        (e, out) => (e ? reject(e) : resolve(out)),
      );
    });
    expect(closing).toBe('42\nclosed\n');
  });

  it('close() ends every host process; later runs are sandbox-unavailable', async () => {
    const engine = newEngine();
    const pid = await hostPidOf(engine);
    await engine.close();
    expect(childPids()).not.toContain(pid);
    const out = await engine.execute('return 1');
    expect(out.failure).toEqual({ kind: 'sandbox-unavailable', message: 'the engine is closed' });
  });
});

describe('worker-exit', () => {
  it('a host process killed mid-run ends the run as worker-exit; the next run works', async () => {
    const engine = newEngine();
    const out = await engine.execute('console.log("printed"); await t(); return 1', {
      bindings: ['t'],
      onCall: async () => {
        for (const p of childPids()) if (cmdlineOf(p).includes(HOST_SCRIPT)) process.kill(p, 'SIGKILL');
        await sleep(5000);
        return { type: 'result', valueJson: '1' };
      },
    });
    expect(out.failure).toEqual({
      kind: 'worker-exit',
      message: 'the sandbox host process ended early (signal SIGKILL)',
    });
    expect(out.logs).toEqual([{ level: 'log', text: 'printed' }]);
    expect((await engine.execute('return 2')).valueJson).toBe('2');
  });

  it('an uninterruptible builtin is killed by the wall-clock watchdog outside V8 after the budget and grace', async () => {
    const engine = newEngine({ watchdogGraceMs: 50 });
    const out = await engine.execute('console.log("go"); Array(2e8).fill(0); return 1', {
      limits: { timeoutMs: 200 },
    });
    expect(out.failure).toEqual({
      kind: 'worker-exit',
      message: 'the sandbox host did not stop within 50ms and was killed',
    });
    // The reason names the watchdog's kill: the builtin did not return on its own.
    expect(out.logs).toEqual([{ level: 'log', text: 'go' }]);
    expect((await engine.execute('return 3')).valueJson).toBe('3');
  });
});

describe('protocol', () => {
  const fake = (mode: string): EngineOptions => ({
    wrapCommand: (command) => ({ command, args: ['--disable-warning=ExperimentalWarning', FAKE_HOST, mode] }),
  });

  it('a frame that is not JSON ends the run as protocol', async () => {
    const out = await newEngine(fake('garbage')).execute('return 1');
    expect(out.failure).toEqual({
      kind: 'protocol',
      message: 'the sandbox host sent a malformed message: frame payload is not JSON',
    });
    expect(renderResultText(out)).toBe(
      'code run failed (protocol): the sandbox host sent a malformed message: frame payload is not JSON',
    );
  });

  it('an oversized frame ends the run as protocol', async () => {
    const out = await newEngine(fake('oversized')).execute('return 1');
    expect(out.failure?.kind).toBe('protocol');
    expect(out.failure?.message).toMatch(/frame of 2147483647 bytes exceeds the limit of 4194304 bytes/);
  });

  it('a message of an unknown type ends the run as protocol', async () => {
    const out = await newEngine(fake('unknown')).execute('return 1');
    expect(out.failure).toEqual({
      kind: 'protocol',
      message: 'the sandbox host sent a malformed message: unexpected message "hello"',
    });
  });
});

describe('sandbox-unavailable', () => {
  it('a launcher that is missing: the run does not start', async () => {
    const engine = newEngine({
      wrapCommand: (command, args) => ({
        command: '/nonexistent/islet-jail',
        args: ['--', command, ...args],
      }),
    });
    const out = await engine.execute('return 1');
    expect(out.status).toBe('failed');
    expect(out.failure?.kind).toBe('sandbox-unavailable');
    expect(out.failure?.message).toMatch(
      /^cannot start the sandbox host: spawn \/nonexistent\/islet-jail ENOENT/,
    );
  });

  it('a launcher that exits before the host is ready, or a host that never gets ready', async () => {
    const exits = newEngine({
      wrapCommand: (command) => ({
        command,
        args: ['--disable-warning=ExperimentalWarning', FAKE_HOST, 'exit'],
      }),
    });
    const out = await exits.execute('return 1');
    expect(out.failure).toEqual({
      kind: 'sandbox-unavailable',
      message: 'the sandbox host exited during start-up (code 3)',
    });
    const silent = newEngine({
      startupTimeoutMs: 300,
      wrapCommand: (command) => ({
        command,
        args: ['--disable-warning=ExperimentalWarning', FAKE_HOST, 'silent'],
      }),
    });
    expect((await silent.execute('return 1')).failure).toEqual({
      kind: 'sandbox-unavailable',
      message: 'the sandbox host did not start within 300ms',
    });
  });

  it('a required full file-sandbox enforcement that is only partial here: the run does not start', async () => {
    const engine = newEngine();
    let called = false;
    const out = await engine.execute('await t()', {
      bindings: ['t'],
      onCall: async () => {
        called = true;
        return { type: 'result', valueJson: '1' };
      },
      sandbox: { mode: 'workspace-write', enforcement: 'partial', requireFullEnforcement: true },
    });
    expect(out.failure).toEqual({
      kind: 'sandbox-unavailable',
      message: 'file sandbox enforcement for workspace-write is only partial on this host',
    });
    expect(called).toBe(false);
    expect(renderResultText(out)).toBe(
      'code run failed (sandbox-unavailable): file sandbox enforcement for workspace-write is only partial on this host\n' +
        'File sandbox enforcement is partial on this host.',
    );
  });

  it('the wrapCommand hook receives the node command line to wrap', async () => {
    let seen: { command: string; args: string[] } | undefined;
    const engine = newEngine({
      wrapCommand: (command, args) => {
        seen = { command, args };
        return { command, args };
      },
    });
    expect((await engine.execute('return 1')).valueJson).toBe('1');
    expect(seen?.command).toBe(process.execPath);
    expect(seen?.args).toEqual([
      '--no-node-snapshot',
      `--max-semi-space-size=${HOST_SEMI_SPACE_MB}`,
      '--disable-warning=ExperimentalWarning',
      HOST_SCRIPT,
      // isolated-vm's addon, which the host opens itself (host-ivm.ts), as an argument of its own.
      HOST_ADDON_ARG,
      isolatedVmAddon(),
    ]);
  });
});
