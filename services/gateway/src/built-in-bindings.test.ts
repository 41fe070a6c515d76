/**
 * The built-in `files.*` bindings on the gateway's surfaces: connection registration refuses names
 * that would shadow them (or that no run could use), and `GET /v1/code-api` declares them.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFilesBinding } from '@islet/kernel-sandbox';
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';
import { reservedNameProblem } from './connections.ts';

let headers: { authorization: string };

const { app, deps } = await onGatewayApp();

beforeAll(async () => {
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  headers = { authorization: `Bearer ${(await deps.tenants.createKey('acme', ['apps.use'])).key}` };
});

const create = (payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/v1/connections', headers, payload: { kind: 'client', ...payload } });

function expectReserved(
  res: Awaited<ReturnType<typeof create>>,
  detail: string,
  code = detail.startsWith('invalid binding name') ? 'invalid-binding-name' : 'reserved-connection-name',
) {
  expect(res.statusCode).toBe(400);
  expect(String(res.headers['content-type'])).toContain('application/problem+json');
  expect(res.json()).toMatchObject({
    type: `https://islet.dev/problems/${code}`,
    code,
    status: 400,
    detail,
  });
}

describe('reserved connection names', () => {
  it('refuses a connection whose slug is files, in any spelling, and stores nothing', async () => {
    expectReserved(
      await create({ name: 'files', tools: [{ name: 'read' }] }),
      'connection name "files" is reserved for the built-in workspace bindings',
    );
    expectReserved(
      await create({ name: ' Files! ' }),
      'connection name " Files! " (binding name "files") is reserved for the built-in workspace bindings',
    );
    const list = await app.inject({ method: 'GET', url: '/v1/connections', headers });
    expect(list.json().items).toEqual([]);
  });

  it('refuses connection and capability names that the runtime refuses as binding names', async () => {
    expectReserved(await create({ name: 'class' }), 'invalid binding name: class (reserved by JavaScript)');
    expectReserved(
      await create({ name: 'call' }),
      'invalid binding name: call (kept by the run environment)',
    );
    expectReserved(
      await create({ name: 'CRM', tools: [{ name: 'ok' }, { name: 'Delete' }] }),
      'invalid binding name: delete (reserved by JavaScript)',
    );
    expectReserved(
      await create({ name: 'crm', resources: [{ name: 'lambda' }] }),
      'invalid binding name: lambda (reserved by Python)',
    );
    expect(
      reservedNameProblem({ name: 'Work calendar', kind: 'client', tools: [], resources: [], prompts: [] }),
    ).toBe(undefined);
    // Names that only contain a reserved word are fine, and still register.
    const ok = await create({ name: 'files2', tools: [{ name: 'delete-all' }] });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().bindings).toEqual(['apps.files2.delete_all']);
  });
});

describe('code-api lists the built-in files.* bindings', () => {
  type Listed = {
    binding: string;
    connectionId: string;
    kind: string;
    builtIn?: boolean;
    declaration: string;
  };
  const api = async (query: string) => {
    const res = await app.inject({ method: 'GET', url: `/v1/code-api${query}`, headers });
    expect(res.statusCode).toBe(200);
    return res.json() as { declarations: string; bindings: Listed[] };
  };

  it('declares files.read/write/list/remove with the handler’s argument and result types', async () => {
    const all = await api('');
    const files = all.bindings.filter((b) => b.builtIn);
    expect(files.map((b) => b.binding)).toEqual(['files.read', 'files.write', 'files.list', 'files.remove']);
    expect(files.every((b) => b.connectionId === 'files' && b.kind === 'tool')).toBe(true);
    // The tenant's own connection is still listed after the built-ins.
    expect(all.bindings.map((b) => b.binding)).toContain('files2.delete_all');
    const d = all.declarations;
    expect(d).toContain('namespace files {');
    expect(d).toMatch(/function read\(args: \{[^}]*path: string;[^}]*encoding\?: "utf8" \| "base64";/);
    expect(d).toMatch(/function write\(args: \{[^}]*path: string;[^}]*content: string;/);
    expect(d).toMatch(/function list\(args\?: \{[^}]*prefix\?: string;/);
    expect(d).toMatch(/function remove\(args: \{[^}]*path: string;\s*\}\): Promise<\{[^}]*removed: boolean;/);
    expect(d).toMatch(/files: Array<\{\s*path: string;\s*sizeBytes: number;\s*\}>;/);
    const ts = (await import('typescript')).default;
    const file = ts.createSourceFile('apps.d.ts', d, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
    expect((file as unknown as { parseDiagnostics: unknown[] }).parseDiagnostics).toEqual([]);
  });

  it('filters by connection=files and by words', async () => {
    const byConn = await api('?connection=files');
    expect(byConn.bindings.map((b) => b.binding)).toEqual([
      'files.read',
      'files.write',
      'files.list',
      'files.remove',
    ]);
    expect(byConn.declarations).not.toContain('files2');
    expect((await api('?q=workspace remove')).bindings.map((b) => b.binding)).toEqual(['files.remove']);
    expect((await api('?q=files.write')).bindings.map((b) => b.binding)).toEqual(['files.write']);
    expect((await api('?connection=files2')).bindings.map((b) => b.binding)).toEqual(['files2.delete_all']);
  });

  it('the declared result shapes are what createFilesBinding returns', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'islet-code-api-'));
    try {
      const files = createFilesBinding({ mode: 'workspace-write', workspaceDir: dir, enforcement: 'full' });
      const call = async (binding: string, args: unknown) => {
        const out = await files({ binding, argsJson: JSON.stringify(args) });
        expect(out.type).toBe('result');
        return JSON.parse((out as { valueJson: string }).valueJson) as Record<string, unknown>;
      };
      expect(Object.keys(await call('files.write', { path: 'a.txt', content: 'hi' })).sort()).toEqual([
        'path',
        'sizeBytes',
      ]);
      expect(Object.keys(await call('files.read', { path: 'a.txt' })).sort()).toEqual([
        'content',
        'encoding',
        'path',
        'sizeBytes',
      ]);
      expect(await call('files.list', null)).toEqual({ files: [{ path: 'a.txt', sizeBytes: 2 }] });
      expect(await call('files.remove', { path: 'a.txt' })).toEqual({ path: 'a.txt', removed: true });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
