/**
 * Secrets are not in a tenant's reach even if a wall falls: the local cluster's gateway and runner
 * get every secret as a file, drop it from their environment and are non-dumpable. The test reads
 * /proc/<pid>/environ and cmdline of every process of the cluster as root — what a tenant would get
 * if the files API's own checks were gone — and runs a tenant skill that reads every environ it can.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api } from './helpers.ts';

let cluster: Cluster;
let a: Api;

beforeAll(async () => {
  // One runner serving both modes: runs default to read-only, skills to workspace-write.
  cluster = await startCluster({ runners: [{ modes: ['read-only', 'workspace-write'] }] });
  a = api(cluster.url, cluster.devKey);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

const secrets = () => {
  const env = cluster.env;
  const keys = (env.ISLET_SEAL_KEYS ?? '').split(',').map((k) => k.split(':')[1] ?? '');
  const values = [...keys, env.ISLET_INTERNAL_TOKEN, env.ISLET_JOURNAL_ARGS_KEY, cluster.devKey];
  expect(values.every((v) => typeof v === 'string' && v.length >= 16)).toBe(true);
  return values as string[];
};

/** The pid and every descendant of it (a runner's sandbox hosts). */
function tree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {}
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]!) ?? []));
  return out;
}

describe('secrets out of every process environment', () => {
  it('gateway, runner and their children show no secret in /proc/<pid>/environ or cmdline', async () => {
    // A run first, so the runner has a live sandbox host to look at too.
    const run = await a(
      'POST',
      '/v1/runs',
      {
        code: 'return 1',
        description: 'warm a sandbox host',
        sessionId: 's',
        turnId: 't',
        callId: 'c',
      },
      { prefer: 'wait=20' },
    );
    expect(run.status).toBe(200);
    const pids = [cluster.gateways[0]!.pid!, cluster.runners[0]!.pid!].flatMap(tree);
    expect(pids.length).toBeGreaterThan(2);
    const values = secrets();
    for (const pid of pids) {
      let environ: string;
      let cmdline: string;
      try {
        environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        continue; // exited meanwhile
      }
      for (const v of values) {
        expect(environ.includes(v), `secret in /proc/${pid}/environ`).toBe(false);
        expect(cmdline.includes(v), `secret in /proc/${pid}/cmdline`).toBe(false);
      }
    }
    // The services got the files' names instead.
    const gatewayEnv = readFileSync(`/proc/${cluster.gateways[0]!.pid}/environ`, 'utf8').split('\0');
    expect(gatewayEnv.some((l) => l.startsWith('ISLET_SEAL_KEYS_FILE='))).toBe(true);
    expect(gatewayEnv.some((l) => l.startsWith('ISLET_SEAL_KEYS='))).toBe(false);
    const file = gatewayEnv.find((l) => l.startsWith('ISLET_INTERNAL_TOKEN_FILE='))!.split('=')[1]!;
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(file)).mode & 0o777).toBe(0o700);
  });

  it('gateway and runner are non-dumpable (prctl read back at start-up)', () => {
    expect(cluster.output('gateway', 0)).toContain('"dumpable":0');
    expect(cluster.output('runner', 0)).toContain('"dumpable":0');
  });

  it('a tenant skill reading every /proc/<pid>/environ on the host finds no secret', async () => {
    const values = secrets();
    const res = await a('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: `n=0; for f in /proc/[0-9]*/environ; do if cat "$f" >/dev/null 2>&1; then n=$((n+1)); cat "$f"; fi; done | tr '\\0' '\\n' > "$HOME/all"; echo "readable=$(grep -c . "$HOME/all")"; cat "$HOME/all"`,
    });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    // It could read its own environment (the loop works), and nothing holds a secret.
    expect(res.body.output).toMatch(/readable=[1-9]/);
    for (const v of values) expect(res.body.output.includes(v)).toBe(false);
  });
});
