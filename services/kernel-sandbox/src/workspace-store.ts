/**
 * Session workspaces: a directory per (tenant, session) under a configurable root (a shared volume
 * in Kubernetes). Tenants put and get files over HTTP; programs reach them through the files binding.
 *
 * Every path is checked before it touches the disk: relative, no `..`, no NUL, no symlink on the way
 * (lstat each segment, O_NOFOLLOW on the last, realpath of the parent must stay inside the workspace).
 * Errors are `WorkspaceError`s with a stable `code`; callers branch on the code, never the message.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, rename, rm, unlink } from 'node:fs/promises';
import { join, sep } from 'node:path';

export type WorkspaceErrorCode =
  | 'invalid-path' // not a plain relative path (empty, NUL, too long, bad id)
  | 'outside-workspace' // `..`, an absolute path, or a symlink that would leave the workspace
  | 'not-found'
  | 'is-directory'
  | 'file-too-large'
  | 'workspace-full';

export class WorkspaceError extends Error {
  readonly code: WorkspaceErrorCode;
  constructor(code: WorkspaceErrorCode, message: string) {
    super(message);
    this.name = 'WorkspaceError';
    this.code = code;
  }
}

export function isWorkspaceError(err: unknown): err is WorkspaceError {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'WorkspaceError';
}

export interface WorkspaceLimits {
  /** Largest single file, bytes. Default 10485760 (10 MiB). */
  maxFileBytes?: number;
  /** All files of one workspace together, bytes. Default 104857600 (100 MiB). */
  maxWorkspaceBytes?: number;
  /** Files in one workspace. Default 1000. */
  maxFiles?: number;
}

export const DEFAULT_WORKSPACE_LIMITS: Required<WorkspaceLimits> = {
  maxFileBytes: 10 * 1024 * 1024,
  maxWorkspaceBytes: 100 * 1024 * 1024,
  maxFiles: 1000,
};

export interface FileEntry {
  path: string;
  sizeBytes: number;
  modifiedAtMs: number;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const MAX_PATH_CHARS = 1024;

/** Tenant and session ids become directory names: plain, bounded, never `.`/`..`. */
export function checkId(kind: string, id: string): string {
  if (!ID_RE.test(id) || id.includes('..')) {
    throw new WorkspaceError(
      'invalid-path',
      `invalid ${kind}: expected 1-128 letters, digits, '.', '_' or '-'`,
    );
  }
  return id;
}

/** Splits a workspace-relative path into checked segments. */
export function splitRelativePath(path: string): string[] {
  if (typeof path !== 'string' || path.length === 0) {
    throw new WorkspaceError('invalid-path', 'invalid path: expected a non-empty relative path');
  }
  if (path.includes('\0')) throw new WorkspaceError('invalid-path', 'invalid path: contains a NUL byte');
  if (path.length > MAX_PATH_CHARS) {
    throw new WorkspaceError('invalid-path', `invalid path: longer than ${MAX_PATH_CHARS} characters`);
  }
  if (path.startsWith('/') || path.startsWith('\\')) {
    throw new WorkspaceError('outside-workspace', 'path is absolute; paths are relative to the workspace');
  }
  const segments = path.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..')) {
    throw new WorkspaceError('outside-workspace', "path contains '..'; it must stay inside the workspace");
  }
  if (segments.length === 0) throw new WorkspaceError('invalid-path', 'invalid path: names no file');
  if (segments.some((s) => s.length > 255))
    throw new WorkspaceError('invalid-path', 'invalid path: a name is too long');
  return segments;
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** One workspace directory and its operations. The directory must already exist for reads. */
export class Workspace {
  readonly dir: string;
  readonly limits: Required<WorkspaceLimits>;

  constructor(dir: string, limits: WorkspaceLimits = {}) {
    this.dir = dir;
    this.limits = { ...DEFAULT_WORKSPACE_LIMITS, ...limits };
  }

  /** Resolves a relative path to an absolute one inside the workspace, refusing symlinks on the way. */
  private async resolve(path: string, createParents: boolean): Promise<string> {
    const segments = splitRelativePath(path);
    let current = this.dir;
    for (const segment of segments.slice(0, -1)) {
      current = join(current, segment);
      const st = await lstat(current).catch((err) => {
        if (errno(err) === 'ENOENT') return undefined;
        throw err;
      });
      if (st === undefined) {
        if (!createParents) throw new WorkspaceError('not-found', `no such file: ${path}`);
        await mkdir(current, { mode: 0o755 });
        continue;
      }
      if (st.isSymbolicLink())
        throw new WorkspaceError('outside-workspace', `path goes through a symlink: ${path}`);
      if (!st.isDirectory()) throw new WorkspaceError('not-found', `not a directory on the way: ${path}`);
    }
    const real = (p: string) =>
      realpath(p).catch((err) => {
        if (errno(err) === 'ENOENT') throw new WorkspaceError('not-found', `no such file: ${path}`);
        throw err;
      });
    const parentReal = await real(current);
    const rootReal = await real(this.dir);
    if (parentReal !== rootReal && !parentReal.startsWith(rootReal + sep)) {
      throw new WorkspaceError('outside-workspace', `path leaves the workspace: ${path}`);
    }
    return join(parentReal, segments[segments.length - 1]!);
  }

