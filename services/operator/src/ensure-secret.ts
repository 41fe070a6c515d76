/**
 * Creates the release's Secret (seal keys, internal token, journal args key) once and never
 * regenerates it: the chart's pre-install/pre-upgrade hook Job runs this (operator image, no
 * shell) instead of rendering random bytes, which `helm template` / Argo CD would redraw on every
 * sync (a new seal key makes every stored record unreadable). A key already in the Secret is never
 * touched; a key missing from it (a Secret made by hand, a chart upgrade adding a key) is added.
 * Usage:
 *   node services/operator/src/ensure-secret.ts <namespace> <secret-name> [--redis-password]
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { statusOf } from './kube.ts';

/** Every key the Islet processes read from the Secret, with how a fresh value is drawn. */
export const GENERATED_SECRET_KEYS: Record<string, () => string> = {
  ISLET_SEAL_KEYS: () => `k1:${randomBytes(32).toString('base64')}`,
  ISLET_SEAL_ACTIVE_KEY_ID: () => 'k1',
  ISLET_INTERNAL_TOKEN: () => randomBytes(36).toString('base64url'),
  ISLET_JOURNAL_ARGS_KEY: () => randomBytes(36).toString('base64url'),
};

/**
 * Drawn only when asked (`--redis-password`: the chart's bundled Redis). base64url: nothing Redis's
 * config parser or a JSON file would need escaped.
 */
const OPTIONAL_SECRET_KEYS: Record<string, () => string> = {
  ISLET_REDIS_PASSWORD: () => randomBytes(32).toString('base64url'),
};

type EnsureOutcome = { action: 'created' | 'kept' | 'completed'; added: string[] };

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** Makes sure `name` exists in `namespace` with every generated key; never changes a present key. */
export async function ensureSecret(
  core: CoreV1Api,
  namespace: string,
  name: string,
  labels: Record<string, string> = {},
  optional: readonly (keyof typeof OPTIONAL_SECRET_KEYS)[] = [],
): Promise<EnsureOutcome> {
  const wanted: Record<string, () => string> = { ...GENERATED_SECRET_KEYS };
  for (const k of optional) wanted[k] = OPTIONAL_SECRET_KEYS[k]!;
  // Two attempts: a concurrent creator (two hook pods, a retried Job) wins the race, we then keep theirs.
  for (let attempt = 0; attempt < 5; attempt++) {
    let existing: V1Secret | undefined;
    try {
      existing = await core.readNamespacedSecret({ namespace, name });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    if (!existing) {
      const data: Record<string, string> = {};
      for (const [k, draw] of Object.entries(wanted)) data[k] = b64(draw());
      try {
        await core.createNamespacedSecret({
          namespace,
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'Opaque',
            metadata: {
              name,
              labels: { ...labels, 'app.kubernetes.io/managed-by': 'islet-ensure-secret' },
            },
            data,
          },
        });
        return { action: 'created', added: Object.keys(data) };
      } catch (err) {
        if (statusOf(err) === 409) continue; // someone else created it first: keep theirs
        throw err;
      }
    }
    const data = { ...(existing.data ?? {}) };
    const added = Object.keys(wanted).filter((k) => !data[k]);
    if (!added.length) return { action: 'kept', added };
    for (const k of added) data[k] = b64(wanted[k]!());
    try {
      // PUT with the read resourceVersion: a concurrent writer makes this 409 and we re-read.
      await core.replaceNamespacedSecret({ namespace, name, body: { ...existing, data } });
      return { action: 'completed', added };
    } catch (err) {
      if (statusOf(err) === 409) continue;
      throw err;
    }
  }
  throw new Error(`secret ${namespace}/${name}: too many concurrent writers`);
}

if (import.meta.main) {
  const [namespace, name, ...flags] = process.argv.slice(2);
  const unknown = flags.filter((f) => f !== '--redis-password');
  if (!namespace || !name || unknown.length) {
    console.error('usage: ensure-secret.ts <namespace> <secret-name> [--redis-password]');
    process.exit(2);
  }
  const kc = new KubeConfig();
  kc.loadFromDefault();
  try {
    const optional = flags.includes('--redis-password') ? (['ISLET_REDIS_PASSWORD'] as const) : [];
    const out = await ensureSecret(kc.makeApiClient(CoreV1Api), namespace, name, {}, optional);
    // Key names only, never values.
    console.log(JSON.stringify({ msg: 'islet secret ensured', namespace, name, ...out }));
  } catch (err) {
    console.error(JSON.stringify({ msg: 'islet secret not ensured', namespace, name, err: String(err) }));
    process.exit(1);
  }
}
