// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON, checked by the assertions
// The bundled Redis requires a password, and every Islet pod reads it from a file. The rendered
// start-up script, redis.conf and probes are also run for real here, against a real redis-server.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnOwned, stopOwned } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { CHART, helm, type K8sObject, podSpecs, render, renderArgs } from './helm.ts';
import { find, operatorConfigOf, runnerDeployments } from './runners.ts';

const BUNDLED = join(CHART, 'ci/bundled-redis-values.yaml');
const DEFAULT = join(CHART, 'ci/default-values.yaml');
const SENTINEL = join(CHART, 'ci/sentinel-values.yaml');
const PASSWORD_FILE = '/var/run/secrets/islet/redis/password';
const VALUES_SECRETS = [
  `secrets.sealKeys.k1=${Buffer.alloc(32, 1).toString('base64')}`,
  'secrets.internalToken=0123456789abcdef0123',
  'secrets.journalArgsKey=0123456789abcdef0123',
];

const envOf = (c: any) => Object.fromEntries((c.env ?? []).map((e: any) => [e.name, e]));
const component = (o: K8sObject) => o.metadata.labels?.['app.kubernetes.io/component'];

/** Gateway, operator and runner pods (helm's and the operator-built ones) of a render. */
function islandPods(objs: K8sObject[]) {
  return [
    ...podSpecs(objs).filter((p) => ['gateway', 'operator', 'runner'].includes(component(p.obj))),
    // Built by the operator from the rendered RunnerPools (helm's own are in objs already).
    ...runnerDeployments(objs)
      .filter((d) => !objs.includes(d))
      .map((d) => ({
        obj: { ...d, metadata: { ...d.metadata, name: `op:${d.metadata.name}` } },
        spec: d.spec.template.spec,
      })),
  ];
}