  async read(path: string): Promise<Buffer> {
    const abs = await this.resolve(path, false);
    let handle: import('node:fs/promises').FileHandle;
    try {
      handle = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if (errno(err) === 'ENOENT') throw new WorkspaceError('not-found', `no such file: ${path}`);
      if (errno(err) === 'ELOOP') throw new WorkspaceError('outside-workspace', `path is a symlink: ${path}`);
      throw err;
    }
    try {
      const st = await handle.stat();
      if (st.isDirectory()) throw new WorkspaceError('is-directory', `is a directory: ${path}`);
      if (st.size > this.limits.maxFileBytes) {
        throw new WorkspaceError(
          'file-too-large',
          `file is larger than ${this.limits.maxFileBytes} bytes: ${path}`,
        );
      }
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }

  /** Writes atomically (temp file + rename) after checking the file and workspace limits. */
  async write(path: string, data: Buffer): Promise<FileEntry> {
    if (data.length > this.limits.maxFileBytes) {
      throw new WorkspaceError('file-too-large', `file is larger than ${this.limits.maxFileBytes} bytes`);
    }
    await mkdir(this.dir, { recursive: true, mode: 0o755 });
    const abs = await this.resolve(path, true);
    const existing = await lstat(abs).catch(() => undefined);
    if (existing?.isSymbolicLink())
      throw new WorkspaceError('outside-workspace', `path is a symlink: ${path}`);
    if (existing?.isDirectory()) throw new WorkspaceError('is-directory', `is a directory: ${path}`);
    const files = await this.list();
    const used = files.reduce((n, f) => n + f.sizeBytes, 0) - (existing?.size ?? 0);
    if (used + data.length > this.limits.maxWorkspaceBytes) {
      throw new WorkspaceError(
        'workspace-full',
        `the workspace would exceed ${this.limits.maxWorkspaceBytes} bytes`,
      );
    }
    if (!existing && files.length >= this.limits.maxFiles) {
      throw new WorkspaceError('workspace-full', `the workspace already holds ${this.limits.maxFiles} files`);
    }
    const tmp = `${abs}.islet-${process.pid}-${Date.now()}.tmp`;
    const handle = await open(
      tmp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o644,
    );
    try {
      await handle.writeFile(data);
    } finally {
      await handle.close();
    }
    await rename(tmp, abs);
    const rel = splitRelativePath(path).join('/');
    return { path: rel, sizeBytes: data.length, modifiedAtMs: Date.now() };
  }

  /** Regular files, recursively, sorted; symlinks and other special files are not listed or followed. */
  async list(prefix = ''): Promise<FileEntry[]> {
    const out: FileEntry[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch((err) => {
        if (errno(err) === 'ENOENT') return [];
        throw err;
      });
      for (const e of entries) {
        const relPath = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) await walk(join(dir, e.name), relPath);
        else if (e.isFile()) {
          const st = await lstat(join(dir, e.name)).catch(() => undefined);
          if (st) out.push({ path: relPath, sizeBytes: st.size, modifiedAtMs: Math.floor(st.mtimeMs) });
        }
      }
    };
    await walk(this.dir, '');
    const wanted = prefix ? splitRelativePath(prefix).join('/') : '';
    return out
      .filter((f) => !wanted || f.path === wanted || f.path.startsWith(`${wanted}/`))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** Removes one file; `false` when there was none. Directories are not removed. */
  async remove(path: string): Promise<boolean> {
    let abs: string;
    try {
      abs = await this.resolve(path, false);
    } catch (err) {
      if (isWorkspaceError(err) && err.code === 'not-found') return false;
      throw err;
    }
    const st = await lstat(abs).catch(() => undefined);
    if (!st) return false;
    if (st.isDirectory()) throw new WorkspaceError('is-directory', `is a directory: ${path}`);
    await unlink(abs); // unlink removes a symlink itself, never its target
    return true;
  }
}

export interface WorkspaceStoreOptions extends WorkspaceLimits {
  /** The directory holding `<tenant>/<session>` workspaces. */
  root: string;
}

/** Workspaces of every tenant under one root. A tenant only ever names its own sessions. */
export class WorkspaceStore {
  readonly root: string;
  readonly limits: WorkspaceLimits;

  constructor(opts: WorkspaceStoreOptions) {
    const { root, ...limits } = opts;
    this.root = root;
    this.limits = limits;
  }

  /** The session's workspace directory (not created). */
  dirFor(tenant: string, session: string): string {
    return join(this.root, checkId('tenant', tenant), checkId('session', session));
  }

  workspace(tenant: string, session: string): Workspace {
    return new Workspace(this.dirFor(tenant, session), this.limits);
  }

  /** Creates the session's workspace when missing and returns its directory. */
  async ensure(tenant: string, session: string): Promise<string> {
    const dir = this.dirFor(tenant, session);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    return dir;
  }

  async exists(tenant: string, session: string): Promise<boolean> {
    const st = await lstat(this.dirFor(tenant, session)).catch(() => undefined);
    return st?.isDirectory() ?? false;
  }

  /** Deletes the whole session workspace. */
  async drop(tenant: string, session: string): Promise<void> {
    await rm(this.dirFor(tenant, session), { recursive: true, force: true });
  }
}
