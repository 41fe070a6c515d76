/**
 * The sandbox runtime: what a sandboxed process executes and reads as the per-run uid (the Node
 * binary, the engine's host script and everything it imports, the skill's javascript interpreter).
 * A root runner drops to another uid inside islet-jail, so these files must be reachable by a
 * stranger: every directory above them traversable, the files world-readable. When the application
 * directory is such a place (the image's /app) it is used in place; otherwise (a clone under root's
 * 0700 home, a `mktemp -d` folder) the runtime is copied once into a root-owned, world-readable,
 * content-addressed folder under ISLET_SANDBOX_RUNTIME_DIR (default /var/lib/islet/runtime) that
 * only root can write. Copying was chosen over passing descriptors opened before the uid drop
 * (fexecve): Node opens its script, its imports and isolated-vm's binary by path after exec, so a
 * descriptor for the binary alone would not be enough.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { PACKAGE_DIR } from './paths.ts';

/** The application root (the repository, or /app in the image). */
export const APP_ROOT = resolve(PACKAGE_DIR, '..', '..');

/**
 * What the sandbox host imports, relative to the application root. A new import of the host that
 * is missing here fails runtime.test.ts (the host is started from an installed copy there).
 */
export const RUNTIME_TREES = [
  'package.json',
  'services/engine/package.json',
  'services/engine/src',
  // The host's plain-JavaScript build (engine scripts/build.sh), started instead of src/host.ts when current.
  'services/engine/dist',
  'services/protocol/package.json',
  'services/protocol/src',
  'node_modules/@islet/engine',
  'node_modules/@islet/protocol',
  'node_modules/isolated-vm',
  'node_modules/node-gyp-build',
  'node_modules/zod',
] as const;

const DEFAULT_RUNTIME_DIR = '/var/lib/islet/runtime';
const COMPLETE_MARKER = '.islet-runtime-complete';

export interface SandboxRuntime {
  /** Where the runtime lives: the app root (in place) or the installed copy. */
  dir: string;
  /** Whether the files were copied (false: used in place). */
  installed: boolean;
  /** The Node binary a sandboxed process executes. */
  node: string;
  /** Directories the jail must let the sandbox read and execute (Landlock `--read`). */
  readPaths: string[];
  /** A source path (Node, a file of the app) → the path the sandbox uses; others unchanged. */
  map(path: string): string;
}

interface RuntimeOptions {
  /** Where to install when needed. Default $ISLET_SANDBOX_RUNTIME_DIR or /var/lib/islet/runtime. */
  baseDir?: string;
  /** Source application root. Default APP_ROOT. */
  appRoot?: string;
  /** Source Node binary. Default process.execPath. */
  node?: string;
  /** Install even when the sources are reachable (tests). */
  forceInstall?: boolean;
}

export class SandboxRuntimeError extends Error {
  override name = 'SandboxRuntimeError';
}

/** The first path component (from `/`) a stranger cannot traverse or read, with why; undefined if none. */
export function unreachableComponent(path: string, want: 'read' | 'exec' = 'read'): string | undefined {
  const parts = resolve(path).split(sep).filter(Boolean);
  let current = '/';
  for (let i = 0; i <= parts.length; i++) {
    if (i > 0) current = join(current, parts[i - 1]!);
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(current);
    } catch (err) {
      return `${current} (${(err as NodeJS.ErrnoException).code})`;
    }
    const last = i === parts.length;
    const mode = st.mode & 0o7777;
    if (st.isDirectory()) {
      if (!(mode & 0o001)) return `${current} (mode 0${mode.toString(8)}: not traversable by other users)`;
      if (last && !(mode & 0o004))
        return `${current} (mode 0${mode.toString(8)}: not readable by other users)`;
    } else if (last) {
      if (!(mode & 0o004)) return `${current} (mode 0${mode.toString(8)}: not readable by other users)`;
      if (want === 'exec' && !(mode & 0o001))
        return `${current} (mode 0${mode.toString(8)}: not executable by other users)`;
    }
  }
  return undefined;
}

/** A directory above the runtime must be root's alone: root-owned and not writable by others (sticky /tmp excepted). */
function notRootOnly(path: string): string | undefined {
  const parts = resolve(path).split(sep).filter(Boolean);
  let current = '/';
  for (let i = 0; i <= parts.length; i++) {
    if (i > 0) current = join(current, parts[i - 1]!);
    const st = statSync(current);
    const sticky = (st.mode & 0o1000) !== 0;
    if (st.uid !== 0) return `${current} is owned by uid ${st.uid}, not root`;
    if (st.mode & 0o022 && !(sticky && i < parts.length))
      return `${current} is writable by users other than root`;
  }
  return undefined;
}

function walkFiles(path: string, out: string[]): void {
  const st = lstatSync(path);
  if (st.isDirectory()) {
    for (const name of readdirSync(path).sort()) walkFiles(join(path, name), out);
  } else {
    out.push(path);
  }
}

/** Keys the installed copy: paths, sizes and modification times of every source file, and Node's version. */
function fingerprint(appRoot: string, node: string): string {
  const hash = createHash('sha256').update(process.version);
  const files: string[] = [node];
  for (const tree of RUNTIME_TREES) {
    const p = join(appRoot, tree);
    if (existsSync(p)) walkFiles(p, files);
  }
  for (const f of files) {
    const st = lstatSync(f);
    hash.update(`${relative(appRoot, f)}\0${st.size}\0${st.mtimeMs}\0`);
  }
  return hash.digest('hex').slice(0, 16);
}

