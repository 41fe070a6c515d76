// Redis with a password: the runner Deployments the operator creates read it from a projected file,
// and the operator itself (main.ts) authenticates from ISLET_REDIS_PASSWORD_FILE alone (fake
// Kubernetes API, real redis-server with requirepass).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_CA_FILE, REDIS_PASSWORD_FILE } from '../src/deployment.ts';
import { onOperatorFixture } from './on-operator-fixture.ts';
import { NS, POOLS, runnerPool, waitFor } from './operator-fixture.ts';

describe('Redis password and CA for runner pods', () => {
  const fx = onOperatorFixture((f) =>
    f.startOperator({
      ISLET_RUNNER_ENV_SECRET: 'islet-secrets',
      ISLET_RUNNER_REDIS_PASSWORD_SECRET: 'ext-redis',
      ISLET_RUNNER_REDIS_PASSWORD_KEY: 'password',
      ISLET_RUNNER_REDIS_CA_SECRET: 'ext-redis-ca',
    }),
  );

  it('the Deployment mounts them into the secrets directory and names them in *_FILE, never as values', async () => {
    fx.api.apply(POOLS, NS, runnerPool('auth'));
    const d = await waitFor('deployment', () => fx.deployment('auth'));
    const pod = d.spec!.template.spec!;
    const env = pod.containers[0]!.env ?? [];
    expect(env).toContainEqual({ name: 'ISLET_REDIS_PASSWORD_FILE', value: REDIS_PASSWORD_FILE });
    expect(env).toContainEqual({ name: 'ISLET_REDIS_CA_FILE', value: REDIS_CA_FILE });
    expect(REDIS_PASSWORD_FILE).toBe('/var/run/secrets/islet/redis/password');
    // No variable takes a value from the password's Secret (env values leak to /proc/<pid>/environ).
    expect(env.filter((e) => e.valueFrom?.secretKeyRef?.name === 'ext-redis')).toEqual([]);
    expect(env.find((e) => e.name === 'ISLET_REDIS_PASSWORD')).toBeUndefined();
    expect(pod.volumes?.find((v) => v.name === 'secrets')).toEqual({
      name: 'secrets',
      projected: {
        defaultMode: 0o440,
        sources: [
          { secret: { name: 'islet-secrets' } },
          { secret: { name: 'ext-redis', items: [{ key: 'password', path: 'redis/password' }] } },
          { secret: { name: 'ext-redis-ca', items: [{ key: 'ca.crt', path: 'redis/ca.crt' }] } },
        ],
      },
    });
    expect(pod.containers[0]!.volumeMounts).toContainEqual({
      name: 'secrets',
      mountPath: '/var/run/secrets/islet',
      readOnly: true,
    });
  });
});

describe('the operator process against a Redis that requires a password', () => {
  let locked: RedisServer;
  let dir: string;
  const children: ChildProcess[] = [];

  const fx = onOperatorFixture(async () => {
    locked = await startRedis({ appendOnly: false });
    const admin = new Redis(locked.url);
    await admin.config('SET', 'requirepass', 'op-redis-pw "quoted" \\ back');
    admin.disconnect();
    dir = mkdtempSync(join(tmpdir(), 'islet-op-auth-'));
  }, {});
  // Runs before the fixture's own stop (vitest runs a describe's after-hooks last registered first).
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await locked?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const startMain = (identity: string, extraEnv: Record<string, string>) => {
    const kubeconfig = join(dir, `${identity}.kubeconfig`);
    writeFileSync(kubeconfig, fx.api.kubeConfig().exportConfig());
    let out = '';
    const child = spawn(process.execPath, ['services/operator/src/main.ts'], {
      env: {
        PATH: process.env.PATH,
        KUBECONFIG: kubeconfig,
        ISLET_NAMESPACE: NS,
        ISLET_REDIS_URL: locked.url,
        ISLET_OPERATOR_IDENTITY: identity,
        ISLET_OPERATOR_LEASE_NAME: identity,
        ISLET_OPERATOR_METRICS_PORT: '0',
        ISLET_OPERATOR_HOST: '127.0.0.1',
        ISLET_OPERATOR_LEASE_DURATION_MS: '1500',
        ISLET_OPERATOR_RETRY_PERIOD_MS: '200',
        ISLET_LOG_LEVEL: 'info',
        ...extraEnv,
      },
      cwd: join(import.meta.dirname, '../../..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr?.resume();
    children.push(child);
    return {
      child,
      readyz: async () => {
        const port = Number(/"metricsPort":(\d+)/.exec(out)?.[1]);
        if (!port) return undefined;
        const res = await fetch(`http://127.0.0.1:${port}/readyz`);
        return { status: res.status, body: await res.text() };
      },
    };
  };

  it('reads the password from the file and is ready; without it Redis refuses and /readyz says so', async () => {
    const file = join(dir, 'password');
    writeFileSync(file, 'op-redis-pw "quoted" \\ back\n', { mode: 0o600 });
    const withFile = startMain('op-file', { ISLET_REDIS_PASSWORD_FILE: file });
    const without = startMain('op-none', {});
    // Two operator processes start from TypeScript at once: on a loaded 2-core machine that alone
    // has taken over 15 s, so each wait gets most of the test's limit (a ceiling, not a measure).
    const readyz = (what: string, op: typeof withFile, status: number) =>
      waitFor(
        what,
        async () => {
          const r = await op.readyz();
          return r?.status === status ? r : undefined;
        },
        45_000,
      );
    const ok = await readyz('ready with the file', withFile, 200);
    expect(ok.body).toContain('redis: ok');
    const refused = await readyz('readyz without a password', without, 503);
    expect(refused.body).toMatch(/redis: .*(NOAUTH|Authentication)/i);
    // The secret left the process's environment once read (scrubSecretEnv): not even the path stays.
    const environ = readFileSync(`/proc/${withFile.child.pid}/environ`, 'utf8');
    expect(environ).not.toContain('op-redis-pw');
  }, 100_000);
});
