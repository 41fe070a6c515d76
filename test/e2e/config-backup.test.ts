/**
 * The restore drill of charts/islet/README.md ("Backup, restore and rollback"), performed: the
 * config backup CLI exports a running installation's tenants, keys, connections and settings,
 * Redis is wiped, the import brings them back and the same API key authenticates again at a real
 * gateway. Then the key-layout gate: a gateway refuses to start on a Redis whose key layout a newer
 * Islet wrote (what `helm rollback` past a layout migration would otherwise do silently).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { KEY_LAYOUT_VERSION, keys } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = resolve(import.meta.dirname, '../../services/gateway/src/config-backup-main.ts');
let server: RedisServer;
let redis: Redis;
let cluster: Cluster;
const dir = mkdtempSync(join(tmpdir(), 'islet-backup-'));

/** Runs the CLI with the cluster's configuration; stdin from `input`, stdout to `output`. */
function cli(command: string, io: { input?: string; output?: string } = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const child = spawn(process.execPath, [CLI, command], {
      env: { PATH: process.env.PATH ?? '', ...cluster.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
    });
    child.stdin.end(io.input ? readFileSync(io.input) : '');
    child.on('close', (code) => {
      if (io.output) writeFileSync(io.output, stdout);
      done({ code, stdout, stderr });
    });
  });
}

const get = (path: string, key: string) =>
  fetch(`${cluster.url}${path}`, { headers: { authorization: `Bearer ${key}` } });

/** Polls until `path` answers `status` (the gateway caches a key's identity for a few seconds). */
async function until(path: string, key: string, status: number): Promise<Response> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await get(path, key);
    if (r.status === status || Date.now() > deadline) return r;
    await r.body?.cancel();
    await new Promise((s) => setTimeout(s, 200));
  }
}

beforeAll(async () => {
  server = await startRedis({ appendFsync: 'always' });
  redis = new Redis(server.url);
  cluster = await startCluster({ redisUrl: server.url, gateways: 1, runners: [] });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  redis?.disconnect();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('config backup and restore drill', () => {
  it('export → FLUSHALL → import: the same API key authenticates, tenants and settings are back', async () => {
    const before = await (await until('/v1/admin/tenants', cluster.devKey, 200)).json();
    const settings = (await (await get('/v1/platform/settings', cluster.devKey)).json()) as {
      codeMode: { enabled: boolean };
    };
    expect(settings.codeMode.enabled).toBe(true);

    const file = join(dir, 'islet-config.jsonl');
    const exported = await cli('export', { output: file });
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/^exported 1 tenants, 1 API keys, \d+ Redis keys$/m);
    const [header] = readFileSync(file, 'utf8').split('\n');
    expect(JSON.parse(header!)).toMatchObject({ format: 'islet-config-backup', version: 1 });
    // Hashes only: the backup, like Redis, holds no usable key.
    expect(readFileSync(file, 'utf8')).not.toContain(cluster.devKey);

    await redis.flushall();
    expect((await until('/v1/admin/tenants', cluster.devKey, 401)).status).toBe(401);

    const imported = await cli('import', { input: file });
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toMatch(/^imported 1 tenants, 1 API keys, \d+ Redis keys$/m);
    const after = await until('/v1/admin/tenants', cluster.devKey, 200);
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual(before);
    expect(await (await get('/v1/platform/settings', cluster.devKey)).json()).toEqual(settings);
  });

  it('import refuses a backup of a newer key layout and writes nothing', async () => {
    const file = join(dir, 'newer.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ format: 'islet-config-backup', version: 1, keyLayout: String(KEY_LAYOUT_VERSION + 1), exportedAt: new Date().toISOString() })}\n${JSON.stringify({ key: 'islet:tenants', type: 'set', value: ['intruder'] })}\n`,
    );
    const r = await cli('import', { input: file });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `import failed: the backup's key layout ${KEY_LAYOUT_VERSION + 1} is newer than this build knows (${KEY_LAYOUT_VERSION})`,
    );
    expect(await redis.sismember(keys.tenants(), 'intruder')).toBe(0);
  });
});

describe('import refuses a file that is not what an export writes, writing nothing', () => {
  const header = () =>
    JSON.stringify({
      format: 'islet-config-backup',
      version: 1,
      keyLayout: String(KEY_LAYOUT_VERSION),
      exportedAt: new Date().toISOString(),
    });
  const intruder = JSON.stringify({ key: keys.tenants(), type: 'set', value: ['intruder'] });
  // Each case is a CLI process of its own (most of its time is loading the gateway's modules) on
  // its own file; none writes: they run at the same time.
  it.concurrent.for([
    [
      'a key that is not configuration',
      JSON.stringify({ key: 'islet:run:forged', type: 'string', value: 'x' }),
      'islet:run:forged: not a configuration key an export writes',
    ],
    [
      'a tenant key of a tenant the file does not list',
      JSON.stringify({ key: keys.connections('ghost'), type: 'hash', value: {} }),
      `${keys.connections('ghost')}: not a configuration key`,
    ],
    ['a line that is not JSON', '{"key": "islet:tenants", "type": "set", "value": [', 'line 3: not JSON'],
    [
      'a record of another shape',
      JSON.stringify({ key: keys.settings(), type: 'list', value: ['a'] }),
      'line 3: not a backup record',
    ],
  ] as const)('%s', async ([name, bad, message], { expect }) => {
    const file = join(dir, `bad-${name.replaceAll(' ', '-')}.jsonl`);
    writeFileSync(file, `${header()}\n${intruder}\n${bad}\n`);
    const r = await cli('import', { input: file });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`import failed: ${message}`);
    // The valid record before the bad one was not written either.
    expect(await redis.sismember(keys.tenants(), 'intruder')).toBe(0);
    expect(await redis.exists('islet:run:forged')).toBe(0);
  });
});

describe('key layout gate', () => {
  it('a gateway refuses to start on a Redis a newer Islet migrated, naming the versions', async () => {
    await redis.set(keys.keyLayout(), String(KEY_LAYOUT_VERSION + 1));
    const started = startCluster({ redisUrl: server.url, gateways: 1, runners: [] });
    await expect(started).rejects.toThrow(
      `Redis holds key layout version ${KEY_LAYOUT_VERSION + 1}, newer than this build knows (${KEY_LAYOUT_VERSION})`,
    );
    await expect(started).rejects.toThrow(/gateway 0 exited \(1\) before ready/);
    // Nothing was rewritten: the newer installation's marker stands.
    expect(await redis.get(keys.keyLayout())).toBe(String(KEY_LAYOUT_VERSION + 1));
    await redis.set(keys.keyLayout(), String(KEY_LAYOUT_VERSION));
  });
});
