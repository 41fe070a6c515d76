import { createRedis, createTenantStore } from '@islet/core';
import { startRedis } from '@islet/testkit';
import { describe, expect, it, vi } from 'vitest';
import { runCli } from './cli.ts';
import { createIsletClient, IsletApiError } from './client.ts';

describe('islet admin (direct on Redis)', () => {
  it('creates a tenant and a key that resolves to its scopes', async () => {
    const server = await startRedis({ appendOnly: false });
    const writes: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
      writes.push(String(s));
      return true;
    });
    try {
      const env = { ISLET_REDIS_URL: server.url };
      expect(await runCli(['admin', 'create-tenant', '--name', 'Acme', '--id', 'acme'], env)).toBe(0);
      expect(
        await runCli(['admin', 'create-key', '--tenant', 'acme', '--scopes', 'apps.use,platform.admin'], env),
      ).toBe(0);
      await expect(
        runCli(['admin', 'create-key', '--tenant', 'acme', '--scopes', 'root'], env),
      ).rejects.toThrow(/unknown scopes: root/);
      const key = JSON.parse(writes[1]!).key as string;
      const redis = createRedis(server.url);
      const identity = await createTenantStore(redis).resolveKey(key);
      redis.disconnect();
      expect(identity).toMatchObject({ tenantId: 'acme', scopes: ['apps.use', 'platform.admin'] });
      // Only the hash is stored.
      expect(JSON.stringify(identity)).not.toContain(key);
    } finally {
      spy.mockRestore();
      await server.stop();
    }
  });
  it('the client turns problem+json into IsletApiError', async () => {
    const fake = (async () =>
      new Response(
        JSON.stringify({ type: 'https://islet.dev/problems/not-found', title: 'Not found', status: 404 }),
        { status: 404 },
      )) as typeof fetch;
    const c = createIsletClient({ url: 'http://x', key: 'k', fetch: fake });
    const err = await c.getRun('nope').catch((e) => e);
    expect(err).toBeInstanceOf(IsletApiError);
    expect(err.problem.type).toBe('https://islet.dev/problems/not-found');
  });
});

describe('islet --help', () => {
  it('exits 0 and lists every flag the CLI takes', async () => {
    const { spawnSync } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const { OPTIONS } = await import('./cli.ts');
    const cli = fileURLToPath(new URL('./cli.ts', import.meta.url));
    for (const flag of ['--help', '-h']) {
      const res = spawnSync(process.execPath, [cli, flag], { encoding: 'utf8', timeout: 20_000 });
      expect(res.status).toBe(0);
      expect(res.stderr).toBe('');
      for (const name of Object.keys(OPTIONS)) expect(res.stdout).toContain(`--${name}`);
      expect(res.stdout).toContain('--help');
    }
    // A wrong command still says how to use it, on stderr, with exit 2.
    const bad = spawnSync(process.execPath, [cli, 'nonsense'], { encoding: 'utf8', timeout: 20_000 });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--principal');
  });
});

describe('escapeControls', () => {
  it('shows C0 (but newline and tab), DEL and C1 controls as \\xNN and leaves other text alone', async () => {
    const { escapeControls } = await import('./cli-output.ts');
    expect(escapeControls('a\tb\nc')).toBe('a\tb\nc');
    expect(escapeControls('\u001b]52;c;aGk=\u0007')).toBe('\\x1b]52;c;aGk=\\x07');
    expect(escapeControls('\u001b[2J\r\u0000\u007f\u0085\u009b')).toBe('\\x1b[2J\\x0d\\x00\\x7f\\x85\\x9b');
    expect(escapeControls('héllo ✓ \u00a0')).toBe('héllo ✓ \u00a0');
  });
});

describe('parseEventStream', () => {
  it('dispatches events split across chunks, joins data lines, skips comments', async () => {
    const { parseEventStream } = await import('./sse.ts');
    const chunks = [
      'retry: 1000\n\n: heartbeat\n\nid: 1-0\nevent: st',
      'atus\ndata: {"a":1}\n\nid: 2-0\r\n',
      'data: x\ndata: y\n\n',
    ];
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const chunk of chunks) c.enqueue(new TextEncoder().encode(chunk));
        c.close();
      },
    });
    const events = [];
    for await (const e of parseEventStream(body)) events.push(e);
    expect(events).toEqual([
      { id: '1-0', event: 'status', data: { a: 1 } },
      { id: '2-0', event: 'message', data: 'x\ny' },
    ]);
  });
});
