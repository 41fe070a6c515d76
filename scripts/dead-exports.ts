/**
 * Lists exports of product sources (services/*\/src, services/console/web) that no other file
 * imports: `DEAD` (nobody; `local=N` counts uses inside the file: 0 means the declaration itself
 * is unused) and `TESTONLY` (only tests import it, listed). Re-exports through an index.ts do not
 * count as uses. Built on the TypeScript compiler over tsconfig.json and the console's.
 * `bash scripts/toolchain.sh node scripts/dead-exports.ts` (about half a minute). The SDK's public
 * API, testkit and examples are listed too: keep those deliberately.
 */

import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const REPO = fileURLToPath(new URL('../', import.meta.url));
function program(configPath: string) {
  const cfg = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(cfg.config, ts.sys, configPath.replace(/tsconfig\.json$/, ''));
  return ts.createProgram(parsed.fileNames, parsed.options);
}
const progs = [program(REPO + 'tsconfig.json'), program(REPO + 'services/console/tsconfig.json')];
const isTest = (f: string) => /\.test\.tsx?$|\/test\/|\/bench\/|^test\/|vitest/.test(relative(REPO, f));
// key: file::name  -> {product:Set<file>, test:Set<file>}
const uses = new Map<string, { product: Set<string>; test: Set<string> }>();
const exportsByFile = new Map<string, string[]>();
function keyOf(sym: ts.Symbol, checker: ts.TypeChecker): string | undefined {
  let s = sym;
  if (s.flags & ts.SymbolFlags.Alias) s = checker.getAliasedSymbol(s);
  const d = s.declarations?.[0];
  if (!d) return undefined;
  return `${d.getSourceFile().fileName}::${s.name}`;
}
for (const p of progs) {
  const checker = p.getTypeChecker();
  for (const sf of p.getSourceFiles()) {
    const f = sf.fileName;
    if (f.includes('node_modules') || !f.startsWith(REPO)) continue;
    const rel = relative(REPO, f);
    // collect exports of product src files
    if (/^(services|examples)\/[^/]+\/(src|web)\//.test(rel) && !isTest(f)) {
      const modSym = checker.getSymbolAtLocation(sf);
      if (modSym) {
        const names: string[] = [];
        for (const e of checker.getExportsOfModule(modSym)) {
          // only exports declared in this file (not re-exports)
          let t = e;
          if (t.flags & ts.SymbolFlags.Alias) t = checker.getAliasedSymbol(t);
          const d = t.declarations?.[0];
          if (d && d.getSourceFile().fileName === f) names.push(t.name);
        }
        exportsByFile.set(f, [...new Set([...(exportsByFile.get(f) ?? []), ...names])]);
      }
    }
    const record = (sym: ts.Symbol | undefined) => {
      if (!sym) return;
      const k = keyOf(sym, checker);
      if (!k || k.startsWith(f + '::')) return;
      let u = uses.get(k);
      if (!u) {
        u = { product: new Set(), test: new Set() };
        uses.set(k, u);
      }
      (isTest(f) ? u.test : u.product).add(rel);
    };
    const visit = (n: ts.Node) => {
      if (ts.isImportDeclaration(n) && n.importClause) {
        const c = n.importClause;
        if (c.name) record(checker.getSymbolAtLocation(c.name));
        if (c.namedBindings) {
          if (ts.isNamedImports(c.namedBindings))
            for (const el of c.namedBindings.elements) record(checker.getSymbolAtLocation(el.name));
          else {
            // namespace import: count property accesses later via identifiers
            const ns = checker.getSymbolAtLocation(c.namedBindings.name);
            if (ns) {
              const mod = checker.getAliasedSymbol(ns);
              for (const e of checker.getExportsOfModule(mod)) record(e);
            }
          }
        }
      }
      if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const arg = n.arguments[0];
        if (arg && ts.isStringLiteral(arg)) {
          const ms = checker.getSymbolAtLocation(arg);
          // `const { a, b } = await import('x')` uses a and b; any other use may reach every export.
          const holder = ts.isAwaitExpression(n.parent) ? n.parent.parent : n.parent;
          const picked =
            holder && ts.isVariableDeclaration(holder) && ts.isObjectBindingPattern(holder.name)
              ? holder.name.elements.map((el) => (el.propertyName ?? el.name).getText())
              : undefined;
          if (ms)
            for (const e of checker.getExportsOfModule(ms)) if (!picked || picked.includes(e.name)) record(e);
        }
      }
      if (ts.isImportTypeNode(n) && n.qualifier) {
        // import('x').Name
        const s = checker.getSymbolAtLocation(n.qualifier);
        record(s);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
}
// own-file references: identifiers in the declaring file resolving to the symbol, other than its declaration names
const localRefs = new Map<string, number>();
for (const p of progs) {
  const checker = p.getTypeChecker();
  for (const [f] of exportsByFile) {
    const sf = p.getSourceFile(f);
    if (!sf) continue;
    const visit = (n: ts.Node) => {
      if (ts.isIdentifier(n)) {
        const parent = n.parent;
        const isDeclName =
          parent &&
          (ts.isFunctionDeclaration(parent) ||
            ts.isVariableDeclaration(parent) ||
            ts.isInterfaceDeclaration(parent) ||
            ts.isTypeAliasDeclaration(parent) ||
            ts.isClassDeclaration(parent) ||
            ts.isEnumDeclaration(parent)) &&
          (parent as ts.NamedDeclaration).name === n;
        const isExportSpec = parent && ts.isExportSpecifier(parent);
        if (!isDeclName && !isExportSpec) {
          const sym = checker.getSymbolAtLocation(n);
          if (sym) {
            const k = keyOf(sym, checker);
            if (k?.startsWith(f + '::')) localRefs.set(k, (localRefs.get(k) ?? 0) + 1);
          }
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
}
const out: string[] = [];
for (const [f, names] of exportsByFile)
  for (const n of names) {
    const u = uses.get(`${f}::${n}`);
    const rel = relative(REPO, f);
    const local = localRefs.get(`${f}::${n}`) ?? 0;
    if (!u || (u.product.size === 0 && u.test.size === 0)) out.push(`DEAD\t${rel}\t${n}\tlocal=${local}`);
    else if (u.product.size === 0)
      out.push(`TESTONLY\t${rel}\t${n}\tlocal=${local}\t${[...u.test].join(',')}`);
  }
console.log(out.sort().join('\n'));
