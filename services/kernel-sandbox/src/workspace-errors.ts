/** Workspace errors: a stable `code` callers branch on (never the message). */
export type WorkspaceErrorCode =
  | 'invalid-path' // not a plain relative path (empty, NUL, too long, bad id, bad cursor)
  | 'outside-workspace' // `..`, an absolute path, or a symlink (anywhere on the way or at the end)
  | 'not-found'
  | 'is-directory'
  | 'file-too-large'
  | 'workspace-full'
  | 'unsupported-file-type' // a FIFO, socket or device: only regular files and directories are served
  | 'busy' // another writer held the workspace's reservation lock too long
  | 'io-error'
  | 'unavailable'; // the file helper could not be started or stopped answering

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
