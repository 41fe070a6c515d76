/**
 * `npm start` (services/devstack/src/main.ts) as a user runs it: ISLET_PORT and ISLET_DEV_API_KEY
 * fix the port and key, the printed curl works, Ctrl-C (SIGINT) stops every process it started.
 * With ISLET_REDIS_URL (+ password file) it starts no Redis of its own, uses the one it is given
 * (ISLET_DEV_GATEWAYS gateways, all on that Redis), hands the password to its children only as a
 * file, and leaves that Redis running with its data when stopped.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRedis, keys } from '@islet/core';
import { freePort, startRedis } from '@islet/testkit';
import { expect, it } from 'vitest';
import { until } from './helpers.ts';

const MAIN = fileURLToPath(new URL('../../services/devstack/src/main.ts', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** main.ts with `env` added; resolves once it printed its banner. */
async function npmStart(env: Record<string, string>) {
  const proc: ChildProcess = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (c) => {
    out += c;
  });
  proc.stderr?.on('data', (c) => {
    out += c;
  });
  const children = () =>
    readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  const stop = async () => {
    const pids = children();
    proc.kill('SIGINT');
    await new Promise((r) => proc.once('exit', r));
    await until(async () => pids.every((pid) => !alive(pid)), 20_000, 100);
  };
  const kill = () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  };
  try {
    await until(async () => out.includes('Ctrl-C stops everything') || proc.exitCode !== null, 60_000, 100);
  } catch (err) {
    kill();
    throw err;
  }
  if (proc.exitCode !== null) throw new Error(`npm start exited ${proc.exitCode}:\n${out}`);
  return { proc, output: () => out, children, stop, kill };
}

async function runPrinted(port: number, key: string, out: string) {
  // The printed example, run as printed (minus the shell quoting).
  const body = /-d '(.+)'/.exec(out)?.[1];
  expect(body).toBeTruthy();
  const res = await fetch(`http://127.0.0.1:${port}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=20' },
    body: body!,
  });
  return (await res.json()) as { id: string; status: string; text: string };
}

it('npm start brings the cluster up on ISLET_PORT with ISLET_DEV_API_KEY and Ctrl-C stops it all', async () => {
  const port = await freePort();
  const key = `isk_test_${Date.now()}`;
  const stack = await npmStart({ ISLET_PORT: String(port), ISLET_DEV_API_KEY: key });
  try {
    const out = stack.output();
    expect(out).toContain(`gateway   http://127.0.0.1:${port}`);
    expect(out).toContain(`API key   ${key}`);
    expect(out).toContain(`health    http://127.0.0.1:${port}/console/#/health`);
    // A line to paste into a shell for the CLI and the clients.
    expect(out).toMatch(
      new RegExp(`^export ISLET_URL=http://127\\.0\\.0\\.1:${port} ISLET_API_KEY=${key}$`, 'm'),
    );
    expect(out).toMatch(/redis {5}standalone redis:\/\/127\.0\.0\.1:\d+ \(embedded/);
    // Code Mode is off on a fresh install; the dev stack turns it on and says so.
    expect(out).toContain('Code Mode on: this dev stack turned it on in the platform settings');
    const settings = await fetch(`http://127.0.0.1:${port}/v1/platform/settings`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(((await settings.json()) as { codeMode: { enabled: boolean } }).codeMode.enabled).toBe(true);
    const rec = await runPrinted(port, key, out);
    expect(rec.status).toBe('Completed');
    expect(rec.text).toBe('hello from the sandbox\n42');
    // Child processes: the gateway answers on the port; find them by their pids through /proc.
    const children = stack.children();
    expect(children.length).toBeGreaterThanOrEqual(5); // redis, gateway, three runners
    expect(children.map((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim())).toContain('redis-server');
    await stack.stop();
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  } finally {
    stack.kill();
  }
}, 90_000);

it('npm start with ISLET_REDIS_URL uses that Redis (password from a file), starts none, leaves it running', async () => {
  const redis = await startRedis();
  const password = `pw-${Date.now()}-secret`;
  const dir = mkdtempSync(join(tmpdir(), 'islet-devstack-test-'));
  let stack: Awaited<ReturnType<typeof npmStart>> | undefined;
  try {
    const setup = createRedis(redis.url);
    await setup.config('SET', 'requirepass', password);
    setup.disconnect();
    const passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
    const port = await freePort();
    const key = `isk_test_ext_${Date.now()}`;
    stack = await npmStart({
      ISLET_PORT: String(port),
      ISLET_DEV_API_KEY: key,
      ISLET_REDIS_URL: redis.url,
      ISLET_REDIS_MODE: 'standalone',
      ISLET_REDIS_PASSWORD_FILE: passwordFile,
      ISLET_DEV_GATEWAYS: '2',
    });
    const out = stack.output();
    expect(out).toContain(
      `redis     standalone redis://127.0.0.1:${redis.port} (existing: left as it is on exit)`,
    );
    expect(out).not.toContain(password);
    const second = /gateways {2}(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
    expect(second).toBeTruthy();
    const rec = await runPrinted(port, key, out);
    expect(rec.status).toBe('Completed');
    // The other gateway serves the same run: one Redis behind both.
    const other = await fetch(`${second}/v1/code-runs/${rec.id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(((await other.json()) as { status: string }).status).toBe('Completed');

    // Two gateways and three runners, no redis-server; no child holds the password in its environment.
    const children = stack.children();
    const comms = children.map((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim());
    expect(comms).not.toContain('redis-server');
    expect(children.length).toBe(5);
    for (const pid of children) {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      expect(environ.join('\n')).not.toContain(password);
      expect(environ.some((e) => e.startsWith('ISLET_REDIS_PASSWORD_FILE='))).toBe(true);
      expect(environ).toContain('ISLET_REDIS_MODE=standalone');
    }
    await stack.stop();

    // The given Redis is still up, with the run in it.
    const after = createRedis({ ISLET_REDIS_URL: redis.url, ISLET_REDIS_PASSWORD: password });
    try {
      expect(await after.exists(keys.run(rec.id))).toBe(1);
    } finally {
      after.disconnect();
    }
  } finally {
    stack?.kill();
    rmSync(dir, { recursive: true, force: true });
    await redis.stop();
  }
}, 120_000);

it('npm start refuses a Redis mode or password without ISLET_REDIS_URL, and bad counts, before starting anything', async () => {
  for (const [env, message] of [
    [{ ISLET_REDIS_MODE: 'cluster' }, 'ISLET_REDIS_MODE set without ISLET_REDIS_URL'],
    [{ ISLET_DEV_GATEWAYS: '0' }, 'ISLET_DEV_GATEWAYS: "0" is not a whole number 1..64'],
  ] as const) {
    const proc = spawn(process.execPath, [MAIN], {
      env: { ...process.env, ISLET_REDIS_URL: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    proc.stderr.on('data', (c) => {
      err += c;
    });
    const code = await new Promise((r) => proc.once('exit', r));
    expect(code).toBe(1);
    expect(err).toContain(message);
  }
}, 60_000);
