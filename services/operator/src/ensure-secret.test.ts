// The chart's secret hook against the fake API server: created once, never redrawn.
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKubeApi } from '../test/fake-kube-api.ts';
import { ensureSecret, GENERATED_SECRET_KEYS } from './ensure-secret.ts';

const ns = 'islet';
const dec = (v: string | undefined) => Buffer.from(v ?? '', 'base64').toString('utf8');

describe('ensureSecret (chart pre-install/pre-upgrade hook)', () => {
  let api: FakeKubeApi;
  let core: CoreV1Api;
  beforeAll(async () => {
    api = await FakeKubeApi.start();
    core = api.kubeConfig().makeApiClient(CoreV1Api);
  });
  afterAll(() => api.stop());

  it('creates every key on first install, in the formats the processes parse', async () => {
    const out = await ensureSecret(core, ns, 's1', { 'app.kubernetes.io/instance': 'islet' });
    expect(out.action).toBe('created');
    const s = await core.readNamespacedSecret({ namespace: ns, name: 's1' });
    expect(Object.keys(s.data ?? {}).sort()).toEqual(Object.keys(GENERATED_SECRET_KEYS).sort());
    const keys = dec(s.data?.ISLET_SEAL_KEYS);
    expect(keys).toMatch(/^k1:[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(keys.slice(3), 'base64')).toHaveLength(32);
    expect(dec(s.data?.ISLET_SEAL_ACTIVE_KEY_ID)).toBe('k1');
    expect(dec(s.data?.ISLET_INTERNAL_TOKEN).length).toBeGreaterThanOrEqual(16);
    expect(dec(s.data?.ISLET_JOURNAL_ARGS_KEY).length).toBeGreaterThanOrEqual(16);
    expect(s.metadata?.labels?.['app.kubernetes.io/instance']).toBe('islet');
  });

  it('every later run (upgrade, Argo CD sync, re-run Job) keeps the Secret byte for byte', async () => {
    const before = await core.readNamespacedSecret({ namespace: ns, name: 's1' });
    for (let i = 0; i < 3; i++) expect((await ensureSecret(core, ns, 's1')).action).toBe('kept');
    const after = await core.readNamespacedSecret({ namespace: ns, name: 's1' });
    expect(after.data).toEqual(before.data);
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
  });

  it('adds only the missing keys of a hand-made Secret, never touching rotated seal keys', async () => {
    const rotated =
      'k2:' + Buffer.alloc(32, 2).toString('base64') + ',k1:' + Buffer.alloc(32, 1).toString('base64');
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 's2' },
        data: {
          ISLET_SEAL_KEYS: Buffer.from(rotated).toString('base64'),
          ISLET_SEAL_ACTIVE_KEY_ID: Buffer.from('k2').toString('base64'),
        },
      },
    });
    const out = await ensureSecret(core, ns, 's2');
    expect(out).toEqual({ action: 'completed', added: ['ISLET_INTERNAL_TOKEN', 'ISLET_JOURNAL_ARGS_KEY'] });
    const s = await core.readNamespacedSecret({ namespace: ns, name: 's2' });
    expect(dec(s.data?.ISLET_SEAL_KEYS)).toBe(rotated);
    expect(dec(s.data?.ISLET_SEAL_ACTIVE_KEY_ID)).toBe('k2');
  });

  it('concurrent hook pods converge on one Secret (the loser of the create race keeps the winner)', async () => {
    const outs = await Promise.all([1, 2, 3, 4].map(() => ensureSecret(core, ns, 's3')));
    expect(outs.filter((o) => o.action === 'created')).toHaveLength(1);
    const s = await core.readNamespacedSecret({ namespace: ns, name: 's3' });
    expect((await ensureSecret(core, ns, 's3')).action).toBe('kept');
    expect((await core.readNamespacedSecret({ namespace: ns, name: 's3' })).data).toEqual(s.data);
  });

  it('--redis-password: the bundled Redis password is drawn once, added to an older Secret, then kept', async () => {
    // An install from before Redis auth: the Secret has the four keys, no password.
    await ensureSecret(core, ns, 's5');
    expect((await core.readNamespacedSecret({ namespace: ns, name: 's5' })).data?.ISLET_REDIS_PASSWORD).toBe(
      undefined,
    );
    const before = await core.readNamespacedSecret({ namespace: ns, name: 's5' });
    const out = await ensureSecret(core, ns, 's5', {}, ['ISLET_REDIS_PASSWORD']);
    expect(out).toEqual({ action: 'completed', added: ['ISLET_REDIS_PASSWORD'] });
    const s = await core.readNamespacedSecret({ namespace: ns, name: 's5' });
    const pw = dec(s.data?.ISLET_REDIS_PASSWORD);
    // 32 random bytes, in characters no config parser or JSON file needs escaped.
    expect(pw).toMatch(/^[A-Za-z0-9_-]{43}$/);
    for (const k of Object.keys(GENERATED_SECRET_KEYS)) expect(s.data?.[k]).toBe(before.data?.[k]);
    expect((await ensureSecret(core, ns, 's5', {}, ['ISLET_REDIS_PASSWORD'])).action).toBe('kept');
    expect(
      dec((await core.readNamespacedSecret({ namespace: ns, name: 's5' })).data?.ISLET_REDIS_PASSWORD),
    ).toBe(pw);
  });

  it('an API error other than 404/409 fails the hook (helm install stops), nothing half-made', async () => {
    api.failNext('GET', '/secrets/s4', 500);
    await expect(ensureSecret(core, ns, 's4')).rejects.toThrow();
    expect(api.get('v1/secrets', ns, 's4')).toBeUndefined();
  });
});
