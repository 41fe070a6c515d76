/** KubeConfigs for the test control plane: the test's admin, and a ServiceAccount by its token. */
import * as k8s from '@kubernetes/client-node';
import type { KubeAccess } from './control-plane.ts';

function config(server: string, caPem: string, user: k8s.User): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server, caData: Buffer.from(caPem).toString('base64'), skipTLSVerify: false }],
    users: [user],
    contexts: [{ name: 'test', cluster: 'test', user: user.name }],
    currentContext: 'test',
  });
  return kc;
}

export function adminConfig(access: KubeAccess): k8s.KubeConfig {
  return config(access.server, access.caPem, {
    name: 'admin',
    certData: Buffer.from(access.adminCertPem).toString('base64'),
    keyData: Buffer.from(access.adminKeyPem).toString('base64'),
  });
}

/** A ServiceAccount's identity: a bound token from the TokenRequest API, as a pod would get. */
export async function serviceAccountConfig(
  access: KubeAccess,
  namespace: string,
  serviceAccount: string,
  server = access.server,
): Promise<k8s.KubeConfig> {
  const core = adminConfig(access).makeApiClient(k8s.CoreV1Api);
  const tr = await core.createNamespacedServiceAccountToken({
    namespace,
    name: serviceAccount,
    body: { spec: { audiences: ['https://kubernetes.default.svc'], expirationSeconds: 3600 } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token for ${namespace}/${serviceAccount}`);
  return config(server, access.caPem, { name: serviceAccount, token });
}
