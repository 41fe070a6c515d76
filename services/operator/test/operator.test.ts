// The operator end to end against the FAKE Kubernetes API (services/operator/test) and a
// REAL Redis with real BullMQ jobs making the queue depth.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pausedRunsKey, QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import type { V1Deployment, V1Lease } from '@kubernetes/client-node';
import { type Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { Operator } from '../src/operator.ts';
import { DELETION_COST_ANNOTATION, DRAINING_ANNOTATION } from '../src/reconciler.ts';
import type { RunnerPool } from '../src/runner-pool.ts';
import type { FakeKubeApi } from './fake-kube-api.ts';
import { onOperatorFixture } from './on-operator-fixture.ts';
import { DEPLOYS, NS as ns, POOLS, runnerPool, waitFor } from './operator-fixture.ts';

const MODE = 'workspace-write';
/** What the chart gives the operator for runner pods (their env ConfigMap and secrets). */
const RUNNER_ENV = { ISLET_RUNNER_ENV_CONFIGMAP: 'islet-runner-env', ISLET_RUNNER_ENV_SECRET: 'islet-seal' };

const pool = (name: string, spec: Record<string, unknown>): RunnerPool =>
  runnerPool(name, { mode: MODE, maxReplicas: 6, scaleDownStabilizationSeconds: 2, ...spec });

describe('RunnerPool operator (fake Kubernetes API, real Redis, real BullMQ)', () => {
  let redis: Redis;
  let api: FakeKubeApi;
  let op: Operator;
  let queue: Queue;
  const fx = onOperatorFixture(async (f) => {
    ({ redis, api } = f);
    queue = f.queue(MODE);
    op = await f.startOperator(
      {
        ...RUNNER_ENV,
        ISLET_OPERATOR_WATCH_BACKOFF_INITIAL_MS: '20',
        ISLET_OPERATOR_WATCH_BACKOFF_MAX_MS: '200',
        ISLET_OPERATOR_LEASE_NAME: 'main',
      },
      'op-main',
    );
  });

  it('creates the Deployment with the mode’s security profile and reports Ready with observedGeneration', async () => {
    api.apply(POOLS, ns, pool('ww', {}));
    const d = await waitFor(
      'deployment',
      () => api.get(DEPLOYS, ns, 'ww-runner') as V1Deployment | undefined,
    );
    const podSpec = d.spec?.template.spec;
    expect(d.spec?.replicas).toBe(1);
    expect(podSpec?.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(600);
    expect(podSpec?.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'Localhost', localhostProfile: 'islet/runner.json' },
    });
    expect(podSpec?.containers[0]?.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'Localhost', localhostProfile: 'islet/runner.json' },
    });
    // Secrets as files in the mounted Secret, never envFrom (environment values leak to children).
    expect(podSpec?.containers[0]?.envFrom).toEqual([{ configMapRef: { name: 'islet-runner-env' } }]);
    expect(podSpec?.containers[0]?.env).toContainEqual({
      name: 'ISLET_SEAL_KEYS_FILE',
      value: '/var/run/secrets/islet/ISLET_SEAL_KEYS',
    });
    expect(podSpec?.volumes).toContainEqual({
      name: 'secrets',
      projected: { defaultMode: 0o440, sources: [{ secret: { name: 'islet-seal' } }] },
    });
    expect(d.metadata?.ownerReferences?.[0]?.kind).toBe('RunnerPool');
    const ready = await waitFor('Ready=True', () => {
      const c = fx.condition('ww', 'Ready');
      return c?.status === 'True' ? c : undefined;
    });
    expect(ready.observedGeneration).toBe(1);
    expect(fx.condition('ww', 'Stalled')?.status).toBe('False');
    // Status is written through the status subresource.
    expect(api.requests.some((r) => r.method === 'PUT' && r.path.endsWith('/runnerpools/ww/status'))).toBe(
      true,
    );
  });

  it('scales up when real BullMQ jobs queue (runs paused for a decision are not demand)', async () => {
    await queue.addBulk(Array.from({ length: 7 }, (_, i) => ({ name: 'run', data: { i } })));
    // 7 waiting → ceil(7/2) = 4; the 6 runs paused for a human decision hold no replicas.
    for (let i = 0; i < 6; i++) await redis.zadd(pausedRunsKey(MODE), Date.now(), `run-paused-${i}`);
    await waitFor('4 replicas', () => fx.replicasOf('ww') === 4);
    await waitFor('4 pods', () => fx.podsOf('ww').length === 4);
    // The status is written after the Deployment (and its Events): read it once it says 4.
    const pool = await waitFor('status desired 4', () => {
      const p = api.get(POOLS, ns, 'ww') as RunnerPool;
      return p.status?.desiredReplicas === 4 ? p : undefined;
    });
    expect(pool.status?.lastScaleTime).toBeTruthy();
    const text = await waitFor('up event counted', async () => {
      const t = await (await fetch(`http://127.0.0.1:${op.metricsPort()}/metrics`)).text();
      return t.includes('islet_operator_scale_events_total{pool="ww",direction="up"}') ? t : undefined;
    });
    expect(text).toMatch(/islet_operator_desired_replicas\{pool="ww"\} 4/);
    expect(text).toMatch(/islet_operator_reconcile_total\{result="ok"\} \d+/);
    // maxReplicas with the pool's mode: the "pool at max with a backlog" alert joins it with queue age.
    expect(text).toContain(`islet_operator_max_replicas{pool="ww",mode="${MODE}"} 6`);
    expect(text).toMatch(/^islet_build_info\{version="[^"]+",revision="[^"]+",node="v\d+[^"]*"\} 1$/m);
  });

  it('holds replicas through the scale-down window, then drains the idle pods, keeping the busy one', async () => {
    const pods = fx.podsOf('ww');
    const busyPod = pods[2]!.metadata!.name!;
    // A real worker named after a pod takes one job and keeps it active: that pod is busy.
    const drainedAt = Date.now();
    await queue.drain(true);
    await redis.del(pausedRunsKey(MODE));
    await queue.add('run', { long: true });
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const worker = new Worker(runQueueName(MODE), () => held, {
      connection: { host: '127.0.0.1', port: fx.redisServer.port, maxRetriesPerRequest: null },
      prefix: QUEUE_PREFIX,
      name: busyPod,
    });
    await waitFor('job active', async () => (await queue.getJobCounts('active')).active === 1);
    // Depth is now 1 → 1 replica wanted, but the 4 stays for the 2 s window.
    await new Promise((r) => setTimeout(r, 1000));
    expect(fx.replicasOf('ww')).toBe(4);
    await waitFor('1 replica', () => fx.replicasOf('ww') === 1);
    expect(Date.now() - drainedAt).toBeGreaterThanOrEqual(1800);
    await waitFor('1 pod', () => fx.podsOf('ww').length === 1);
    expect(fx.podsOf('ww')[0]?.metadata?.name).toBe(busyPod);
    expect(api.deletedPods).toHaveLength(3);
    expect(api.deletedPods).not.toContain(busyPod);
    // The deleted pods carried the drain mark before replicas dropped.
    const marks = api.requests.filter((r) => r.method === 'PATCH' && r.path.includes('/pods/'));
    expect(marks.length).toBeGreaterThanOrEqual(3);
    expect(marks.every((r) => r.contentType === 'application/merge-patch+json')).toBe(true);
    const survivor = fx.podsOf('ww')[0]!;
    expect(survivor.metadata?.annotations?.[DRAINING_ANNOTATION]).toBeUndefined();
    expect(survivor.metadata?.annotations?.[DELETION_COST_ANNOTATION]).toBeUndefined();
    // Counted once the reconcile that scaled finishes (just after the replicas changed).
    await waitFor('down event counted', async () =>
      (await (await fetch(`http://127.0.0.1:${op.metricsPort()}/metrics`)).text()).includes(
        'islet_operator_scale_events_total{pool="ww",direction="down"}',
      ),
    );
    release();
    await worker.close();
  });

  it('reports Stalled with the new observedGeneration for an invalid spec, and recovers', async () => {
    api.apply(POOLS, ns, pool('ww', { minReplicas: 9, maxReplicas: 2 }));
    const stalled = await waitFor('Stalled', () => {
      const c = fx.condition('ww', 'Stalled');
      return c?.status === 'True' ? c : undefined;
    });
    expect(stalled.reason).toBe('InvalidSpec');
    expect(stalled.observedGeneration).toBe(2);
    expect((api.get(POOLS, ns, 'ww') as RunnerPool).status?.observedGeneration).toBe(2);
    api.apply(POOLS, ns, pool('ww', { minReplicas: 2 }));
    await waitFor('recovered', () => {
      const c = fx.condition('ww', 'Stalled');
      return c?.status === 'False' && c.observedGeneration === 3;
    });
    await waitFor('min 2 applied', () => fx.replicasOf('ww') === 2);
  });

  it('defaults spec.replicas to 0 on a pool without it (CRD installed before its default), so /scale reads', async () => {
    const bare = pool('bare', { mode: 'read-only' });
    delete (bare.spec as { replicas?: number }).replicas;
    api.apply(POOLS, ns, bare);
    await waitFor(
      'spec.replicas 0',
      () => ((api.get(POOLS, ns, 'bare') as RunnerPool).spec as { replicas?: number }).replicas === 0,
    );
    // One JSON patch, guarded by the resourceVersion it read (a scaler's floor written meanwhile wins).
    const patches = api.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/runnerpools/bare'));
    expect(patches.length).toBe(1);
    await waitFor('bare reconciled', () => fx.condition('bare', 'Ready')?.status === 'True');
    api.remove(POOLS, ns, 'bare');
  });

  it('re-establishes dropped watches and re-lists after 410 Expired', async () => {
    const watchesBefore = api.requests.filter((r) => r.query.watch === 'true').length;
    expect(api.dropWatches()).toBe(2);
    await waitFor('watches back', () => api.openWatches === 2);
    const resumed = api.requests.filter((r) => r.query.watch === 'true').slice(watchesBefore);
    expect(resumed.every((r) => Number(r.query.resourceVersion) > 0)).toBe(true);

    const listsBefore = api.requests.filter(
      (r) => r.method === 'GET' && !r.query.watch && r.path.endsWith('/runnerpools'),
    ).length;
    api.compact();
    api.dropWatches();
    await waitFor('relisted', () => {
      const lists = api.requests.filter(
        (r) => r.method === 'GET' && !r.query.watch && r.path.endsWith('/runnerpools'),
      );
      return lists.length > listsBefore && api.openWatches === 2;
    });
    const text = await (await fetch(`http://127.0.0.1:${op.metricsPort()}/metrics`)).text();
    expect(text).toMatch(/islet_operator_watch_restarts_total\{resource="runnerpools",reason="closed"\} \d/);
    expect(text).toMatch(/islet_operator_watch_restarts_total\{resource="runnerpools",reason="expired"\} \d/);

    // A failing API server: the next three requests for the collection (watch resumptions, then
    // lists) get 500; the watch backs off, retries and recovers.
    const errorsBefore = api.requests.filter(
      (r) => r.method === 'GET' && !r.query.watch && r.path.endsWith('/runnerpools'),
    ).length;
    api.failNext('GET', /\/runnerpools$/, 500, 3); // the collection, not the reconciles' GETs of one pool
    api.compact();
    api.dropWatches();
    await waitFor('recovered after errors', () => api.openWatches === 2);
    const lists = api.requests.filter(
      (r) => r.method === 'GET' && !r.query.watch && r.path.endsWith('/runnerpools'),
    );
    expect(lists.length - errorsBefore).toBeGreaterThanOrEqual(1); // the 410 after the errors re-lists
    const after = await (await fetch(`http://127.0.0.1:${op.metricsPort()}/metrics`)).text();
    expect(after).toMatch(
      /islet_operator_watch_restarts_total\{resource="runnerpools",reason="error"\} [3-9]/,
    );

    // Still reacting to events after the restarts: a new image rolls the Deployment.
    api.apply(POOLS, ns, pool('ww', { minReplicas: 2, image: 'islet/runner:v2' }));
    await waitFor(
      'new image',
      () =>
        (api.get(DEPLOYS, ns, 'ww-runner') as V1Deployment).spec?.template.spec?.containers[0]?.image ===
        'islet/runner:v2',
    );
  });

  it('retries after API errors and counts them', async () => {
    api.failNext('GET', '/deployments/ww-runner', 503, 2);
    api.apply(POOLS, ns, pool('ww', { minReplicas: 3, image: 'islet/runner:v2' }));
    await waitFor('3 replicas', () => fx.replicasOf('ww') === 3);
    const text = await (await fetch(`http://127.0.0.1:${op.metricsPort()}/metrics`)).text();
    expect(text).toMatch(/islet_operator_reconcile_total\{result="error"\} [1-9]/);
  });
});

