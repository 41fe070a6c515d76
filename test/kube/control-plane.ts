/**
 * A real Kubernetes control plane for the kube tests: etcd, kube-apiserver (RBAC,
 * OwnerReferencesPermissionEnforcement, TLS with certificates made here by openssl) and
 * kube-controller-manager (Deployment, ReplicaSet, StatefulSet, disruption, garbage collector),
 * all on loopback and free ports, built by scripts/kube-toolchain.sh into a cache outside the repo.
 * There is no kubelet or scheduler: kubelet-standin.ts marks pods Ready. Every process is started
 * with testkit's spawnOwned and stopped by `stop()`, whatever happened.
 */
import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, spawnOwned, stopOwned } from '@islet/testkit';

export const ROOT = resolve(import.meta.dirname, '../..');

/** How the tests reach the API server: plain data, so vitest can hand it from globalSetup to the files. */
export interface KubeAccess {
  server: string;
  caPem: string;
  /** A system:masters client certificate (the test's own admin, never the operator's identity). */
  adminCertPem: string;
  adminKeyPem: string;
  /** Version the API server reports (gitVersion). */
  version: string;
}

export interface ControlPlane {
  access: KubeAccess;
  dir: string;
  /** Process group ids of etcd, kube-apiserver and kube-controller-manager (each leads its own). */
  groups(): number[];
  stop(): Promise<void>;
}

/** The groups among `groups` that still have a live member (ESRCH: none left). */
export function liveGroups(groups: number[]): number[] {
  return groups.filter((g) => {
    try {
      process.kill(-g, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code !== 'ESRCH';
    }
  });
}

/** The cache's bin directory, or why there is none (scripts/kube-toolchain.sh --check). */
export function kubeBinDir(): { bin: string } | { missing: string } {
  const r = spawnSync('bash', [join(ROOT, 'scripts/kube-toolchain.sh'), '--check'], { encoding: 'utf8' });
  if (r.status === 0) return { bin: r.stdout.trim() };
  return { missing: `control plane not built (run scripts/kube-toolchain.sh): ${r.stderr.trim()}` };
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** CA, serving certificate (127.0.0.1), admin client certificate, service-account signing key. */
function makeCertificates(dir: string): void {
  openssl(
    dir,
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt'].concat([
      '-days',
      '2',
      '-subj',
      '/CN=islet-test-ca',
    ]),
  );
  const leaf = (name: string, subj: string, ext: string) => {
    openssl(dir, [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subj,
    ]);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      dir,
      ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial'].concat([
        '-out',
        `${name}.crt`,
        '-days',
        '2',
        '-extfile',
        `${name}.ext`,
      ]),
    );
  };
  leaf(
    'apiserver',
    '/CN=kube-apiserver',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n',
  );
  leaf('admin', '/O=system:masters/CN=islet-test-admin', 'extendedKeyUsage=clientAuth\n');
  openssl(dir, ['genrsa', '-out', 'sa.key', '2048']);
  openssl(dir, ['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
}

function adminKubeconfig(dir: string, server: string): string {
  const path = join(dir, 'admin.kubeconfig');
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server, 'certificate-authority': join(dir, 'ca.crt') } }],
      users: [
        {
          name: 'admin',
          user: { 'client-certificate': join(dir, 'admin.crt'), 'client-key': join(dir, 'admin.key') },
        },
      ],
      contexts: [{ name: 'test', context: { cluster: 'test', user: 'admin' } }],
      'current-context': 'test',
    }),
  );
  return path;
}

