/**
 * What a deployment configures about the two run contracts, over HTTP against a real local
 * cluster (issue 10): a fresh install with Code Mode off, a program runtime that cannot honour
 * `timeoutMs` / `sandbox_permissions` (the run_code document's "not available for this PTC
 * runtime" refusals), a lowered ceiling, and a requirement of full kernel enforcement that turns a
 * partially enforcing host into `sandbox-unavailable` failures (with a metric).
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, until } from './helpers.ts';

let cluster: Cluster;
let a: Api;
/** The second gateway: its runtime cannot honour sandbox_permissions. */
let b: Api;
const wait = { prefer: 'wait=30' };

beforeAll(async () => {
  cluster = await startCluster({
    codeMode: false, // as a fresh install
    gateways: 2,
    env: { ISLET_RUNTIME_TIMEOUT_MS: 'false', ISLET_RUN_CODE_MAX_TIMEOUT_MS: '5000' },
    gatewayEnv: [{}, { ISLET_RUNTIME_SANDBOX_PERMISSIONS: 'false' }],
    runners: [
      { modes: ['read-only'], concurrency: 2 },
      // A host without the kernel launcher enforces only partly; this one requires full.
      {
        modes: ['workspace-write'],
        concurrency: 1,
        env: { ISLET_SANDBOX_JAIL: 'off', ISLET_SANDBOX_ENFORCEMENT_REQUIRED: 'full' },
      },
    ],
  });
  a = api(cluster.gatewayUrls[0]!, cluster.devKey);
  b = api(cluster.gatewayUrls[1]!, cluster.devKey);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('a fresh install', () => {
  it('has Code Mode off; Code Mode runs are Unavailable, run_code runs are not governed by it', async () => {
    const settings = (await a('GET', '/v1/platform/settings')).body;
    expect(settings.codeMode.enabled).toBe(false);
    const cm = await a(
      'POST',
      '/v1/runs',
      { style: 'code-mode', code: 'return 1', description: 'Return one' },
      wait,
    );
    expect(cm.body).toMatchObject({ status: 'Failed', result: { reason: 'Unavailable' } });
    expect(cm.body.text).toBe(
      'code run failed (sandbox-unavailable): Code Mode is off in the platform settings',
    );
    const rc = await a('POST', '/v1/runs', { code: 'return 1', description: 'Return one' }, wait);
    expect(rc.body).toMatchObject({ status: 'Completed', text: '1', style: 'run_code' });
    // The lowered ceiling applies to the default budget too.
    expect(rc.body.limits.timeoutMs).toBe(5000);
  });
});

describe('readiness', () => {
  it('a runner whose host enforces less than required stays NotReady; the others are ready', async () => {
    const [relaxed, strict] = cluster.runners;
    const ok = await fetch(`${relaxed!.url}/readyz`);
    expect(ok.status).toBe(200);
    const notReady = await fetch(`${strict!.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({
      status: 'not ready',
      reason:
        'sandbox enforcement below the required full (workspace-write: partial); set ISLET_SANDBOX_ENFORCEMENT_REQUIRED=partial to accept it',
    });
  });
});

describe('runtime capabilities', () => {
  it('refuses timeoutMs and sandbox_permissions a runtime cannot honour, with the document texts', async () => {
    const t = await a('POST', '/v1/runs', { code: 'return 1', description: 'Return one', timeoutMs: 1000 });
    expect(t.status).toBe(400);
    expect(t.body).toMatchObject({
      type: 'https://islet.dev/problems/validation',
      detail: 'timeoutMs is not available for this PTC runtime',
    });
    const wide = {
      code: 'return 1',
      description: 'Write into the workspace',
      sandbox_permissions: 'workspace-write',
      justification: 'It writes the report.',
    };
    const s = await b('POST', '/v1/runs', wide);
    expect(s.status).toBe(400);
    expect(s.body.detail).toBe('sandbox_permissions is not available for this PTC runtime');
  });
});

describe('required enforcement', () => {
  it('a partially enforcing host fails runs sandbox-unavailable before they start, and counts them', async () => {
    const submitted = await a('POST', '/v1/runs', {
      code: 'return "must not run"',
      description: 'Write into the workspace',
      sandbox_permissions: 'workspace-write',
      justification: 'It writes the report.',
    });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
    const id = submitted.body.id as string;
    await until(async () => (await a('GET', `/v1/code-runs/${id}`)).body.status === 'Waiting');
    await a('POST', `/v1/code-runs/${id}/decisions`, { index: -1, allow: true });
    const ended = await until(async () => {
      const r = await a('GET', `/v1/code-runs/${id}`);
      return r.body.status === 'Failed' && r.body;
    });
    expect(ended.result).toMatchObject({ reason: 'Unavailable', kind: 'sandbox-unavailable' });
    expect(ended.text).toBe(
      'code run failed (sandbox-unavailable): this deployment requires full file-sandbox enforcement, and this host enforces workspace-write only partially',
    );
    const runner = cluster.runners.find((r) => r.modes?.includes('workspace-write'))!;
    const metrics = await (await fetch(`${runner.url}/metrics`)).text();
    expect(metrics).toMatch(/^islet_sandbox_unavailable_runs_total\{[^}]*mode="workspace-write"[^}]*\} 1$/m);
  });
});
