// Static checks of docker/*.Dockerfile (no container engine runs here): pinned bases, non-root
// user, no secrets, health checks, and every path they copy or run exists in the repository.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SERVICE_NODE_FLAGS } from '../../services/core/src/node-flags.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const COMPONENTS = ['gateway', 'runner', 'operator'] as const;

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

/** Dockerfile → stages of instructions (comments dropped, line continuations joined). */
function parseDockerfile(text: string): Stage[] {
  const lines = text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const stages: Stage[] = [];
  for (const line of lines) {
    const m = line.match(/^(\w+)\s+(.*)$/);
    if (!m) continue;
    const op = m[1]!.toUpperCase();
    const args = m[2]!;
    if (op === 'FROM') {
      const [from, , name] = args.split(/\s+/);
      stages.push({ from: from!, name, instructions: [] });
    } else stages.at(-1)?.instructions.push({ op, args });
  }
  return stages;
}

const toolchainNode = readFileSync(join(ROOT, 'scripts/toolchain.sh'), 'utf8').match(
  /NODE_VERSION="([\d.]+)"/,
)?.[1];
const dockerignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

describe.each(COMPONENTS.map((c) => [c]))('docker/%s.Dockerfile', (component) => {
  const text = readFileSync(join(ROOT, 'docker', `${component}.Dockerfile`), 'utf8');
  const stages = parseDockerfile(text);
  const final = stages.at(-1)!;
  const ops = (s: Stage, op: string) => s.instructions.filter((i) => i.op === op);

  it('is multi-stage, every base pinned to an exact version (Node as in scripts/toolchain.sh)', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const stageNames = new Set(stages.map((s) => s.name).filter(Boolean));
    for (const s of stages) {
      if (stageNames.has(s.from)) continue;
      expect(s.from).toMatch(/^[\w.\-/]+:\d+\.\d+\.\d+[\w.-]*(@sha256:[a-f0-9]{64})?$/);
      expect(s.from).not.toMatch(/:latest\b/);
    }
    expect(toolchainNode).toBeTruthy();
    expect(final.from.split('@')[0]).toBe(`node:${toolchainNode}-bookworm-slim`);
  });

  it('takes islet_build_info’s revision and version as build arguments into the environment and labels', () => {
    // Docker's own `${NAME}` substitution, spelled out (not a JS template).
    const ref = (name: string) => `\${${name}}`;
    const args = ops(final, 'ARG').map((i) => i.args);
    expect(args).toContain('ISLET_REVISION=unknown');
    expect(args).toContain('ISLET_VERSION=""');
    const env = ops(final, 'ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).toContain(`ISLET_REVISION=${ref('ISLET_REVISION')}`);
    expect(env).toContain(`ISLET_VERSION=${ref('ISLET_VERSION')}`);
    const labels = ops(final, 'LABEL')
      .map((i) => i.args)
      .join(' ');
    expect(labels).toContain(`org.opencontainers.image.revision="${ref('ISLET_REVISION')}"`);
    // Declared before the ENV that uses it (an ARG is visible only after its line).
    const order = final.instructions.map((i) => `${i.op} ${i.args.split('=')[0]}`);
    expect(order.indexOf('ARG ISLET_REVISION')).toBeLessThan(order.findIndex((o) => o.startsWith('ENV')));
  });

  it('runs as a numeric non-root user set after the last RUN of the final stage', () => {
    const idx = final.instructions.findLastIndex((i) => i.op === 'USER');
    expect(idx).toBeGreaterThan(-1);
    const user = final.instructions[idx]!.args;
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(final.instructions.findLastIndex((i) => i.op === 'RUN')).toBeLessThan(idx);
    // The uid matches what the chart's securityContext asks for.
    expect(user).toBe('10001:10001');
  });

  it('carries no secrets: no key/token/password ENV or ARG, no .env or key files', () => {
    for (const s of stages) {
      for (const i of [...ops(s, 'ENV'), ...ops(s, 'ARG')]) {
        expect(i.args, i.args).not.toMatch(/(KEY|SECRET|TOKEN|PASSWORD|PASSWD)\w*\s*=/i);
      }
      for (const i of [...ops(s, 'COPY'), ...ops(s, 'ADD')])
        expect(i.args).not.toMatch(/\.env|\.pem|\.key\b|id_rsa/);
    }
    expect(ops(final, 'ADD')).toEqual([]); // ADD can fetch URLs and unpack archives: COPY only
    for (const p of ['.git', '**/node_modules', '**/.env', '**/*.pem', '**/*.key'])
      expect(dockerignore).toContain(p);
  });

  it('has a HEALTHCHECK on the port it exposes, and the chart probes the same endpoints', () => {
    const hc = ops(final, 'HEALTHCHECK');
    expect(hc).toHaveLength(1);
    expect(hc[0]!.args).toContain('/healthz');
    expect(hc[0]!.args).toMatch(/CMD \["node"/); // exec form: needs no shell
    const port = ops(final, 'EXPOSE')[0]!.args;
    expect(hc[0]!.args).toContain(port);
    const chartTemplate = readFileSync(
      join(
        ROOT,
        'charts/islet/templates',
        component === 'runner' ? '_helpers.tpl' : `${component}-deployment.yaml`,
      ),
      'utf8',
    );
    expect(chartTemplate).toMatch(/livenessProbe:\s*\n\s*httpGet: \{ path: \/healthz/);
    expect(chartTemplate).toMatch(/readinessProbe:\s*\n\s*httpGet: \{ path: \/readyz/);
  });

  it('copies only paths that exist and are not excluded by .dockerignore; runs an existing entry point', () => {
    for (const s of stages) {
      for (const i of ops(s, 'COPY')) {
        if (/--from=/.test(i.args)) continue;
        const parts = i.args.split(/\s+/).filter((p) => !p.startsWith('--'));
        for (const src of parts.slice(0, -1)) {
          expect(existsSync(join(ROOT, src)), src).toBe(true);
          expect(dockerignore.includes(src), `${src} is dockerignored`).toBe(false);
        }
      }
    }
    const entry = JSON.parse(ops(final, 'ENTRYPOINT')[0]!.args) as string[];
    // An init is PID 1: node alone as PID 1 gets no default signal handling and reaps no zombies.
    expect(entry.slice(0, 3)).toEqual(['/usr/bin/tini', '--', 'node']);
    // The gateway's and the runner's Node flags are SERVICE_NODE_FLAGS', the local stack's too.
    const flags = component === 'gateway' || component === 'runner' ? SERVICE_NODE_FLAGS[component] : [];
    expect(entry.slice(3, -1)).toEqual(flags);
    expect(entry.at(-1)).toBe(`services/${component}/src/main.ts`);
    expect(existsSync(join(ROOT, entry.at(-1)!))).toBe(true);
    const runs = ops(final, 'RUN').map((i) => i.args);
    expect(runs.join(' ')).toMatch(/apt-get install -y --no-install-recommends [^&]*\btini\b/);
  });

  it('ships no test code: the fake Kubernetes API, devstack and testkit are excluded or removed', () => {
    expect(dockerignore).toContain('**/test');
    expect(dockerignore).toContain('**/*.test.ts');
    const runs = ops(final, 'RUN')
      .map((i) => i.args)
      .join(' ');
    for (const p of ['/app/services/devstack', '/app/services/testkit', '/app/services/*/test'])
      expect(runs).toContain(p);
    // The removal comes after the last COPY of the sources.
    const lastCopy = final.instructions.findLastIndex((i) => i.op === 'COPY');
    const removal = final.instructions.findLastIndex(
      (i) => i.op === 'RUN' && i.args.includes('services/testkit'),
    );
    expect(removal).toBeGreaterThan(lastCopy);
    expect(existsSync(join(ROOT, 'services/operator/test/fake-kube-api.ts'))).toBe(true);
  });

  it('leaves no package manager in the final image (and no shell where the runtime needs none)', () => {
    const cleanup = ops(final, 'RUN').at(-1)!.args;
    for (const p of ['/usr/local/bin/npm', '/usr/local/bin/npx', '/usr/bin/apt*', '/usr/bin/dpkg*'])
      expect(cleanup).toContain(p);
    if (component === 'runner') expect(cleanup).not.toContain('/bin/bash');
    else for (const sh of ['/bin/bash', '/bin/dash', '/bin/sh']) expect(cleanup).toContain(sh);
  });

  it('is read-only-root ready: writable paths are declared volumes that the chart mounts as emptyDirs', () => {
    const volumes = ops(final, 'VOLUME').flatMap((v) => JSON.parse(v.args) as string[]);
    expect(volumes).toContain('/tmp');
    if (component === 'runner') expect(volumes).toEqual(['/tmp', '/workspace']);
  });
});

describe('runner image specifics', () => {
  const stages = parseDockerfile(readFileSync(join(ROOT, 'docker/runner.Dockerfile'), 'utf8'));
  it('builds islet-jail in a builder stage with libseccomp-dev and ships it with the runtime libraries, python3 and bash', () => {
    const jail = stages.find((s) => s.name === 'jail')!;
    const jailRuns = jail.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(jailRuns.join(' ')).toContain('libseccomp-dev');
    expect(jailRuns.join(' ')).toContain('services/kernel-sandbox/scripts/build.sh');
    const final = stages.at(-1)!;
    const runs = final.instructions
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join(' ');
    expect(runs).toMatch(/libseccomp2 python3\b/);
    expect(runs).not.toContain('libseccomp-dev');
    expect(runs).not.toContain('gcc');
    const env = final.instructions
      .filter((i) => i.op === 'ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).toContain('ISLET_JAIL_PATH=/usr/local/bin/islet-jail');
    expect(
      final.instructions.some(
        (i) =>
          i.op === 'COPY' && i.args.includes('--from=jail') && i.args.endsWith('/usr/local/bin/islet-jail'),
      ),
    ).toBe(true);
  });

  it('ships islet-files (the workspace file helper) in the runner and the gateway, named by ISLET_FILES_HELPER_PATH', () => {
    for (const file of ['docker/runner.Dockerfile', 'docker/gateway.Dockerfile']) {
      const final = parseDockerfile(readFileSync(join(ROOT, file), 'utf8')).at(-1)!;
      const env = final.instructions
        .filter((i) => i.op === 'ENV')
        .map((i) => i.args)
        .join(' ');
      expect(env, file).toContain('ISLET_FILES_HELPER_PATH=/usr/local/bin/islet-files');
      expect(
        final.instructions.some((i) => i.op === 'COPY' && i.args.endsWith('/usr/local/bin/islet-files')),
        file,
      ).toBe(true);
    }
  });

  it('agrees with the chart on the jail path, the metrics port and the workspace root', () => {
    const cm = readFileSync(join(ROOT, 'charts/islet/templates/config-configmap.yaml'), 'utf8');
    expect(cm).toContain('ISLET_JAIL_PATH: /usr/local/bin/islet-jail');
    const values = parseYaml(readFileSync(join(ROOT, 'charts/islet/values.yaml'), 'utf8'));
    expect(values.runners.metricsPort).toBe(9464);
    expect(values.runners.uid).toBe(10001);
    const env = stages
      .at(-1)!
      .instructions.filter((i) => i.op === 'ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).toContain(`ISLET_WORKSPACE_ROOT=${values.workspaces.mountPath}`);
  });
});

describe('base images pinned by digest', () => {
  // External bases (tagged), not stage references, of every Dockerfile.
  const bases = COMPONENTS.flatMap((c) => {
    const text = readFileSync(join(ROOT, 'docker', `${c}.Dockerfile`), 'utf8');
    return parseDockerfile(text)
      .map((s) => s.from)
      .filter((from) => from.includes(':'))
      .map((ref) => ({
        file: `docker/${c}.Dockerfile`,
        ref,
        tag: ref.split('@')[0]!,
        digest: ref.split('@')[1],
      }));
  });
  it('every FROM names its base as image:tag@sha256:<64 hex> (the image index digest)', () => {
    expect(bases.length).toBeGreaterThanOrEqual(COMPONENTS.length);
    for (const b of bases) expect(b.ref, b.file).toMatch(/^[\w.\-/]+:[\w.-]+@sha256:[a-f0-9]{64}$/);
  });

  it('pins the Dockerfile frontend (# syntax=) by digest too: BuildKit pulls and runs it', () => {
    for (const c of COMPONENTS) {
      const first = readFileSync(join(ROOT, 'docker', `${c}.Dockerfile`), 'utf8').split('\n')[0];
      expect(first, c).toMatch(/^# syntax=docker\/dockerfile:[\d.]+@sha256:[a-f0-9]{64}$/);
    }
  });

  it('pins the same base to the same digest in every stage and every Dockerfile', () => {
    const byTag = new Map<string, Set<string>>();
    for (const b of bases) byTag.set(b.tag, (byTag.get(b.tag) ?? new Set()).add(b.digest ?? 'none'));
    for (const [tag, digests] of byTag) expect([...digests], tag).toHaveLength(1);
  });

  describe('docker/pin-bases.sh', () => {
    // A copy of docker/ and a fake `docker` that answers `buildx imagetools inspect` as a registry
    // would (its first lines: Name, MediaType, Digest of the index).
    const work = mkdtempSync(join(tmpdir(), 'islet-pin-'));
    afterAll(() => rmSync(work, { recursive: true, force: true }));
    cpSync(join(ROOT, 'docker'), join(work, 'docker'), { recursive: true });
    mkdirSync(join(work, 'bin'));
    const fakeDocker = join(work, 'bin', 'docker');
    writeFileSync(
      fakeDocker,
      [
        '#!/usr/bin/env bash',
        '# fake docker CLI for the test: buildx version, buildx imagetools inspect <ref>',
        'echo "$*" >> "$(dirname "$0")/calls"',
        '[ "$1 $2" = "buildx version" ] && exit 0',
        'echo "Name:      docker.io/library/$4"',
        'echo "MediaType: application/vnd.oci.image.index.v1+json"',
        'echo "Digest:    sha256:$FAKE_DIGEST"',
      ].join('\n'),
    );
    chmodSync(fakeDocker, 0o755);
    const pin = (digestHex: string) =>
      spawnSync('bash', [join(work, 'docker', 'pin-bases.sh')], {
        encoding: 'utf8',
        env: { ...process.env, PATH: `${join(work, 'bin')}:${process.env.PATH}`, FAKE_DIGEST: digestHex },
      });
    const froms = () =>
      COMPONENTS.flatMap((c) =>
        readFileSync(join(work, 'docker', `${c}.Dockerfile`), 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('FROM ')),
      );

    it('writes the index digest into every FROM of each base, asks once per base, and re-pins over an old digest', () => {
      const before = froms();
      const r1 = pin('a'.repeat(64));
      expect(r1.status, r1.stderr).toBe(0);
      const once = froms();
      expect(once).toHaveLength(before.length);
      for (const [i, line] of once.entries()) {
        const [, ref, ...rest] = before[i]!.split(' ');
        expect(line).toBe(['FROM', `${ref!.split('@')[0]}@sha256:${'a'.repeat(64)}`, ...rest].join(' '));
      }
      const calls = readFileSync(join(work, 'bin', 'calls'), 'utf8')
        .trim()
        .split('\n');
      expect(calls.filter((c) => c.startsWith('buildx imagetools inspect'))).toEqual(
        [...[...new Set(bases.map((b) => b.tag))].sort(), 'docker/dockerfile:1.7'].map(
          (t) => `buildx imagetools inspect ${t}`,
        ),
      );
      // The Dockerfile frontend is an image BuildKit pulls and runs too.
      for (const c of COMPONENTS) {
        const first = readFileSync(join(work, 'docker', `${c}.Dockerfile`), 'utf8').split('\n')[0];
        expect(first, c).toBe(`# syntax=docker/dockerfile:1.7@sha256:${'a'.repeat(64)}`);
      }
      const r2 = pin('b'.repeat(64));
      expect(r2.status, r2.stderr).toBe(0);
      expect(froms().join('\n')).not.toContain('a'.repeat(64));
      expect(froms().every((l) => l.includes(`@sha256:${'b'.repeat(64)} `))).toBe(true);
    });

    it('refuses an answer that is not a sha256 digest, naming the base', () => {
      const r = pin('not-a-digest');
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('docker/pin-bases.sh: no digest for node:');
    });
  });
});