/** Every file readable (and executable where any x bit was set) by everyone, directories 0755. */
function openUp(path: string): void {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return;
  if (st.isDirectory()) {
    chmodSync(path, 0o755);
    for (const name of readdirSync(path)) openUp(join(path, name));
  } else {
    chmodSync(path, st.mode & 0o111 ? 0o755 : 0o644);
  }
}

const isTestFile = (src: string) => /\.test\.ts$/.test(src);

function install(appRoot: string, node: string, baseDir: string): string {
  try {
    mkdirSync(baseDir, { recursive: true, mode: 0o755 });
  } catch (err) {
    throw new SandboxRuntimeError(
      `cannot create the sandbox runtime directory ${baseDir}: ${(err as Error).message}; set ISLET_SANDBOX_RUNTIME_DIR to a root-owned directory every user can traverse`,
    );
  }
  const owner = notRootOnly(baseDir);
  if (owner) throw new SandboxRuntimeError(`the sandbox runtime directory is not safe: ${owner}`);
  const target = join(baseDir, fingerprint(appRoot, node));
  if (existsSync(join(target, COMPLETE_MARKER))) return target;
  const tmp = join(baseDir, `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    mkdirSync(join(tmp, 'node', 'bin'), { recursive: true });
    cpSync(node, join(tmp, 'node', 'bin', 'node'));
    for (const tree of RUNTIME_TREES) {
      const src = join(appRoot, tree);
      if (!existsSync(src)) continue;
      cpSync(src, join(tmp, 'app', tree), {
        recursive: true,
        verbatimSymlinks: true,
        filter: (s) => !isTestFile(s),
      });
    }
    openUp(tmp);
    writeFileSync(join(tmp, COMPLETE_MARKER), `${new Date().toISOString()}\n`, { mode: 0o644 });
    try {
      renameSync(tmp, target);
    } catch (err) {
      // Another runner installed the same fingerprint first: theirs is as good as ours.
      if (!existsSync(join(target, COMPLETE_MARKER))) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return target;
}

function inPlace(appRoot: string, node: string): SandboxRuntime {
  const paths = [resolve(dirname(node), '..'), appRoot];
  return {
    dir: appRoot,
    installed: false,
    node,
    readPaths: [...new Set(paths)].filter((p) => existsSync(p)),
    map: (p) => p,
  };
}

const cache = new Map<string, SandboxRuntime>();

/**
 * The runtime the sandbox uses on this host, installed first when needed (idempotent, shared by
 * every process through the content address). Throws SandboxRuntimeError naming the path that
 * stops it: call it at start-up so a host where runs cannot start refuses to start.
 */
export function sandboxRuntime(opts: RuntimeOptions = {}): SandboxRuntime {
  const appRoot = opts.appRoot ?? APP_ROOT;
  const node = opts.node ?? process.execPath;
  const baseDir = opts.baseDir ?? process.env.ISLET_SANDBOX_RUNTIME_DIR ?? DEFAULT_RUNTIME_DIR;
  const key = `${appRoot}\0${node}\0${baseDir}\0${opts.forceInstall ?? false}`;
  const known = cache.get(key);
  if (known) return known;
  let runtime: SandboxRuntime;
  // Not root: the sandbox keeps this uid, which reaches what this process reaches.
  const root = process.getuid?.() === 0;
  const blocked =
    unreachableComponent(node, 'exec') ??
    unreachableComponent(join(appRoot, 'services/engine/src/host.ts')) ??
    unreachableComponent(join(appRoot, 'node_modules/isolated-vm/package.json'));
  if (!opts.forceInstall && (!root || !blocked)) {
    runtime = inPlace(appRoot, node);
  } else {
    let dir: string;
    try {
      dir = install(appRoot, node, baseDir);
    } catch (err) {
      const why = err instanceof SandboxRuntimeError ? err.message : (err as Error).message;
      throw new SandboxRuntimeError(
        `the sandbox runtime is not reachable by the sandbox uid${blocked ? ` (${blocked})` : ''} and could not be installed under ${baseDir}: ${why}`,
      );
    }
    const installedNode = join(dir, 'node', 'bin', 'node');
    const stillBlocked = unreachableComponent(installedNode, 'exec');
    if (stillBlocked)
      throw new SandboxRuntimeError(`the installed sandbox runtime is not reachable: ${stillBlocked}`);
    const appPrefix = appRoot.endsWith(sep) ? appRoot : `${appRoot}${sep}`;
    runtime = {
      dir,
      installed: true,
      node: installedNode,
      readPaths: [dir],
      map: (p) => {
        if (p === node) return installedNode;
        if (!p.startsWith(appPrefix)) return p;
        const rel = p.slice(appPrefix.length);
        const inTree = RUNTIME_TREES.some((t) => rel === t || rel.startsWith(`${t}${sep}`));
        return inTree ? join(dir, 'app', rel) : p;
      },
    };
  }
  cache.set(key, runtime);
  return runtime;
}