describe('leader election over a coordination.k8s.io/v1 Lease', () => {
  let api: FakeKubeApi;
  let child: ChildProcess | undefined;
  let standby: Operator | undefined;
  let dir: string;

  const fx = onOperatorFixture(async (f) => {
    api = f.api;
    dir = mkdtempSync(join(tmpdir(), 'islet-op-'));
  });
  // Runs before the fixture's own stop (vitest runs a describe's after-hooks last registered first).
  afterAll(async () => {
    child?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('one operator leads; when it dies without releasing, the other takes over after the Lease expires', async () => {
    // Operator A: the real main.ts as a child process, with a kubeconfig file for the fake.
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, api.kubeConfig().exportConfig());
    child = spawn(process.execPath, ['services/operator/src/main.ts'], {
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        ISLET_NAMESPACE: ns,
        ISLET_REDIS_URL: fx.redisServer.url,
        ISLET_OPERATOR_IDENTITY: 'op-a',
        ISLET_OPERATOR_METRICS_PORT: '0',
        ISLET_OPERATOR_HOST: '127.0.0.1',
        ISLET_OPERATOR_LEASE_DURATION_MS: '1500',
        ISLET_OPERATOR_RETRY_PERIOD_MS: '200',
        ISLET_OPERATOR_RESYNC_INTERVAL_MS: '200',
        ISLET_LOG_LEVEL: 'warn',
      },
      cwd: join(import.meta.dirname, '../../..'),
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const lease = () => api.get('coordination.k8s.io/v1/leases', ns, 'islet-operator') as V1Lease | undefined;
    await waitFor('A leads', () => lease()?.spec?.holderIdentity === 'op-a');
    api.apply(POOLS, ns, pool('ro', { mode: 'read-only', minReplicas: 2 }));
    await waitFor('A reconciles', () => fx.replicasOf('ro') === 2);

    standby = await fx.startOperator(RUNNER_ENV, 'op-b');
    await new Promise((r) => setTimeout(r, 1000));
    expect(standby.elector.isLeader).toBe(false);
    expect(standby.controller()).toBeUndefined();
    expect(lease()?.spec?.holderIdentity).toBe('op-a');

    const killedAt = Date.now();
    child.kill('SIGKILL');
    await waitFor('B leads', () => standby?.elector.isLeader);
    const tookMs = Date.now() - killedAt;
    expect(tookMs).toBeGreaterThanOrEqual(1000); // waited for the Lease to run out
    expect(lease()?.spec?.holderIdentity).toBe('op-b');
    expect(lease()?.spec?.leaseTransitions).toBe(1);

    // B now reconciles.
    api.apply(POOLS, ns, pool('ro', { mode: 'read-only', minReplicas: 3 }));
    await waitFor('B reconciles', () => fx.replicasOf('ro') === 3);

    // A clean stop releases the Lease at once.
    await standby.stop();
    expect(lease()?.spec?.holderIdentity).toBeUndefined();
    standby = undefined;
  });
});
