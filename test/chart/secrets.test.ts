// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON, checked by the assertions
// Where the release's secrets come from, with the real helm: nothing random is ever rendered (a
// template-then-apply flow such as Argo CD would redraw the seal key on every sync), every pod reads
// the secrets as files and carries checksums of what it reads.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART, helm, type K8sObject, podSpecs, ROOT, render, renderArgs } from './helm.ts';
import { find, runnerDeployments } from './runners.ts';

const PROD = join(ROOT, 'deploy/production/values.yaml');
const DEFAULT = join(CHART, 'ci/default-values.yaml');
const KEY_A = Buffer.alloc(32, 1).toString('base64');
const KEY_B = Buffer.alloc(32, 2).toString('base64');

const workloadsReadingSecrets = (objs: K8sObject[]) =>
  [
    ...podSpecs(objs).filter((p) => p.obj.kind === 'Deployment'),
    ...runnerDeployments(objs).map((d) => ({ obj: d, spec: d.spec.template.spec })),
  ].filter((p) => ['gateway', 'runner'].includes(p.obj.metadata.labels?.['app.kubernetes.io/component']));

describe('secrets: stable, never random in a render', () => {
  it('two renders of the default install are byte-identical (no randBytes/randAlphaNum)', () => {
    const a = helm(renderArgs({ valuesFiles: [DEFAULT] }));
    const b = helm(renderArgs({ valuesFiles: [DEFAULT] }));
    expect(a.status, a.stderr).toBe(0);
    expect(a.stdout).toBe(b.stdout);
  });

  it('by default a pre-install/pre-upgrade hook Job creates the Secret once (no Secret rendered)', () => {
    const objs = render({ valuesFiles: [DEFAULT] });
    expect(find(objs, 'Secret')).toEqual([]);
    const job = find(objs, 'Job')[0]!;
    expect(job.metadata.annotations['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    const c = job.spec.template.spec.containers[0];
    expect(c.command).toEqual(['node', 'services/operator/src/ensure-secret.ts', 'islet', 'islet-secrets']);
    // Its RBAC and NetworkPolicy exist before it (lower hook weight) and reach only the API server.
    const role = find(objs, 'Role', (r) => r.metadata.name === 'islet-secret-init')[0]!;
    expect(Number(role.metadata.annotations['helm.sh/hook-weight'])).toBeLessThan(
      Number(job.metadata.annotations['helm.sh/hook-weight']),
    );
    expect(role.rules).toContainEqual({
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: ['islet-secrets'],
      verbs: ['get', 'update'],
    });
    const np = find(objs, 'NetworkPolicy', (n) => n.metadata.name === 'islet-secret-init')[0]!;
    expect(np.spec.egress[0].ports.map((p: any) => p.port)).toEqual([443, 6443]);
  });

  it('an existing Secret: no Secret, no hook Job', () => {
    const objs = render({ valuesFiles: [PROD], apiVersions: ['monitoring.coreos.com/v1'] });
    expect(find(objs, 'Secret')).toEqual([]);
    expect(find(objs, 'Job')).toEqual([]);
  });

  it('fails fast when no source is possible, or only some values are given', () => {
    const none = helm(renderArgs({ valuesFiles: [DEFAULT], set: ['secrets.generate=false'] }));
    expect(none.status).not.toBe(0);
    expect(none.stderr).toContain('secrets: set secrets.existingSecret (production)');
    const partial = helm(renderArgs({ valuesFiles: [DEFAULT], set: [`secrets.sealKeys.k1=${KEY_A}`] }));
    expect(partial.status).not.toBe(0);
    expect(partial.stderr).toContain(
      'sealKeys given but not all of sealKeys, internalToken and journalArgsKey',
    );
    const badActive = helm(
      renderArgs({
        valuesFiles: [DEFAULT],
        set: [
          `secrets.sealKeys.k1=${KEY_A}`,
          'secrets.internalToken=0123456789abcdef0123',
          'secrets.journalArgsKey=0123456789abcdef0123',
          'secrets.activeSealKeyId=k9',
        ],
      }),
    );
    expect(badActive.status).not.toBe(0);
    expect(badActive.stderr).toContain('secrets.activeSealKeyId "k9" is not a key of secrets.sealKeys');
  });

  it('values-given keys render deterministically, the active key first and older keys kept', () => {
    const set = [
      `secrets.sealKeys.k1=${KEY_A}`,
      `secrets.sealKeys.k2=${KEY_B}`,
      'secrets.activeSealKeyId=k2',
      'secrets.internalToken=0123456789abcdef0123',
      'secrets.journalArgsKey=0123456789abcdef0123',
    ];
    const objs = render({ valuesFiles: [DEFAULT], set });
    expect(find(objs, 'Job')).toEqual([]);
    const s = find(objs, 'Secret')[0]!;
    const dec = (k: string) => Buffer.from(s.data[k], 'base64').toString();
    expect(dec('ISLET_SEAL_KEYS')).toBe(`k2:${KEY_B},k1:${KEY_A}`);
    expect(dec('ISLET_SEAL_ACTIVE_KEY_ID')).toBe('k2');
    expect(s.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
    expect(helm(renderArgs({ valuesFiles: [DEFAULT], set })).stdout).toBe(
      helm(renderArgs({ valuesFiles: [DEFAULT], set })).stdout,
    );
  });

  it('gateway and runner pods (helm and operator built) read secrets as files, none as env values', () => {
    for (const file of [DEFAULT, PROD]) {
      const objs = render({ valuesFiles: [file], apiVersions: ['monitoring.coreos.com/v1'] });
      const ws = workloadsReadingSecrets(objs);
      expect(ws.length).toBeGreaterThanOrEqual(3);
      for (const { obj, spec } of ws) {
        const c = spec.containers[0];
        const env = Object.fromEntries((c.env ?? []).map((e: any) => [e.name, e]));
        for (const k of ['ISLET_SEAL_KEYS', 'ISLET_INTERNAL_TOKEN', 'ISLET_JOURNAL_ARGS_KEY']) {
          expect(env[`${k}_FILE`]?.value, `${obj.metadata.name} ${k}`).toBe(`/var/run/secrets/islet/${k}`);
          expect(env[k], `${obj.metadata.name} ${k}`).toBeUndefined();
        }
        expect(
          (c.envFrom ?? []).some((e: any) => e.secretRef),
          obj.metadata.name,
        ).toBe(false);
        expect(c.volumeMounts).toContainEqual({
          name: 'secrets',
          mountPath: '/var/run/secrets/islet',
          readOnly: true,
        });
        // The release's Secret, every key, in one 0440 directory (plus Redis items where configured).
        const vol = spec.volumes.find((v: any) => v.name === 'secrets');
        expect(vol.projected.defaultMode).toBe(0o440);
        expect(vol.projected.sources[0]).toEqual({ secret: { name: 'islet-secrets' } });
      }
    }
  });

  it('every pod carries config and secret checksums; changing either rolls gateway, runners and operator', () => {
    const annotations = (set: string[]) => {
      const objs = render({ valuesFiles: [PROD], set, apiVersions: ['monitoring.coreos.com/v1'] });
      const pods = [
        ...find(objs, 'Deployment').map((d) => [d.metadata.name, d.spec.template.metadata.annotations]),
        ...runnerDeployments(objs).map((d) => [
          `op:${d.metadata.name}`,
          d.spec.template.metadata.annotations,
        ]),
      ];
      return Object.fromEntries(pods) as Record<string, Record<string, string>>;
    };
    const base = annotations([]);
    const rotated = annotations(['secrets.revision=2026-11-30-k2']);
    const reconf = annotations(['logLevel=debug']);
    expect(Object.keys(base).length).toBeGreaterThanOrEqual(4);
    for (const [name, a] of Object.entries(base)) {
      expect(a['checksum/config'], name).toMatch(/^[0-9a-f]{64}$/);
      expect(a['checksum/secret'], name).toMatch(/^[0-9a-f]{64}$/);
      expect(rotated[name]!['checksum/secret'], name).not.toBe(a['checksum/secret']);
      expect(rotated[name]!['checksum/config'], name).toBe(a['checksum/config']);
      expect(reconf[name]!['checksum/config'], name).not.toBe(a['checksum/config']);
    }
  });
});
