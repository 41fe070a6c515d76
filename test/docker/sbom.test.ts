// scripts/sbom.sh: a CycloneDX SBOM of the production dependencies, by npm's own `npm sbom`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'islet-sbom-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Component {
  'bom-ref': string;
  type: string;
  name: string;
  version: string;
  purl: string;
  hashes?: { alg: string; content: string }[];
}
interface Bom {
  bomFormat: string;
  specVersion: string;
  serialNumber: string;
  metadata: { tools: { vendor: string; name: string }[]; component: { name: string } };
  components: Component[];
  dependencies: { ref: string; dependsOn?: string[] }[];
}

const installed = (name: string) =>
  (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;

describe('scripts/sbom.sh', () => {
  const out = join(dir, 'nested', 'islet.cdx.json');
  const run = spawnSync('bash', ['scripts/sbom.sh', out], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  const bom = run.status === 0 ? (JSON.parse(readFileSync(out, 'utf8')) as Bom) : undefined;

  it('writes CycloneDX JSON, made by npm, of the repository', () => {
    expect(run.status, run.stderr).toBe(0);
    expect(bom!.bomFormat).toBe('CycloneDX');
    expect(bom!.specVersion).toMatch(/^1\.\d+$/);
    expect(bom!.serialNumber).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    expect(bom!.metadata.tools).toContainEqual(expect.objectContaining({ vendor: 'npm', name: 'cli' }));
    expect(bom!.metadata.component.name).toBe('islet'); // not the checkout directory's name
  });

  it('lists the production dependencies at their installed versions, with purls and lock hashes', () => {
    for (const name of ['bullmq', 'ioredis', 'isolated-vm', 'zod']) {
      const c = bom!.components.find((x) => x.name === name);
      expect(c, name).toBeDefined();
      expect(c!.version).toBe(installed(name));
      expect(c!.purl).toBe(`pkg:npm/${name}@${c!.version}`);
      expect(c!.hashes?.[0]?.alg).toBe('SHA-512');
    }
    // Every dependency edge names a component of the document.
    const refs = new Set(bom!.components.map((c) => c['bom-ref']));
    for (const d of bom!.dependencies)
      for (const to of d.dependsOn ?? []) expect(refs.has(to), to).toBe(true);
  });

  it('leaves out the development dependencies', () => {
    const names = new Set(bom!.components.map((c) => c.name));
    for (const dev of ['vitest', '@biomejs/biome', 'typescript', 'playwright-core']) {
      expect(names.has(dev), dev).toBe(false);
      // …which are installed here, so their absence is the filter's doing.
      expect(installed(dev)).toMatch(/^\d+\./);
    }
  });
});
