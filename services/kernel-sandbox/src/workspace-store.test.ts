import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createFilesBinding, isFileSandboxDenial } from './files-binding.ts';
import { closeFilesHelpers } from './files-helper.ts';
import { WorkspaceStore } from './workspace-store.ts';

const base = mkdtempSync(join(tmpdir(), 'islet-ws-'));
afterAll(() => {
  closeFilesHelpers(); // the islet-files helpers this file started
  rmSync(base, { recursive: true, force: true });
});

const store = new WorkspaceStore({
  root: join(base, 'root'),
  maxFileBytes: 1000,
  maxWorkspaceBytes: 2500,
  maxFiles: 5,
});

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

describe('WorkspaceStore', () => {
  it('puts, gets, lists and removes files under <root>/<tenant>/<session>', async () => {
    const ws = store.workspace('t1', 's1');
    expect(store.dirFor('t1', 's1')).toBe(join(base, 'root', 't1', 's1'));
    await ws.write('a/b/c.txt', Buffer.from('hello'));
    await ws.write('top.txt', Buffer.from('x'));
    expect((await ws.read('a/b/c.txt')).toString()).toBe('hello');
    expect((await ws.list()).map((f) => [f.path, f.sizeBytes])).toEqual([
      ['a/b/c.txt', 5],
      ['top.txt', 1],
    ]);
    expect((await ws.list('a')).map((f) => f.path)).toEqual(['a/b/c.txt']);
    expect(await ws.remove('top.txt')).toBe(true);
    expect(await ws.remove('top.txt')).toBe(false);
    expect(await codeOf(ws.read('top.txt'))).toBe('not-found');
  });

  it('refuses traversal, absolute paths, NUL and bad ids', async () => {
    const ws = store.workspace('t1', 's1');
    expect(await codeOf(ws.read('../s2/x'))).toBe('outside-workspace');
    expect(await codeOf(ws.write('a/../../x', Buffer.from('')))).toBe('outside-workspace');
    expect(await codeOf(ws.read('/etc/passwd'))).toBe('outside-workspace');
    expect(await codeOf(ws.read('a\0b'))).toBe('invalid-path');
    expect(await codeOf(ws.read(''))).toBe('invalid-path');
    expect(() => store.dirFor('..', 's1')).toThrow(/invalid tenant/);
    expect(() => store.dirFor('t1', 'a/b')).toThrow(/invalid session/);
  });

  it('refuses symlinks on the way and at the end, in both directions', async () => {
    const dir = await store.ensure('t1', 'links');
    const secret = join(base, 'secret.txt');
    writeFileSync(secret, 'host secret');
    mkdirSync(join(base, 'elsewhere'), { recursive: true });
    symlinkSync(secret, join(dir, 'leak.txt'));
    symlinkSync(join(base, 'elsewhere'), join(dir, 'dir-link'));
    const ws = store.workspace('t1', 'links');
    expect(await codeOf(ws.read('leak.txt'))).toBe('outside-workspace');
    expect(await codeOf(ws.write('leak.txt', Buffer.from('overwrite')))).toBe('outside-workspace');
    expect(await codeOf(ws.write('dir-link/x.txt', Buffer.from('x')))).toBe('outside-workspace');
    expect(await codeOf(ws.read('dir-link/x.txt'))).toBe('outside-workspace');
    expect((await ws.list()).map((f) => f.path)).toEqual([]); // links are neither listed nor followed
    expect(await ws.remove('leak.txt')).toBe(true); // removes the link, never the target
    expect((await import('node:fs')).readFileSync(secret, 'utf8')).toBe('host secret');
  });

  it('enforces the file, workspace and count limits', async () => {
    const ws = store.workspace('t1', 'limits');
    expect(await codeOf(ws.write('big', Buffer.alloc(1001)))).toBe('file-too-large');
    await ws.write('a', Buffer.alloc(1000));
    await ws.write('b', Buffer.alloc(1000));
    expect(await codeOf(ws.write('c', Buffer.alloc(600)))).toBe('workspace-full');
    await ws.write('a', Buffer.alloc(900)); // replacing counts the new size only
    for (const n of ['c', 'd', 'e']) await ws.write(n, Buffer.alloc(1));
    expect(await codeOf(ws.write('f', Buffer.alloc(1)))).toBe('workspace-full');
  });
});

