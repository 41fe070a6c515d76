/**
 * Two releases on one Redis for the mixed-release tests (end-push-mixed, kind-none-mixed): this
 * checkout's cluster and a previous release's (previous-release.ts), sharing the secrets a run
 * crosses releases with, and the raw HTTP answer both are compared by.
 */
import { execFileSync } from 'node:child_process';
import { type Cluster, startCluster } from '@islet/devstack';
import { type PreviousRelease, previousRelease } from './previous-release.ts';

/** Whether this clone holds `rev` (a shallow clone may not: the tests that need it are skipped). */
export function hasCommit(rev: string): boolean {
  try {
    execFileSync('git', ['cat-file', '-e', `${rev}^{commit}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface MixedReleases {
  release: PreviousRelease;
  head: Cluster;
  prev: Cluster;
  stop(): Promise<void>;
}

/** One gateway and one read-only runner of each release on the head's Redis. */
export async function startMixed(rev: string): Promise<MixedReleases> {
  const release = await previousRelease(rev);
  let head: Cluster | undefined;
  try {
    head = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'] }] });
    const shared = [
      'ISLET_SEAL_KEYS',
      'ISLET_INTERNAL_TOKEN',
      'ISLET_JOURNAL_ARGS_KEY',
      'ISLET_WORKSPACE_ROOT',
    ];
    const prev = await release.startCluster({
      redisUrl: head.redisUrl,
      gateways: 1,
      runners: [{ modes: ['read-only'] }],
      env: {
        ...Object.fromEntries(shared.map((name) => [name, head!.env[name] as string])),
        // Its sandbox hosts outside the kernel launcher: the launcher's view of the file system is
        // this checkout's, not the tree's (a host there exits at its start). What these tests
        // check is the stored and pushed forms and their readers, not the sandbox.
        ISLET_SANDBOX_JAIL: 'off',
      },
    });
    const started = head;
    return {
      release,
      head: started,
      prev,
      async stop() {
        await prev.stop();
        await started.stop();
        release.remove();
      },
    };
  } catch (err) {
    await head?.stop();
    release.remove();
    throw err;
  }
}

/** The raw answer of `method path` on `url` (its body as text: compared byte for byte). */
export async function call(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}