/** GET over TLS with the admin certificate; resolves with [status, body] or rejects on no answer. */
export function adminGet(access: KubeAccess, path: string, timeoutMs = 5_000): Promise<[number, string]> {
  return new Promise((resolvePromise, reject) => {
    const req = request(
      `${access.server}${path}`,
      { ca: access.caPem, cert: access.adminCertPem, key: access.adminKeyPem, timeout: timeoutMs },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolvePromise([res.statusCode ?? 0, body]));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs: number, proc?: ChildProcess) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc && (proc.exitCode !== null || proc.signalCode !== null))
      throw new Error(`${what}: process exited`);
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: not ready within ${timeoutMs} ms`);
}

export async function startControlPlane(bin: string): Promise<ControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), 'islet-kube-'));
  const procs: ChildProcess[] = [];
  const stop = async () => {
    // Reverse order: controllers first, etcd last.
    for (const p of procs.reverse()) await stopOwned(p, 'SIGTERM', 5_000);
    rmSync(dir, { recursive: true, force: true });
  };
  const logTo = (proc: ChildProcess, name: string) => {
    const out = createWriteStream(join(dir, `${name}.log`));
    proc.stdout?.pipe(out);
    proc.stderr?.pipe(out);
  };
  try {
    makeCertificates(dir);
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcd = spawnOwned(
      join(bin, 'etcd'),
      [
        '--name=islet-test',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=islet-test=http://127.0.0.1:${peerPort}`,
        '--log-level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    procs.push(etcd);
    logTo(etcd, 'etcd');
    const server = `https://127.0.0.1:${apiPort}`;
    const issuer = 'https://kubernetes.default.svc';
    const apiserver = spawnOwned(
      join(bin, 'kube-apiserver'),
      [
        `--etcd-servers=http://127.0.0.1:${etcdPort}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        '--insecure-port=0',
        `--cert-dir=${dir}`,
        `--tls-cert-file=${join(dir, 'apiserver.crt')}`,
        `--tls-private-key-file=${join(dir, 'apiserver.key')}`,
        `--client-ca-file=${join(dir, 'ca.crt')}`,
        `--service-account-key-file=${join(dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
        `--service-account-issuer=${issuer}`,
        `--api-audiences=${issuer}`,
        '--authorization-mode=RBAC',
        '--enable-admission-plugins=OwnerReferencesPermissionEnforcement',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--endpoint-reconciler-type=none',
        '--profiling=false',
        '--v=1',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    procs.push(apiserver);
    logTo(apiserver, 'kube-apiserver');
    const access: KubeAccess = {
      server,
      caPem: readFileSync(join(dir, 'ca.crt'), 'utf8'),
      adminCertPem: readFileSync(join(dir, 'admin.crt'), 'utf8'),
      adminKeyPem: readFileSync(join(dir, 'admin.key'), 'utf8'),
      version: '',
    };
    await until(
      'kube-apiserver /readyz',
      async () => (await adminGet(access, '/readyz'))[0] === 200,
      180_000,
      apiserver,
    );
    access.version = (
      JSON.parse((await adminGet(access, '/version'))[1]) as { gitVersion: string }
    ).gitVersion;
    const kcm = spawnOwned(
      join(bin, 'kube-controller-manager'),
      [
        `--kubeconfig=${adminKubeconfig(dir, server)}`,
        '--controllers=deployment,replicaset,statefulset,disruption,garbagecollector,namespace,serviceaccount,serviceaccount-token',
        `--service-account-private-key-file=${join(dir, 'sa.key')}`,
        `--root-ca-file=${join(dir, 'ca.crt')}`,
        '--leader-elect=false',
        '--port=0',
        '--secure-port=0',
        '--concurrent-deployment-syncs=5',
        '--v=1',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    procs.push(kcm);
    logTo(kcm, 'kube-controller-manager');
    return {
      access,
      dir,
      groups: () => procs.map((p) => p.pid).filter((pid): pid is number => pid !== undefined),
      stop,
    };
  } catch (err) {
    const logs = ['etcd', 'kube-apiserver', 'kube-controller-manager']
      .map((n) => {
        try {
          return `--- ${n}\n${readFileSync(join(dir, `${n}.log`), 'utf8').slice(-3000)}`;
        } catch {
          return '';
        }
      })
      .join('\n');
    await stop();
    throw new Error(`${String(err)}\n${logs}`);
  }
}
