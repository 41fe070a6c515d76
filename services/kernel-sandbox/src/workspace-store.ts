/**
 * Session workspaces: a directory per (tenant, session) under a configurable root (a shared volume
 * in Kubernetes). Tenants put and get files over HTTP; programs reach them through the files binding.
 *
 * Nothing here opens a tenant path by name. Paths are checked for shape (relative, no `..`, no NUL)
 * and then handed to `islet-files`, which resolves them with openat2 beneath the workspace's
 * directory fd (no symlinks, no magic links, no mount crossing) and serves only regular files and
 * directories: a tenant that swaps a directory for a symlink mid-request gets a refusal, never
 * another place. Errors are `WorkspaceError`s with a stable `code`; callers branch on the code.
 */
import { join, resolve } from 'node:path';
import { type FilesHelper, filesHelperFor } from './files-helper.ts';
import { WorkspaceError } from './workspace-errors.ts';

export { isWorkspaceError, WorkspaceError, type WorkspaceErrorCode } from './workspace-errors.ts';

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

interface FileEntry {
  path: string;
  sizeBytes: number;
  modifiedAtMs: number;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const MAX_PATH_CHARS = 1024;

/** Tenant and session ids become directory names: plain, bounded, never `.`/`..`. */
function checkId(kind: string, id: string): string {
  if (!ID_RE.test(id) || id.includes('..')) {
    throw new WorkspaceError(
      'invalid-path',
      `invalid ${kind}: expected 1-128 letters, digits, '.', '_' or '-'`,
    );
  }
  return id;
}

/** Splits a workspace-relative path into checked segments. */
function splitRelativePath(path: string): string[] {
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

/** One page of a listing: `nextCursor` is present when more files follow. */
interface FilePage {
  files: FileEntry[];
  nextCursor?: string;
}

/** Most entries one listing page returns (and its default). */
export const MAX_LIST_LIMIT = 1000;

interface WorkspaceUsage {
  bytes: number;
  /** Every entry that is not a directory (regular files, and anything else a skill left). */
  files: number;
  directories: number;
  /** True when the workspace exceeds its byte or file limit: further writes are refused. */
  over: boolean;
}

interface FileStat {
  type: 'file' | 'directory' | 'other';
  sizeBytes: number;
  modifiedAtMs: number;
}

function encodeCursor(path: string): string {
  return Buffer.from(path, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const path = Buffer.from(cursor, 'base64url').toString('utf8');
  if (cursor.length > 2000 || encodeCursor(path) !== cursor || path.includes('\0')) {
    throw new WorkspaceError('invalid-path', 'invalid cursor: pass the nextCursor of the previous page');
  }
  return path;
}

function u64(buf: Buffer, at: number): number {
  return Number(buf.readBigUInt64LE(at));
}

/** Where a workspace is: the helper's root and the workspace relative to it. */
interface Location {
  root: string;
  ws: string;
}

/** One workspace directory and its operations. */
export class Workspace {
  readonly dir: string;
  readonly limits: Required<WorkspaceLimits>;
  private readonly ws: string;
  private readonly helper: FilesHelper;

  /**
   * `dir` is trusted (the platform's own path); everything below it is the tenant's. A store passes
   * `location` so the helper resolves even `<tenant>/<session>` beneath the workspace root.
   */
  constructor(dir: string, limits: WorkspaceLimits = {}, location?: Location) {
    this.dir = dir;
    this.limits = { ...DEFAULT_WORKSPACE_LIMITS, ...limits };
    this.ws = location?.ws ?? '.';
    this.helper = filesHelperFor(location?.root ?? dir);
  }

  private call(
    op: Parameters<FilesHelper['request']>[0]['op'],
    fields: Omit<Parameters<FilesHelper['request']>[0], 'op' | 'ws'> = {},
  ) {
    return this.helper.request({ op, ws: this.ws, ...fields });
  }

  async read(path: string): Promise<Buffer> {
    const rel = splitRelativePath(path).join('/');
    return Buffer.from(await this.call('read', { path: rel, n1: this.limits.maxFileBytes }));
  }

  /**
   * Writes atomically (temp file + rename beneath the parent's fd). The byte and file limits are
   * checked and the write done under the workspace's lock, so parallel writers (other requests,
   * replicas, runners) cannot together exceed them; a workspace already over (e.g. after a skill)
   * refuses every write that would not bring it back under.
   */
  async write(path: string, data: Buffer): Promise<FileEntry> {
    const rel = splitRelativePath(path).join('/');
    if (data.length > this.limits.maxFileBytes) {
      throw new WorkspaceError('file-too-large', `file is larger than ${this.limits.maxFileBytes} bytes`);
    }
    const out = await this.call('write', {
      path: rel,
      data,
      n1: this.limits.maxFileBytes,
      n2: this.limits.maxWorkspaceBytes,
      n3: this.limits.maxFiles,
    });
    return { path: rel, sizeBytes: u64(out, 0), modifiedAtMs: u64(out, 8) };
  }

  /**
   * Regular files in path order, one page at a time; symlinks and special files are neither listed
   * nor followed. `prefix` names a directory (everything under it) or a file.
   */
  async listPage(prefix = '', page: { cursor?: string; limit?: number } = {}): Promise<FilePage> {
    const wanted = prefix ? splitRelativePath(prefix).join('/') : '';
    const limit = page.limit ?? MAX_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new WorkspaceError(
        'invalid-path',
        `invalid limit: expected an integer from 1 to ${MAX_LIST_LIMIT}`,
      );
    }
    const after = page.cursor ? decodeCursor(page.cursor) : '';
    const out = await this.call('list', { path: wanted, path2: after, n1: limit });
    const files: FileEntry[] = [];
    for (let at = 1; at + 18 <= out.length; ) {
      const sizeBytes = u64(out, at);
      const modifiedAtMs = u64(out, at + 8);
      const len = out.readUInt16LE(at + 16);
      files.push({ path: out.subarray(at + 18, at + 18 + len).toString('utf8'), sizeBytes, modifiedAtMs });
      at += 18 + len;
    }
    const more = out[0] === 1 && files.length > 0;
    return more ? { files, nextCursor: encodeCursor(files[files.length - 1]!.path) } : { files };
  }

  /** Every page (bounded by the walk); for callers that need the whole list, e.g. tests. */
  async list(prefix = ''): Promise<FileEntry[]> {
    const all: FileEntry[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.listPage(prefix, cursor ? { cursor } : {});
      all.push(...page.files);
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  }

  /** Removes one file (a symlink or special file itself, never a target); `false` when there was none. */
  async remove(path: string): Promise<boolean> {
    const rel = splitRelativePath(path).join('/');
    const out = await this.call('remove', { path: rel });
    return out[0] === 1;
  }

  /** Renames a file or directory inside the workspace (creating the target's parents). */
  async rename(from: string, to: string): Promise<void> {
    await this.call('rename', {
      path: splitRelativePath(from).join('/'),
      path2: splitRelativePath(to).join('/'),
    });
  }

  async mkdir(path: string): Promise<void> {
    await this.call('mkdir', { path: splitRelativePath(path).join('/') });
  }

  async stat(path: string): Promise<FileStat> {
    const out = await this.call('stat', { path: splitRelativePath(path).join('/') });
    const type = out[0] === 1 ? 'file' : out[0] === 2 ? 'directory' : 'other';
    return { type, sizeBytes: u64(out, 1), modifiedAtMs: u64(out, 9) };
  }

  /** Walks the whole workspace (fds only) and compares it with the limits. */
  async usage(): Promise<WorkspaceUsage> {
    const out = await this.call('usage');
    const bytes = u64(out, 0);
    const files = u64(out, 8);
    const directories = u64(out, 16);
    const capped = out[24] === 1;
    const max = this.limits.maxFiles;
    const over = capped || bytes > this.limits.maxWorkspaceBytes || files > max || directories > max;
    return { bytes, files, directories, over };
  }
}

interface WorkspaceStoreOptions extends WorkspaceLimits {
  /** The directory holding `<tenant>/<session>` workspaces. */
  root: string;
}

/** Workspaces of every tenant under one root. A tenant only ever names its own sessions. */
export class WorkspaceStore {
  readonly root: string;
  readonly limits: WorkspaceLimits;
  private readonly helper: FilesHelper;

  constructor(opts: WorkspaceStoreOptions) {
    const { root, ...limits } = opts;
    this.root = resolve(root);
    this.limits = limits;
    this.helper = filesHelperFor(this.root);
  }

  private wsOf(tenant: string, session: string): string {
    return `${checkId('tenant', tenant)}/${checkId('session', session)}`;
  }

  /** The session's workspace directory (not created). */
  dirFor(tenant: string, session: string): string {
    return join(this.root, this.wsOf(tenant, session));
  }

  workspace(tenant: string, session: string): Workspace {
    const ws = this.wsOf(tenant, session);
    return new Workspace(join(this.root, ws), this.limits, { root: this.root, ws });
  }

  /** Creates the session's workspace when missing (beneath the root, no symlinks) and returns its directory. */
  async ensure(tenant: string, session: string): Promise<string> {
    const ws = this.wsOf(tenant, session);
    await this.helper.request({ op: 'ensure', ws });
    return join(this.root, ws);
  }

  async exists(tenant: string, session: string): Promise<boolean> {
    try {
      const out = await this.helper.request({ op: 'stat', ws: this.wsOf(tenant, session) });
      return out[0] === 2;
    } catch (err) {
      if (err instanceof WorkspaceError && (err.code === 'not-found' || err.code === 'outside-workspace'))
        return false;
      throw err;
    }
  }

  /** The session workspace's usage against the limits (the runner asks after each skill). */
  async usage(tenant: string, session: string): Promise<WorkspaceUsage> {
    return this.workspace(tenant, session).usage();
  }

  /** Deletes the whole session workspace (rm -r by fds, beneath the root). */
  async drop(tenant: string, session: string): Promise<void> {
    await this.helper.request({ op: 'drop', ws: this.wsOf(tenant, session) });
  }
}
