/**
 * The workspaces' dependency graph, read from the files themselves: each workspace's package.json
 * (`@islet/*` dependencies, dev and peer ones included) and each source file's imports (`@islet/*`
 * specifiers, and relative paths resolved to the file and the workspace they land in).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export interface Workspace {
  /** Directory name under services/ or examples/ (`gateway`, `http-app`). */
  dir: string;
  root: string;
  name: string;
  declared: string[];
}

export interface ImportEdge {
  from: string;
  to: string;
  /** `type`: `import type` / `export type` only, gone after type stripping. */
  typeOnly: boolean;
}

const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', 'build', '.toolchain', 'generated']);

export function workspaces(repo: string): Workspace[] {
  const roots = ['services', 'examples'].flatMap((top) =>
    existsSync(join(repo, top))
      ? readdirSync(join(repo, top))
          .map((d) => join(repo, top, d))
          .filter((d) => existsSync(join(d, 'package.json')))
      : [],
  );
  return roots.map((root) => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | string | undefined
    >;
    const deps = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'].flatMap(
      (field) => Object.keys((pkg[field] as Record<string, string> | undefined) ?? {}),
    );
    return {
      dir: root.split('/').at(-1) ?? root,
      root,
      name: String(pkg.name),
      declared: [...new Set(deps.filter((d) => d.startsWith('@islet/')))],
    };
  });
}

export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.isDirectory())
      return SKIP_DIRS.has(e.name) || e.name.startsWith('.') ? [] : sourceFiles(join(dir, e.name));
    return SOURCE.test(e.name) && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [];
  });
}

/** The code without its comments (a comment may quote an import). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/** Every module specifier a file imports or re-exports, with whether only types cross. */
export function importsOf(text: string): { spec: string; typeOnly: boolean }[] {
  const out: { spec: string; typeOnly: boolean }[] = [];
  const src = code(text);
  const statement = /\b(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/g;
  for (const m of src.matchAll(statement)) {
    const named = m[3] ?? '';
    // `import { type A, type B }`: every name a type.
    const allTypes =
      /^\{[^}]*\}$/.test(named.trim()) &&
      named.split(',').every((n) => /^\s*\{?\s*type\s/.test(n) || /^\s*\}?\s*$/.test(n));
    out.push({ spec: m[4] ?? '', typeOnly: m[2] !== undefined || allTypes });
  }
  for (const m of src.matchAll(/\bimport\s*['"]([^'"]+)['"]/g))
    out.push({ spec: m[1] ?? '', typeOnly: false });
  for (const m of src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g))
    out.push({ spec: m[1] ?? '', typeOnly: false });
  return out;
}

/** The file a relative specifier names (as written, or with an extension TypeScript would try). */
export function resolveRelative(fromFile: string, spec: string): string {
  const base = resolve(dirname(fromFile), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')])
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  return base;
}

export function workspaceOf(all: Workspace[], file: string): Workspace | undefined {
  return all.find((w) => !relative(w.root, file).startsWith('..'));
}

/** Package-level edges: declared `@islet/*` dependencies, by workspace name. */
export function declaredEdges(all: Workspace[]): ImportEdge[] {
  return all.flatMap((w) => w.declared.map((to) => ({ from: w.name, to, typeOnly: false })));
}

/**
 * Edges between workspaces that imports make: `@islet/x` specifiers and relative paths that land in
 * another workspace. `product`: only files that are not tests.
 */
export function importEdges(all: Workspace[], options: { product: boolean }): ImportEdge[] {
  const byName = new Map(all.map((w) => [w.name, w]));
  const edges: ImportEdge[] = [];
  for (const w of all)
    for (const file of sourceFiles(w.root)) {
      if (options.product && /\.test\.tsx?$|(^|\/)(test|bench)\//.test(relative(w.root, file))) continue;
      for (const { spec, typeOnly } of importsOf(readFileSync(file, 'utf8'))) {
        let target: Workspace | undefined;
        if (spec.startsWith('@islet/')) target = byName.get(spec.split('/').slice(0, 2).join('/'));
        else if (spec.startsWith('.')) target = workspaceOf(all, resolveRelative(file, spec));
        if (target && target !== w) edges.push({ from: w.name, to: target.name, typeOnly });
      }
    }
  return edges;
}

/** File-level edges inside the workspaces (relative imports that resolve to a file). */
export function fileEdges(all: Workspace[], options: { product: boolean }): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const w of all)
    for (const file of sourceFiles(w.root)) {
      if (options.product && /\.test\.tsx?$|(^|\/)(test|bench)\//.test(relative(w.root, file))) continue;
      for (const { spec, typeOnly } of importsOf(readFileSync(file, 'utf8'))) {
        if (!spec.startsWith('.')) continue;
        const to = resolveRelative(file, spec);
        if (existsSync(to)) edges.push({ from: file, to, typeOnly });
      }
    }
  return edges;
}

/** Every cycle's nodes (strongly connected components of more than one node, or a self-loop). */
export function cycles(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    if (!next.has(e.from)) next.set(e.from, new Set());
    next.get(e.from)?.add(e.to);
    if (!next.has(e.to)) next.set(e.to, new Set());
  }
  // Tarjan's algorithm, iterative enough for a few thousand files.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, idx.get(w) ?? 0));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || next.get(v)?.has(v)) found.push(scc.sort());
    }
  };
  for (const v of next.keys()) if (!idx.has(v)) visit(v);
  return found;
}
