// docker/build.sh: every image is built with provenance and SBOM attestations and with
// islet_build_info's real revision. The commands are checked from a dry run; the real build runs
// where a container engine answers `docker info` (none does on the development machine).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const COMPONENTS = readdirSync(resolve(ROOT, 'docker'))
  .filter((f) => f.endsWith('.Dockerfile'))
  .map((f) => f.slice(0, -'.Dockerfile'.length))
  .sort();
const HEAD = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();

function buildSh(args: string[], env: Record<string, string>, timeoutMs = 60_000) {
  const r = spawnSync('bash', ['docker/build.sh', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: timeoutMs,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function engineProbe(): { ok: boolean; reason: string } {
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.error) return { ok: false, reason: `docker info: ${r.error.message}` };
  if (r.status !== 0) {
    const first = (r.stderr || r.stdout).trim().split('\n')[0] ?? '';
    return { ok: false, reason: `docker info exited ${r.status}: ${first}` };
  }
  return { ok: true, reason: `engine ${r.stdout.trim()}` };
}
const engine = engineProbe();

interface OciIndex {
  manifests: {
    digest: string;
    platform?: { os: string };
    annotations?: Record<string, string>;
  }[];
}

/** A file of an OCI image layout tarball (what `--output type=oci` writes), parsed. */
function ociJson<T>(tarball: string, path: string): T {
  const r = spawnSync('tar', ['-xOf', tarball, path], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${tarball}: ${path}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}
const ociBlob = <T>(tarball: string, digest: string) =>
  ociJson<T>(tarball, `blobs/${digest.replace(':', '/')}`);

describe('docker/build.sh', () => {
  it('builds every docker/*.Dockerfile with provenance (mode=max), an SBOM and the checked-out revision', () => {
    expect(COMPONENTS).toEqual(['gateway', 'operator', 'runner']);
    expect(HEAD).toMatch(/^[0-9a-f]{40}$/);
    const r = buildSh([], { ISLET_BUILD_DRY_RUN: '1', ISLET_VERSION: '1.2.3' });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(COMPONENTS.length);
    for (const c of COMPONENTS) {
      const line = lines.find((l) => l.includes(`--file docker/${c}.Dockerfile `));
      expect(line, c).toBeDefined();
      const argv = line!.split(' ');
      expect(argv.slice(0, 3)).toEqual(['docker', 'buildx', 'build']);
      expect(argv).toContain('--provenance=mode=max');
      expect(argv).toContain('--sbom=true');
      expect(argv).toContain(`ISLET_REVISION=${HEAD}`);
      expect(argv[argv.indexOf(`ISLET_REVISION=${HEAD}`) - 1]).toBe('--build-arg');
      expect(argv).toContain('ISLET_VERSION=1.2.3');
      expect(argv).toContain(`islet/${c}:dev`);
      expect(argv.at(-1)).toBe('.'); // the repository root is the build context (.dockerignore)
    }
  });

  it('takes the tag, prefix and push from the environment, and builds only the components named', () => {
    const r = buildSh(['runner'], {
      ISLET_BUILD_DRY_RUN: '1',
      ISLET_IMAGE_PREFIX: 'registry.example/islet',
      ISLET_IMAGE_TAG: 'v9',
      ISLET_PUSH: '1',
    });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('--file docker/runner.Dockerfile ');
    expect(lines[0]).toContain('--tag registry.example/islet/runner:v9 ');
    expect(lines[0]).toContain(' --push ');
    expect(lines[0]).not.toContain('--load');
  });

  it('refuses an unknown component with its name, building nothing', () => {
    const r = buildSh(['gateway', 'nope'], { ISLET_BUILD_DRY_RUN: '1' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('docker/build.sh: no docker/nope.Dockerfile');
    expect(r.stdout).toBe('');
  });

  // A builder of its own (docker-container driver: the OCI exporter keeps the attestations),
  // removed afterwards with its cache.
  const builder = `islet-build-test-${process.pid}`;
  const ociDir = mkdtempSync(join(tmpdir(), 'islet-images-'));
  afterAll(() => {
    if (engine.ok) spawnSync('docker', ['buildx', 'rm', '--force', builder], { timeout: 120_000 });
    rmSync(ociDir, { recursive: true, force: true });
  });

  // One test for both machines, so neither skips: with an engine every image is built for real;
  // without one (this project's own machines) the script must stop before building and say why.
  it('builds every image where an engine answers (revision in label and environment, provenance and SBOM attached), else refuses saying why', () => {
    if (!engine.ok) {
      const r = buildSh(['operator'], {});
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('docker/build.sh: no container engine (docker info failed); nothing built');
      return;
    }
    const create = spawnSync(
      'docker',
      ['buildx', 'create', '--name', builder, '--driver', 'docker-container', '--bootstrap'],
      { encoding: 'utf8', timeout: 300_000 },
    );
    expect(create.status, create.stderr).toBe(0);
    const r = buildSh(
      [],
      { ISLET_BUILDER: builder, ISLET_OCI_DIR: ociDir, ISLET_VERSION: 'build-test' },
      1_800_000,
    );
    expect(r.status, r.stderr.slice(-4000)).toBe(0);
    for (const c of COMPONENTS) {
      const tar = join(ociDir, `${c}.oci.tar`);
      const index = ociBlob<OciIndex>(tar, ociJson<OciIndex>(tar, 'index.json').manifests[0]!.digest);
      const images = index.manifests.filter((m) => m.platform?.os !== 'unknown');
      const attestations = index.manifests.filter(
        (m) => m.annotations?.['vnd.docker.reference.type'] === 'attestation-manifest',
      );
      expect(images.length, c).toBeGreaterThan(0);
      expect(attestations.length, c).toBe(images.length);
      const image = ociBlob<{ config: { digest: string } }>(tar, images[0]!.digest);
      const config = ociBlob<{ config: { Env: string[]; Labels: Record<string, string> } }>(
        tar,
        image.config.digest,
      );
      expect(config.config.Labels['org.opencontainers.image.revision']).toBe(HEAD);
      expect(config.config.Env).toContain(`ISLET_REVISION=${HEAD}`);
      expect(config.config.Env).toContain('ISLET_VERSION=build-test');
      const attestation = ociBlob<{ layers: { annotations?: Record<string, string> }[] }>(
        tar,
        attestations[0]!.digest,
      );
      const predicates = attestation.layers.map((l) => l.annotations?.['in-toto.io/predicate-type']);
      expect(
        predicates.some((p) => p?.startsWith('https://slsa.dev/provenance/')),
        c,
      ).toBe(true);
      expect(predicates).toContain('https://spdx.dev/Document');
    }
  }, 1_900_000);
});
