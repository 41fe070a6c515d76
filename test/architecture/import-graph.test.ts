/**
 * The workspaces form no cycle and keep their layers: package.json dependencies (dev ones too)
 * and the imports in the files (`@islet/*`, and relative paths that land in another workspace,
 * like the console's use of the SDK's client) together make an acyclic graph; each workspace's
 * product code imports only the workspaces its layer allows (the run package never reaches the
 * engine, the engine never reaches Redis or HTTP code); and no two product files import each
 * other's values in a circle (type-only imports vanish when types are stripped and may circle).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  cycles,
  declaredEdges,
  fileEdges,
  type ImportEdge,
  importEdges,
  importsOf,
  workspaces,
} from './import-graph.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const all = workspaces(REPO);

/**
 * What each workspace's product code (not its tests) may import. The order is the layering:
 * protocol at the bottom, the run package on core and protocol only, the processes on top.
 */
const MAY_IMPORT: Record<string, string[]> = {
  '@islet/protocol': [],
  '@islet/testkit': [],
  '@islet/core': ['@islet/protocol'],
  '@islet/engine': ['@islet/protocol'],
  '@islet/kernel-sandbox': ['@islet/engine', '@islet/protocol'],
  '@islet/runs': ['@islet/core', '@islet/protocol'],
  '@islet/mcp': ['@islet/core', '@islet/protocol'],
  '@islet/operator': ['@islet/core', '@islet/protocol'],
  '@islet/runner': [
    '@islet/core',
    '@islet/engine',
    '@islet/kernel-sandbox',
    '@islet/protocol',
    '@islet/runs',
  ],
  '@islet/gateway': [
    '@islet/console',
    '@islet/core',
    '@islet/engine',
    '@islet/kernel-sandbox',
    '@islet/mcp',
    '@islet/protocol',
    '@islet/runs',
  ],
  // Types of the API it calls, and the SDK's client bundled into the page.
  '@islet/console': ['@islet/core', '@islet/protocol', '@islet/runs', '@islet/sdk'],
  '@islet/devstack': ['@islet/core', '@islet/engine', '@islet/protocol', '@islet/testkit'],
  // The CLI's admin commands load core on demand (straight on Redis, from a checkout only).
  '@islet/sdk': ['@islet/core'],
  'islet-example-http-app': [],
};

const show = (edges: readonly ImportEdge[]) => [...new Set(edges.map((e) => `${e.from} -> ${e.to}`))].sort();

describe('workspace graph', () => {
  it('reads every workspace and its imports', () => {
    const names = all.map((w) => w.name);
    for (const n of ['@islet/gateway', '@islet/runs', '@islet/engine', '@islet/sdk', '@islet/console'])
      expect(names).toContain(n);
    expect(show(importEdges(all, { product: true }))).toContain('@islet/gateway -> @islet/runs');
    // A relative path into another workspace counts as an edge.
    expect(show(importEdges(all, { product: true }))).toContain('@islet/console -> @islet/sdk');
  });

  it('every workspace is in the layer table', () => {
    expect(all.map((w) => w.name).filter((n) => !(n in MAY_IMPORT))).toEqual([]);
  });

  it('declared dependencies and imports together make no cycle between workspaces', () => {
    const edges = [...declaredEdges(all), ...importEdges(all, { product: false })];
    expect(cycles(edges)).toEqual([]);
  });

  it("each workspace's product code imports only what its layer allows", () => {
    const offenders = importEdges(all, { product: true }).filter((e) => !MAY_IMPORT[e.from]?.includes(e.to));
    expect(show(offenders)).toEqual([]);
  });

  it("each workspace's runtime dependencies are what its layer allows", () => {
    const offenders = all.flatMap((w) =>
      w.declared
        .filter((to) => !MAY_IMPORT[w.name]?.includes(to))
        .map((to) => ({ from: w.name, to, typeOnly: false })),
    );
    // Dev dependencies (tests, codegen) may reach further, as long as no cycle forms (above).
    const runtime = offenders.filter((e) => {
      const w = all.find((x) => x.name === e.from);
      return w !== undefined && runtimeDeps(w.root).includes(e.to);
    });
    expect(show(runtime)).toEqual([]);
  });

  it('no product file imports values in a circle', () => {
    const values = fileEdges(all, { product: true }).filter((e) => !e.typeOnly);
    expect(cycles(values).map((c) => c.map((f) => f.slice(REPO.length)))).toEqual([]);
  });

  it('would catch a cycle, a layer break and a value circle', () => {
    expect(
      cycles([
        { from: 'a', to: 'b', typeOnly: false },
        { from: 'b', to: 'c', typeOnly: false },
        { from: 'c', to: 'a', typeOnly: false },
        { from: 'c', to: 'd', typeOnly: false },
      ]),
    ).toEqual([['a', 'b', 'c']]);
    expect(MAY_IMPORT['@islet/runs']).not.toContain('@islet/engine');
    expect(importsOf("import { x } from '@islet/engine';\nexport * from './y.ts';")).toEqual([
      { spec: '@islet/engine', typeOnly: false },
      { spec: './y.ts', typeOnly: false },
    ]);
    expect(importsOf("import type { X } from './x.ts';\nimport { type Y, type Z } from './y.ts';")).toEqual([
      { spec: './x.ts', typeOnly: true },
      { spec: './y.ts', typeOnly: true },
    ]);
    expect(
      importsOf("// import { x } from '@islet/engine';\nconst m = await import('@islet/core');"),
    ).toEqual([{ spec: '@islet/core', typeOnly: false }]);
  });
});

function runtimeDeps(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  return Object.keys(pkg.dependencies ?? {});
}
