/**
 * Workspace files against a hostile tenant, through the real HTTP routes (a listening
 * fastify server), the files binding and the store.
 * - Special files: a FIFO, a unix socket, a device node and a symlink to /dev/zero are refused at
 *   once with a stable problem type, while another tenant's requests keep answering.
 * - Limits: parallel PUTs cannot together pass the byte or file limit (reservation under a lock);
 *   bytes a skill wrote are counted and further writes refused while over.
 * - Listings are paginated (cursor + limit) over HTTP and the binding.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  closeFilesHelpers,
  createFilesBinding,
  filesHelperFor,
  runSkill,
  WorkspaceStore,
} from '@islet/kernel-sandbox';
import Fastify, { type FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesRoutes } from './routes/files.ts';

const base = mkdtempSync(join(tmpdir(), 'islet-attack-'));
chmodSync(base, 0o755); // skill scratch dirs live here; the jailed uid must traverse it
const store = new WorkspaceStore({
  root: join(base, 'ws'),
  maxFileBytes: 1000,
  maxWorkspaceBytes: 5000,
  maxFiles: 8,
});
const app = Fastify();
const sockets: Server[] = [];
let url = '';

const tenantOf = (request: FastifyRequest) => /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')![1]!;
app.register(filesRoutes({ authenticate: async () => {}, resolveTenant: tenantOf, store }));

beforeAll(async () => {
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  for (const s of sockets) s.close();
  await app.close();
  closeFilesHelpers();
  rmSync(base, { recursive: true, force: true });
});

async function http(method: string, tenant: string, path: string, body?: string | Buffer) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${tenant}`, 'content-type': 'application/octet-stream' },
    ...(body !== undefined ? { body } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: { type?: string; reason?: string; files?: Array<{ path: string }>; nextCursor?: string } = {};
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, text, json };
}

const UNSUPPORTED = 'https://islet.dev/problems/unsupported-file-type';

describe('special files are refused at once, never read', () => {
  it('FIFO, unix socket, device node: 409 unsupported-file-type over HTTP and AppCallFailed in the binding, never opened, while another tenant keeps being served', async () => {
    const dir = await store.ensure('mallory', 'fifo');
    expect(spawnSync('mkfifo', [join(dir, 'pipe')]).status).toBe(0);
    // A device node (as root; a tenant cannot make one, but a volume might carry one).
    const mknod = spawnSync('mknod', [join(dir, 'zero'), 'c', '1', '5']);
    expect(mknod.status, `mknod needs root: ${mknod.stderr}`).toBe(0);
    const sock = createServer();
    sockets.push(sock);
    await new Promise<void>((r) => sock.listen(join(dir, 'sock'), r));
    symlinkSync('/dev/zero', join(dir, 'zero-link'));
    await store.workspace('alice', 'ok').write('hello.txt', Buffer.from('hi alice'));

    expect((await http('GET', 'alice', '/v1/sessions/ok/files/hello.txt')).status).toBe(200); // warm up

    // Hit the special files and, at the same time, serve another tenant, a few rounds.
    const hit = [];
    const served = [];
    for (let round = 0; round < 5; round++) {
      const attacks = ['pipe', 'zero', 'sock'].map((n) =>
        http('GET', 'mallory', `/v1/sessions/fifo/files/${n}`),
      );
      const neighbour = [1, 2, 3].map(() => http('GET', 'alice', '/v1/sessions/ok/files/hello.txt'));
      hit.push(...(await Promise.all(attacks)));
      served.push(...(await Promise.all(neighbour)));
    }
    for (const r of hit) {
      expect(r.status).toBe(409);
      expect(r.json.type).toBe(UNSUPPORTED);
    }
    for (const r of served) {
      expect(r.status).toBe(200);
      expect(r.text).toBe('hi alice');
    }
    // The symlink to a device is refused like every symlink (never followed).
    const link = await http('GET', 'mallory', '/v1/sessions/fifo/files/zero-link');
    expect(link.status).toBe(400);
    expect(link.json.reason).toBe('outside-workspace');
    // Writing over a FIFO is refused too (it would otherwise be replaced or opened).
    const over = await http('PUT', 'mallory', '/v1/sessions/fifo/files/pipe', 'x');
    expect(over.json.type).toBe(UNSUPPORTED);

    const files = createFilesBinding({
      mode: 'workspace-write',
      workspaceDir: dir,
      workspace: store.workspace('mallory', 'fifo'),
      enforcement: 'full',
    });
    for (const name of ['pipe', 'zero', 'sock']) {
      // Refused from the file's type before any open: opening a FIFO with no writer would block
      // this call (and the test) for good, and /dev/zero would stream without end.
      const out = await files({ binding: 'files.read', argsJson: JSON.stringify({ path: name }) });
      expect(out).toMatchObject({
        type: 'error',
        name: 'AppCallFailed',
        details: { reason: 'unsupported-file-type' },
      });
    }
    // Listed never; removable (the entry itself).
    const list = await http('GET', 'mallory', '/v1/sessions/fifo/files');
    expect(list.json.files).toEqual([]);
    for (const name of ['pipe', 'zero', 'zero-link'])
      expect((await http('DELETE', 'mallory', `/v1/sessions/fifo/files/${name}`)).status).toBe(204);
  });
});

describe('workspace limits', () => {
  it('parallel PUTs cannot together pass the byte limit or the file limit', async () => {
    // 5000 bytes: at most 6 files of 800 bytes; 20 writers race for it.
    const puts = Array.from({ length: 20 }, (_, i) =>
      http('PUT', 'bob', `/v1/sessions/bytes/files/f${i}.bin`, Buffer.alloc(800)),
    );
    const done = await Promise.all(puts);
    expect(done.filter((r) => r.status === 201)).toHaveLength(6);
    for (const r of done.filter((r) => r.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.json.reason).toBe('workspace-full');
    }
    expect((await store.usage('bob', 'bytes')).bytes).toBe(4800);
    // A refused write leaves nothing behind, not even the directories on its way.
    const deep = await http('PUT', 'bob', '/v1/sessions/bytes/files/deep/a/b/c.bin', Buffer.alloc(800));
    expect(deep.json.reason).toBe('workspace-full');
    expect(existsSync(join(store.dirFor('bob', 'bytes'), 'deep'))).toBe(false);

    // 8 files: 20 one-byte writers race for them.
    const small = await Promise.all(
      Array.from({ length: 20 }, (_, i) => http('PUT', 'bob', `/v1/sessions/count/files/n${i}`, 'x')),
    );
    expect(small.filter((r) => r.status === 201)).toHaveLength(8);
    expect((await store.usage('bob', 'count')).files).toBe(8);
  });

  it('bytes a skill wrote count: over the limit, writes are refused until files are removed', async () => {
    const dir = await store.ensure('carol', 'skill');
    const res = await runSkill({
      language: 'bash',
      code: 'head -c 4000 /dev/zero > a.bin && head -c 4000 /dev/zero > b.bin',
      mode: 'workspace-write',
      workspaceDir: dir,
      workspaceRoot: store.root,
      tmpDir: base,
    });
    expect(res).toMatchObject({ success: true, exitCode: 0 });
    const usage = await store.usage('carol', 'skill');
    expect(usage).toMatchObject({ bytes: 8000, files: 2, over: true });
    const ws = store.workspace('carol', 'skill');
    await expect(ws.write('c.txt', Buffer.from('x'))).rejects.toMatchObject({ code: 'workspace-full' });
    await expect(ws.write('c.txt', Buffer.alloc(1000))).rejects.toMatchObject({ code: 'workspace-full' });
    expect(await ws.remove('b.bin')).toBe(true);
    expect((await store.usage('carol', 'skill')).over).toBe(false);
    await ws.write('c.txt', Buffer.alloc(1000)); // 5000: at the limit
    await expect(ws.write('d.txt', Buffer.from('x'))).rejects.toMatchObject({ code: 'workspace-full' });
  });
});

describe('listings are paginated', () => {
  it('cursor + limit over HTTP and the binding: every file once, in path order', async () => {
    const big = new WorkspaceStore({ root: join(base, 'ws'), maxFiles: 100 });
    const ws = big.workspace('dave', 'many');
    const names = Array.from({ length: 23 }, (_, i) => `d${i % 3}/f${String(i).padStart(2, '0')}.txt`);
    names.push('d0-x.txt', 'd0.txt'); // '-' and '.' sort before '/': path order, not walk order
    for (const n of names) await ws.write(n, Buffer.from(n));
    const sorted = [...names].sort();

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const q = `?limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await http('GET', 'dave', `/v1/sessions/many/files${q}`);
      expect(page.status).toBe(200);
      expect(page.json.files!.length).toBeLessThanOrEqual(10);
      seen.push(...page.json.files!.map((f) => f.path));
      cursor = page.json.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(sorted);

    const prefixed = await http('GET', 'dave', '/v1/sessions/many/files?prefix=d1&limit=3');
    expect(prefixed.json.files!.map((f) => f.path)).toEqual(
      sorted.filter((p) => p.startsWith('d1/')).slice(0, 3),
    );
    expect(prefixed.json.nextCursor).toBeTypeOf('string');

    for (const bad of ['limit=0', 'limit=1001', 'limit=x', 'cursor=%2F%2F%2F'])
      expect((await http('GET', 'dave', `/v1/sessions/many/files?${bad}`)).status).toBe(400);

    const files = createFilesBinding({
      mode: 'read-only',
      workspaceDir: big.dirFor('dave', 'many'),
      workspace: ws,
      enforcement: 'full',
    });
    const viaBinding: string[] = [];
    let next: string | undefined;
    do {
      const out = await files({
        binding: 'files.list',
        argsJson: JSON.stringify({ limit: 7, cursor: next }),
      });
      expect(out.type).toBe('result');
      const value = JSON.parse((out as { valueJson: string }).valueJson);
      viaBinding.push(...value.files.map((f: { path: string }) => f.path));
      next = value.nextCursor;
    } while (next);
    expect(viaBinding).toEqual(sorted);
  });
});

describe('the helper process', () => {
  it('a crashed helper answers unavailable for the requests it held, and the next request starts a new one', async () => {
    const ws = store.workspace('erin', 'crash');
    await ws.write('a.txt', Buffer.from('a'));
    const pids = filesHelperFor(store.root).pids();
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    // Whatever was in flight failed cleanly; then service resumes.
    let text = '';
    for (let i = 0; i < 5 && text !== 'a'; i++) {
      try {
        text = (await ws.read('a.txt')).toString();
      } catch (err) {
        expect((err as { code?: string }).code).toBe('unavailable');
      }
    }
    expect(text).toBe('a');
    writeFileSync(join(store.dirFor('erin', 'crash'), 'b.txt'), 'b');
    expect((await ws.read('b.txt')).toString()).toBe('b');
  });
});
