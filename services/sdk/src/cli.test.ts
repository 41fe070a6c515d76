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
  it('lists, rotates and revokes keys; a revoked key no longer resolves', async () => {
    const server = await startRedis({ appendOnly: false });
    const writes: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
      writes.push(String(s));
      return true;
    });
    const redis = createRedis(server.url);
    try {
      const env = { ISLET_REDIS_URL: server.url };
      await runCli(['admin', 'create-tenant', '--name', 'Acme', '--id', 'acme'], env);
      await runCli(['admin', 'create-key', '--tenant', 'acme', '--expires-at', '2999-01-01T00:00:00Z'], env);
      const made = JSON.parse(writes.at(-1)!) as { key: string; keyId: string; expiresAt: number };
      expect(made.expiresAt).toBe(Date.parse('2999-01-01T00:00:00Z'));
      expect(await runCli(['admin', 'list-keys', '--tenant', 'acme'], env)).toBe(0);
      expect(JSON.parse(writes.at(-1)!).items).toMatchObject([
        { id: made.keyId, prefix: made.key.slice(0, 12) },
      ]);
      expect(writes.at(-1)).not.toContain(made.key);
      const args = ['--tenant', 'acme', '--key-id', made.keyId];
      expect(await runCli(['admin', 'rotate-key', ...args, '--grace-seconds', '60'], env)).toBe(0);
      const rotated = JSON.parse(writes.at(-1)!) as { key: string; previousExpiresAt: number };
      expect(writes.at(-1)).not.toContain('dropped');
      const store = createTenantStore(redis);
      expect(await store.resolveKey(made.key)).not.toBeNull();
      expect(await store.resolveKey(rotated.key)).toMatchObject({ keyId: made.keyId });
      expect(await runCli(['admin', 'revoke-key', ...args], env)).toBe(0);
      expect(await store.resolveKey(made.key)).toBeNull();
      expect(await store.resolveKey(rotated.key)).toBeNull();
      await expect(runCli(['admin', 'revoke-key', ...args], env)).rejects.toThrow(/has no key/);
    } finally {
      spy.mockRestore();
      redis.disconnect();
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