describe('bundled Redis: a password from the Secret, as files', () => {
  const objs = render({ valuesFiles: [BUNDLED] });
  const sts = find(objs, 'StatefulSet')[0]!;
  const pod = sts.spec.template.spec;

  it('an init container turns the mounted password into requirepass; no password in args, env or ConfigMap', () => {
    const init = pod.initContainers.find((c: any) => c.name === 'auth');
    expect(init.command).toEqual(['sh', '/etc/redis/auth-init.sh']);
    expect(envOf(init).ISLET_REDIS_PASSWORD_FILE.value).toBe(PASSWORD_FILE);
    const pwVolume = pod.volumes.find((v: any) => v.name === 'password');
    expect(pwVolume.projected.sources).toEqual([
      { secret: { name: 'islet-secrets', items: [{ key: 'ISLET_REDIS_PASSWORD', path: 'redis/password' }] } },
    ]);
    expect(pod.volumes.find((v: any) => v.name === 'auth')).toEqual({
      name: 'auth',
      emptyDir: { medium: 'Memory', sizeLimit: '1Mi' },
    });
    const redis = pod.containers.find((c: any) => c.name === 'redis');
    expect(redis.args).toEqual(['/etc/redis/redis.conf']);
    const conf = find(objs, 'ConfigMap', (c) => c.metadata.name === 'islet-redis')[0]!.data['redis.conf'];
    expect(conf).toMatch(/^include \/run\/islet-redis\/auth\.conf$/m);
    expect(conf).toMatch(/^protected-mode yes$/m);
    expect(conf).not.toMatch(/^\s*requirepass/m);
    // Nothing about the password is a value of any container's env (only file paths).
    for (const c of [...pod.initContainers, ...pod.containers])
      for (const e of c.env ?? []) expect(e.valueFrom, `${c.name} ${e.name}`).toBeUndefined();
    // A rotated password (secrets.revision) restarts Redis.
    expect(sts.spec.template.metadata.annotations['checksum/secret']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('probes run an authenticated command; the exporter authenticates from a file', () => {
    const redis = pod.containers.find((c: any) => c.name === 'redis');
    for (const probe of [redis.readinessProbe, redis.livenessProbe]) {
      const cmd = probe.exec.command.join(' ');
      expect(cmd).toContain('REDISCLI_AUTH="$(cat /run/islet-redis/password)" redis-cli -p 6379 ping');
      expect(cmd).not.toMatch(/ -a /);
    }
    const exporter = pod.containers.find((c: any) => c.name === 'exporter');
    expect(envOf(exporter).REDIS_PASSWORD_FILE.value).toBe('/run/islet-redis/exporter-passwords.json');
    expect(exporter.volumeMounts).toContainEqual({
      name: 'auth',
      mountPath: '/run/islet-redis',
      readOnly: true,
    });
  });

  it('gateway, operator and every runner pod (helm and operator built) get ISLET_REDIS_PASSWORD_FILE', () => {
    for (const set of [[], ['operator.enabled=false']]) {
      const rendered = render({ valuesFiles: [BUNDLED], set });
      const pods = islandPods(rendered);
      const names = pods.map((p) => p.obj.metadata.name);
      expect(names).toContain('islet-gateway');
      expect(names.some((n) => n.includes('runner'))).toBe(true);
      if (!set.length) expect(names).toContain('islet-operator');
      for (const { obj, spec } of pods) {
        const c = spec.containers[0];
        expect(envOf(c).ISLET_REDIS_PASSWORD_FILE?.value, obj.metadata.name).toBe(PASSWORD_FILE);
        expect(envOf(c).ISLET_REDIS_PASSWORD, obj.metadata.name).toBeUndefined();
        const vol = spec.volumes.find((v: any) => v.name === 'secrets');
        expect(vol.projected.sources, obj.metadata.name).toContainEqual({
          secret: { name: 'islet-secrets', items: [{ key: 'ISLET_REDIS_PASSWORD', path: 'redis/password' }] },
        });
        expect(c.volumeMounts).toContainEqual({
          name: 'secrets',
          mountPath: '/var/run/secrets/islet',
          readOnly: true,
        });
      }
    }
    // The operator tells runner pods where the password is (services/operator/src/deployment.ts).
    const config = operatorConfigOf(objs)!;
    expect(config.ISLET_RUNNER_REDIS_PASSWORD_SECRET).toBe('islet-secrets');
    expect(config.ISLET_RUNNER_REDIS_PASSWORD_KEY).toBe('ISLET_REDIS_PASSWORD');
  });

  it('the password is generated once by the hook, or given in values, or from redis.auth.existingSecret', () => {
    const job = find(objs, 'Job')[0]!;
    expect(job.spec.template.spec.containers[0].command.at(-1)).toBe('--redis-password');
    // Values: required with the bundled Redis; the password itself appears only base64'd in the Secret.
    const missing = helm(renderArgs({ valuesFiles: [BUNDLED], set: VALUES_SECRETS }));
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('secrets.redisPassword: the bundled Redis requires a password');
    const pw = 'Zq8-values-given-redis-password';
    const out = helm(
      renderArgs({ valuesFiles: [BUNDLED], set: [...VALUES_SECRETS, `secrets.redisPassword=${pw}`] }),
    );
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).not.toContain(pw);
    expect(out.stdout.split(Buffer.from(pw).toString('base64')).length - 1).toBe(1);
    // Its own Secret: no hook flag, every pod projects that Secret's key.
    const own = render({
      valuesFiles: [BUNDLED],
      set: ['redis.auth.existingSecret=redis-pw', 'redis.auth.existingSecretKey=pw'],
    });
    expect(find(own, 'Job')[0]!.spec.template.spec.containers[0].command).not.toContain('--redis-password');
    const item = { secret: { name: 'redis-pw', items: [{ key: 'pw', path: 'redis/password' }] } };
    expect(find(own, 'StatefulSet')[0]!.spec.template.spec.volumes).toContainEqual({
      name: 'password',
      projected: { defaultMode: 0o440, sources: [item] },
    });
    for (const { spec } of islandPods(own))
      expect(spec.volumes.find((v: any) => v.name === 'secrets').projected.sources).toContainEqual(item);
    // A password in values the chart cannot store (existingSecret / hook) fails instead of vanishing.
    const lost = helm(renderArgs({ valuesFiles: [BUNDLED], set: ['secrets.redisPassword=x'] }));
    expect(lost.stderr).toContain('secrets.redisPassword is stored in a Secret the chart renders');
  });

  it('an external Redis without a password gets no password file; with redis.auth it does', () => {
    for (const { spec } of islandPods(render({ valuesFiles: [DEFAULT] })))
      expect(envOf(spec.containers[0]).ISLET_REDIS_PASSWORD_FILE).toBeUndefined();
    const withAuth = render({ valuesFiles: [DEFAULT], set: ['redis.auth.existingSecret=ext-redis'] });
    for (const { spec } of islandPods(withAuth))
      expect(envOf(spec.containers[0]).ISLET_REDIS_PASSWORD_FILE.value).toBe(PASSWORD_FILE);
  });
});

describe('the rendered auth script, redis.conf and probes against a real redis-server', () => {
  const objs = render({ valuesFiles: [BUNDLED] });
  const cm = find(objs, 'ConfigMap', (c) => c.metadata.name === 'islet-redis')[0]!;
  const redisC = find(objs, 'StatefulSet')[0]!.spec.template.spec.containers.find(
    (c: any) => c.name === 'redis',
  );
  const dir = mkdtempSync(join(tmpdir(), 'islet-redis-auth-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const initAuth = (password: string, name: string) => {
    const authDir = join(dir, name);
    mkdirSync(authDir);
    const secret = join(dir, `${name}.secret`);
    writeFileSync(secret, password);
    const r = spawnSync('sh', ['-c', cm.data['auth-init.sh']], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        ISLET_REDIS_PASSWORD_FILE: secret,
        ISLET_REDIS_AUTH_DIR: authDir,
        ISLET_REDIS_EXPORTER_ADDR: 'redis://127.0.0.1:6379',
      },
    });
    return { ...r, authDir };
  };

  it('refuses an empty password file and control characters (Redis would not start without auth.conf)', () => {
    expect(initAuth(' \n', 'empty')).toMatchObject({
      status: 1,
      stderr: expect.stringContaining('is empty'),
    });
    expect(initAuth('ab\u0001cd', 'ctl')).toMatchObject({
      status: 1,
      stderr: expect.stringContaining('control characters'),
    });
  });

  it.each([
    ['generated', Buffer.alloc(32, 7).toString('base64url')],
    ['hostile', `p"a\\ss w$rd'x%s{}`],
  ])(
    '%s password: only that password opens Redis; probes pass; the exporter map matches',
    async (name, pw) => {
      const init = initAuth(`  ${pw}\n`, name);
      expect(init.status, init.stderr).toBe(0);
      const exporterMap = JSON.parse(readFileSync(join(init.authDir, 'exporter-passwords.json'), 'utf8'));
      expect(exporterMap).toEqual({ 'redis://127.0.0.1:6379': pw });
      const port = await freePort();
      const data = join(dir, `${name}-data`);
      mkdirSync(data);
      const conf = join(dir, `${name}.conf`);
      writeFileSync(
        conf,
        cm.data['redis.conf']
          .replaceAll('/run/islet-redis', init.authDir)
          .replace(/^dir \/data$/m, `dir ${data}`)
          .replace(/^port 6379$/m, `port ${port}`),
      );
      const proc = spawnOwned('redis-server', [conf], { stdio: ['ignore', 'ignore', 'inherit'] });
      const client = new Redis({ port, password: pw, lazyConnect: true, maxRetriesPerRequest: 1 });
      client.on('error', () => {}); // refused until redis-server listens
      try {
        for (let i = 0; i < 100; i++) {
          if ((await client.ping().catch(() => '')) === 'PONG') break;
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(await client.set('k', 'v')).toBe('OK');
        // The password is in no process argument.
        expect(readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8')).not.toContain(pw);
        const cli = (args: string[], env: Record<string, string> = {}) =>
          spawnSync('redis-cli', ['-p', String(port), ...args], {
            encoding: 'utf8',
            env: { PATH: process.env.PATH, ...env },
          });
        expect(cli(['ping']).stdout).toContain('NOAUTH');
        expect(cli(['ping'], { REDISCLI_AUTH: 'wrong' }).stdout).not.toContain('PONG');
        const probe = (p: any) =>
          spawnSync(
            'sh',
            [
              '-c',
              p.exec.command[2].replaceAll('/run/islet-redis', init.authDir).replace('-p 6379', `-p ${port}`),
            ],
            {
              encoding: 'utf8',
              env: { PATH: process.env.PATH },
            },
          );
        expect(probe(redisC.readinessProbe).status).toBe(0);
        expect(probe(redisC.livenessProbe).status).toBe(0);
        // A probe holding the wrong password fails: NOAUTH/WRONGPASS is not ready.
        writeFileSync(join(init.authDir, 'password'), 'wrong');
        expect(probe(redisC.readinessProbe).status).not.toBe(0);
        expect(probe(redisC.livenessProbe).status).not.toBe(0);
      } finally {
        client.disconnect();
        await stopOwned(proc, 'SIGKILL');
      }
    },
  );
});

describe('external Redis topologies, fair share and operator timings from values', () => {
  const objs = render({ valuesFiles: [SENTINEL] });
  const config = find(objs, 'ConfigMap', (c) => c.metadata.name === 'islet-config')[0]!.data;

  it('sentinel over TLS: mode, sentinels and master in the ConfigMap; password and CA as files', () => {
    expect(config).toMatchObject({
      ISLET_REDIS_MODE: 'sentinel',
      ISLET_REDIS_SENTINELS: '10.20.0.11:26379,10.20.0.12:26379,10.20.0.13:26379',
      ISLET_REDIS_SENTINEL_MASTER: 'islet',
      ISLET_REDIS_URL: 'rediss://islet-redis',
    });
    const sources = [
      { secret: { name: 'islet-redis-auth', items: [{ key: 'redis-password', path: 'redis/password' }] } },
      { secret: { name: 'islet-redis-ca', items: [{ key: 'ca.crt', path: 'redis/ca.crt' }] } },
    ];
    const pods = islandPods(objs);
    expect(pods.length).toBeGreaterThanOrEqual(4);
    for (const { obj, spec } of pods) {
      const env = envOf(spec.containers[0]);
      expect(env.ISLET_REDIS_PASSWORD_FILE?.value, obj.metadata.name).toBe(PASSWORD_FILE);
      expect(env.ISLET_REDIS_CA_FILE?.value, obj.metadata.name).toBe('/var/run/secrets/islet/redis/ca.crt');
      const vol = spec.volumes.find((v: any) => v.name === 'secrets');
      for (const s of sources) expect(vol.projected.sources, obj.metadata.name).toContainEqual(s);
    }
    // The operator's own pod has the Redis items only, none of the seal keys.
    const op = find(objs, 'Deployment', (d) => component(d) === 'operator')[0]!;
    expect(op.spec.template.spec.volumes.find((v: any) => v.name === 'secrets').projected.sources).toEqual(
      sources,
    );
    // Egress reaches the sentinels' port as well as the data nodes'.
    const np = find(objs, 'NetworkPolicy', (n) => n.metadata.name === 'islet-runner')[0]!;
    const redisRule = np.spec.egress.find((r: any) => r.to?.[0]?.ipBlock?.cidr === '10.20.0.0/24');
    expect(redisRule.ports.map((p: any) => p.port).sort()).toEqual([26379, 6379]);
  });

  it('cluster mode: seeds in the URL, their ports allowed; refusals for impossible topologies', async () => {
    const cluster = render({
      valuesFiles: [DEFAULT],
      set: ['redis.mode=cluster', 'redis.url=redis://10.0.0.1:7000\\,redis://10.0.0.2:7001'],
    });
    expect(find(cluster, 'ConfigMap', (c) => c.metadata.name === 'islet-config')[0]!.data).toMatchObject({
      ISLET_REDIS_MODE: 'cluster',
      ISLET_REDIS_URL: 'redis://10.0.0.1:7000,redis://10.0.0.2:7001',
    });
    // What the chart renders is what the services' Redis configuration accepts (core redis-connection.ts).
    const { redisConfigProblems } = await import('@islet/core');
    const clusterCm = find(cluster, 'ConfigMap', (c) => c.metadata.name === 'islet-config')[0]!.data;
    expect(
      redisConfigProblems({ ISLET_REDIS_URL: clusterCm.ISLET_REDIS_URL, ISLET_REDIS_MODE: 'cluster' }),
    ).toEqual([]);
    expect(
      redisConfigProblems({
        ISLET_REDIS_URL: config.ISLET_REDIS_URL,
        ISLET_REDIS_MODE: config.ISLET_REDIS_MODE,
        ISLET_REDIS_SENTINELS: config.ISLET_REDIS_SENTINELS,
        ISLET_REDIS_SENTINEL_MASTER: config.ISLET_REDIS_SENTINEL_MASTER,
      }),
    ).toEqual([]);
    const np = find(cluster, 'NetworkPolicy', (n) => n.metadata.name === 'islet-gateway')[0]!;
    const rule = np.spec.egress.find((r: any) => r.to?.[0]?.ipBlock?.cidr === '10.0.0.0/8');
    expect(rule.ports.map((p: any) => p.port).sort()).toEqual([6379, 7000, 7001]);
    const fails = (set: string[], file = DEFAULT) =>
      helm(renderArgs({ valuesFiles: [file], setString: set })).stderr;
    expect(fails(['redis.mode=sentinel'], BUNDLED)).toContain('needs an external Redis');
    expect(fails(['redis.mode=sentinel'])).toContain('list the sentinels in redis.sentinels');
    expect(fails(['redis.mode=replicated'])).toMatch(/mode/);
    expect(fails(['extraEnv.ISLET_REDIS_MODE=sentinel'])).toContain(
      'set redis.mode instead of extraEnv.ISLET_REDIS_MODE',
    );
    expect(fails(['extraEnv.ISLET_OPERATOR_RENEW_DEADLINE_MS=9000'])).toContain(
      'set operator.renewDeadlineSeconds instead',
    );
  });

  it('fair share: values become the runners’ ISLET_TENANT_* settings, validated by the schema', async () => {
    const { configSchema } = await import('@islet/core');
    expect(config).toMatchObject({
      ISLET_TENANT_POOL_SHARE: '0.25',
      ISLET_TENANT_MAX_EXECUTING_PER_POOL: '8',
      ISLET_TENANT_SHARE_LEASE_MS: '30000',
      ISLET_TENANT_SHARE_RECHECK_MS: '5000',
    });
    const shape = configSchema.shape;
    expect(shape.ISLET_TENANT_POOL_SHARE.parse(config.ISLET_TENANT_POOL_SHARE)).toBe(0.25);
    expect(shape.ISLET_TENANT_SHARE_LEASE_MS.parse(config.ISLET_TENANT_SHARE_LEASE_MS)).toBe(30_000);
    // The defaults render the code's defaults.
    const defaults = find(
      render({ valuesFiles: [DEFAULT] }),
      'ConfigMap',
      (c) => c.metadata.name === 'islet-config',
    )[0]!.data;
    expect(Number(defaults.ISLET_TENANT_POOL_SHARE)).toBe(shape.ISLET_TENANT_POOL_SHARE.parse(undefined));
    expect(Number(defaults.ISLET_TENANT_SHARE_RECHECK_MS)).toBe(
      shape.ISLET_TENANT_SHARE_RECHECK_MS.parse(undefined),
    );
    for (const bad of [
      'runners.fairShare.tenantPoolShare=0',
      'runners.fairShare.tenantPoolShare=1.5',
      'runners.fairShare.leaseMs=10',
    ])
      expect(helm(renderArgs({ valuesFiles: [DEFAULT], set: [bad] })).status, bad).not.toBe(0);
  });

  it('parking: values become the runners’ ISLET_RUNNER_PARK* settings; defaults are the code’s; bad ones fail', async () => {
    const { configSchema } = await import('@islet/core');
    const shape = configSchema.shape;
    expect(config).toMatchObject({ ISLET_RUNNER_PARKED_ISOLATES_MAX: '2' });
    expect(shape.ISLET_RUNNER_PARKED_ISOLATES_MAX.parse(config.ISLET_RUNNER_PARKED_ISOLATES_MAX)).toBe(2);
    const defaults = find(
      render({ valuesFiles: [DEFAULT] }),
      'ConfigMap',
      (c) => c.metadata.name === 'islet-config',
    )[0]!.data;
    for (const name of [
      'ISLET_RUNNER_PARK_AFTER_MS',
      'ISLET_RUNNER_PARKED_MAX',
      'ISLET_RUNNER_PARKED_ISOLATES_MAX',
    ] as const)
      expect(Number(defaults[name]), name).toBe(shape[name].parse(undefined));
    for (const bad of ['runners.parking.afterMs=0', 'runners.parking.max=-1', 'runners.parking.nope=1'])
      expect(helm(renderArgs({ valuesFiles: [DEFAULT], set: [bad] })).status, bad).not.toBe(0);
    expect(
      helm(renderArgs({ valuesFiles: [DEFAULT], setString: ['extraEnv.ISLET_RUNNER_PARKED_MAX=0'] })).stderr,
    ).toContain('set runners.parking.max instead');
  });

  it('operator leader-election timings from values, in ms, accepted by the operator; unsafe ones fail', async () => {
    const { leaderTimings } = await import('@islet/operator');
    expect(leaderTimings(operatorConfigOf(objs)!)).toEqual({
      leaseDurationMs: 30_000,
      renewDeadlineMs: 20_000,
      retryPeriodMs: 4_000,
      requestTimeoutMs: 5_000,
    });
    // Defaults: client-go's 15 / 10 / 2 s.
    expect(leaderTimings(operatorConfigOf(render({ valuesFiles: [DEFAULT] }))!)).toEqual({
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      requestTimeoutMs: 5_000,
    });
    const fails = (setJson: string[]) => helm(renderArgs({ valuesFiles: [DEFAULT], setJson })).stderr;
    expect(fails(['operator.renewDeadlineSeconds=15'])).toContain(
      'must be below operator.leaseDurationSeconds',
    );
    expect(fails(['operator.retryPeriodSeconds=10'])).toContain('operator.retryPeriodSeconds must be below');
    expect(fails(['operator.leaseDurationSeconds=1.5', 'operator.retryPeriodSeconds=0.2'])).toBe('');
  });
});
