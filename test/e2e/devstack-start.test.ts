/**
 * `npm start` (services/devstack/src/main.ts) as a user runs it: ISLET_PORT and ISLET_DEV_API_KEY
 * fix the port and key, the printed curl works, Ctrl-C (SIGINT) stops every process it started.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '@islet/testkit';
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

it('npm start brings the cluster up on ISLET_PORT with ISLET_DEV_API_KEY and Ctrl-C stops it all', async () => {
  const port = await freePort();
  const key = `isk_test_${Date.now()}`;
  const proc = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ISLET_PORT: String(port), ISLET_DEV_API_KEY: key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (c) => {
    out += c;
  });
  proc.stderr.on('data', (c) => {
    out += c;
  });
  try {
    await until(async () => out.includes('Ctrl-C stops everything'), 40_000, 100);
    expect(out).toContain(`gateway   http://127.0.0.1:${port}`);
    expect(out).toContain(`API key   ${key}`);
    // Code Mode is off on a fresh install; the dev stack turns it on and says so.
    expect(out).toContain('Code Mode on: this dev stack turned it on in the platform settings');
    const settings = await fetch(`http://127.0.0.1:${port}/v1/platform/settings`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(((await settings.json()) as { codeMode: { enabled: boolean } }).codeMode.enabled).toBe(true);
    // The printed example, run as printed (minus the shell quoting).
    const body = /-d '(.+)'/.exec(out)?.[1];
    expect(body).toBeTruthy();
    const res = await fetch(`http://127.0.0.1:${port}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=20' },
      body: body!,
    });
    const rec = (await res.json()) as { status: string; text: string };
    expect(rec.status).toBe('Completed');
    expect(rec.text).toBe('hello from the sandbox\n42');
    // Child processes: the gateway answers on the port; find them by their pids through /proc.
    const children = (await import('node:fs'))
      .readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    expect(children.length).toBeGreaterThanOrEqual(5); // redis, gateway, three runners
    proc.kill('SIGINT');
    await new Promise((r) => proc.once('exit', r));
    await until(async () => children.every((pid) => !alive(pid)), 20_000, 100);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  } finally {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  }
}, 90_000);