describe('files binding', () => {
  const call = (binding: string, args: unknown) => ({ binding, argsJson: JSON.stringify(args) });

  it('read-only reads and lists; writes and removes fail with the contract text', async () => {
    const dir = await store.ensure('t2', 'ro');
    writeFileSync(join(dir, 'in.txt'), 'input');
    const files = createFilesBinding({ mode: 'read-only', workspaceDir: dir, enforcement: 'full' });
    const read = await files(call('files.read', { path: 'in.txt' }));
    expect(read).toEqual({
      type: 'result',
      valueJson: JSON.stringify({ path: 'in.txt', encoding: 'utf8', content: 'input', sizeBytes: 5 }),
    });
    expect(await files(call('files.list', {}))).toEqual({
      type: 'result',
      valueJson: JSON.stringify({ files: [{ path: 'in.txt', sizeBytes: 5 }] }),
    });
    for (const op of ['files.write', 'files.remove']) {
      const out = await files(call(op, { path: 'in.txt', content: 'x' }));
      expect(out).toMatchObject({
        type: 'error',
        name: 'AppCallFailed',
        message: 'File sandbox: read-only; enforcement: full; operation denied',
        details: { reason: 'mode', operation: op, path: 'in.txt' },
      });
      expect(isFileSandboxDenial(out)).toBe(true);
    }
  });

  it('workspace-write writes inside the workspace and is denied outside it', async () => {
    const dir = await store.ensure('t2', 'rw');
    const files = createFilesBinding({ mode: 'workspace-write', workspaceDir: dir, enforcement: 'partial' });
    expect(await files(call('files.write', { path: 'out/r.json', content: '{"a":1}' }))).toEqual({
      type: 'result',
      valueJson: JSON.stringify({ path: 'out/r.json', sizeBytes: 7 }),
    });
    const b64 = await files(call('files.read', { path: 'out/r.json', encoding: 'base64' }));
    expect(JSON.parse((b64 as { valueJson: string }).valueJson).content).toBe(
      Buffer.from('{"a":1}').toString('base64'),
    );
    const escaped = await files(call('files.write', { path: '../ro/in.txt', content: 'pwned' }));
    expect(escaped).toMatchObject({
      type: 'error',
      name: 'AppCallFailed',
      message: 'File sandbox: workspace-write; enforcement: partial; operation denied',
      details: { reason: 'outside-workspace' },
    });
    expect(await files(call('files.remove', { path: 'out/r.json' }))).toEqual({
      type: 'result',
      valueJson: JSON.stringify({ path: 'out/r.json', removed: true }),
    });
  });

  it('answers bad arguments and unknown files as AppCallFailed, never throwing', async () => {
    const dir = await store.ensure('t2', 'bad');
    const files = createFilesBinding({ mode: 'danger-full-access', workspaceDir: dir, enforcement: 'full' });
    expect(await files({ binding: 'files.read', argsJson: '[1]' })).toMatchObject({
      name: 'AppCallFailed',
      details: { reason: 'invalid-arguments' },
    });
    expect(await files(call('files.read', { path: 'missing.txt' }))).toMatchObject({
      name: 'AppCallFailed',
      message: 'files.read: no such file: missing.txt',
      details: { reason: 'not-found' },
    });
    expect(await files(call('files.chmod', {}))).toMatchObject({ details: { reason: 'unknown-binding' } });
    expect(isFileSandboxDenial(await files(call('files.read', { path: 'missing.txt' })))).toBe(false);
  });
});
