/**
 * The built-in files binding: the only way an isolate program reaches workspace files.
 * `files.read`, `files.list` in every mode; `files.write`, `files.remove` in workspace-write and
 * danger-full-access. A refused change fails with the contract's text
 * `File sandbox: <mode>; enforcement: <e>; operation denied` as an AppCallFailed error.
 *
 * The handler is shaped like the engine's BindingHandler (call in, outcome out, never throws),
 * so the runner can route `files.*` calls here before any App.
 */
import type { SandboxMode } from '@islet/protocol';
import { type Enforcement, fileSandboxDeniedText } from './facts.ts';
import { isWorkspaceError, Workspace, type WorkspaceLimits } from './workspace-store.ts';

export const FILES_BINDING_NAMES = ['files.read', 'files.write', 'files.list', 'files.remove'] as const;
type FilesBindingName = (typeof FILES_BINDING_NAMES)[number];

const WRITES: ReadonlySet<string> = new Set(['files.write', 'files.remove']);

interface FilesCall {
  binding: string;
  argsJson: string;
}

type FilesOutcome =
  | { type: 'result'; valueJson: string }
  | { type: 'error'; name: 'AppCallFailed'; message: string; details?: Record<string, unknown> };

interface FilesBindingOptions {
  mode: SandboxMode;
  /** The session's workspace directory (used when `workspace` is not given). */
  workspaceDir: string;
  /** The session's workspace from a store (resolves the session beneath the store's root). */
  workspace?: Workspace;
  /** What the kernel layer achieved for this run (from the launcher's report); named in denials. */
  enforcement: Enforcement;
  limits?: WorkspaceLimits;
}

export type FilesBindingHandler = (call: FilesCall) => Promise<FilesOutcome>;

export function isFilesBinding(name: string): name is FilesBindingName {
  return (FILES_BINDING_NAMES as readonly string[]).includes(name);
}

/**
 * True for an outcome this binding produced because the file sandbox refused the operation; the
 * runner marks the run's sandbox facts `denied` so a failed run says `File sandbox: …; operation denied`.
 */
export function isFileSandboxDenial(outcome: { type: string; details?: Record<string, unknown> }): boolean {
  const reason = outcome.details?.reason;
  return outcome.type === 'error' && (reason === 'mode' || reason === 'outside-workspace');
}

function failed(message: string, details: Record<string, unknown>): FilesOutcome {
  return { type: 'error', name: 'AppCallFailed', message, details };
}

function result(value: unknown): FilesOutcome {
  return { type: 'result', valueJson: JSON.stringify(value) };
}

function argsOf(argsJson: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(argsJson);
    if (v === null) return {};
    return typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** `(mode, workspaceDir) → handler`. Denials carry `details.reason`: `mode` or `outside-workspace`. */
export function createFilesBinding(opts: FilesBindingOptions): FilesBindingHandler {
  const ws = opts.workspace ?? new Workspace(opts.workspaceDir, opts.limits);
  const denied = (operation: string, reason: string, path?: unknown): FilesOutcome =>
    failed(fileSandboxDeniedText(opts.mode, opts.enforcement), {
      reason,
      operation,
      mode: opts.mode,
      enforcement: opts.enforcement,
      ...(typeof path === 'string' ? { path } : {}),
    });

  return async (call) => {
    const op = call.binding;
    if (!isFilesBinding(op)) return failed(`unknown files binding: ${op}`, { reason: 'unknown-binding' });
    const args = argsOf(call.argsJson);
    if (!args) return failed(`${op}: expected an object argument`, { reason: 'invalid-arguments' });
    if (WRITES.has(op) && opts.mode === 'read-only') return denied(op, 'mode', args.path);
    try {
      switch (op) {
        case 'files.read': {
          if (typeof args.path !== 'string')
            return failed(`${op}: path must be a string`, { reason: 'invalid-arguments' });
          const encoding = args.encoding === 'base64' ? 'base64' : 'utf8';
          const data = await ws.read(args.path);
          return result({
            path: args.path,
            encoding,
            content: data.toString(encoding),
            sizeBytes: data.length,
          });
        }
        case 'files.write': {
          if (typeof args.path !== 'string' || typeof args.content !== 'string') {
            return failed(`${op}: path and content must be strings`, { reason: 'invalid-arguments' });
          }
          const encoding = args.encoding === 'base64' ? 'base64' : 'utf8';
          const entry = await ws.write(args.path, Buffer.from(args.content, encoding));
          return result({ path: entry.path, sizeBytes: entry.sizeBytes });
        }
        case 'files.list': {
          const prefix = typeof args.prefix === 'string' ? args.prefix : '';
          if (args.cursor !== undefined && typeof args.cursor !== 'string')
            return failed(`${op}: cursor must be a string`, { reason: 'invalid-arguments' });
          if (args.limit !== undefined && typeof args.limit !== 'number')
            return failed(`${op}: limit must be a number`, { reason: 'invalid-arguments' });
          const page = await ws.listPage(prefix, {
            ...(args.cursor ? { cursor: args.cursor } : {}),
            ...(args.limit !== undefined ? { limit: args.limit } : {}),
          });
          return result({
            files: page.files.map((f) => ({ path: f.path, sizeBytes: f.sizeBytes })),
            ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
          });
        }
        case 'files.remove': {
          if (typeof args.path !== 'string')
            return failed(`${op}: path must be a string`, { reason: 'invalid-arguments' });
          return result({ path: args.path, removed: await ws.remove(args.path) });
        }
      }
    } catch (err) {
      if (isWorkspaceError(err)) {
        if (err.code === 'outside-workspace') return denied(op, 'outside-workspace', args.path);
        return failed(`${op}: ${err.message}`, { reason: err.code });
      }
      return failed(`${op}: the file operation failed`, { reason: 'io-error' });
    }
    return failed(`unknown files binding: ${op}`, { reason: 'unknown-binding' });
  };
}
