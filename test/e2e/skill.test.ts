/**
 * The run_code skill end to end: `POST /v1/skills/run_code` → a `skill` job on the mode's BullMQ
 * queue → a runner runs it with `runSkill` under the mode's kernel profile → the gateway answers
 * `{ success, output, error, exitCode, language }`. Real processes, real Redis.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose } from './helpers.ts';

let cluster: Cluster;
let a: Api;
let other: Api;

beforeAll(async () => {
  cluster = await startCluster({ modes: ['read-only', 'workspace-write'] });
  a = api(cluster.url, cluster.devKey);
  expect((await a('POST', '/v1/admin/tenants', { id: 'umbrella', name: 'Umbrella' })).status).toBe(201);
  other = api(
    cluster.url,
    (await a('POST', '/v1/admin/tenants/umbrella/keys', { scopes: ['apps.use'] })).body.key,
  );
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

const metric = (text: string, name: string, labels: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
};
const runnerMetrics = async (mode: string) =>
  (await fetch(`${cluster.runners.find((r) => r.modes?.includes(mode as never))!.url}/metrics`)).text();

describe('POST /v1/skills/run_code', () => {
  it('runs python, javascript and bash, each through the queue, counted in the skill metrics (not the runs)', async () => {
    const before = metric(
      await runnerMetrics('workspace-write'),
      'islet_skill_runs_total',
      'status="Completed",kind="none",mode="workspace-write"',
    );
    const [py, js, sh] = await Promise.all([
      a('POST', '/v1/skills/run_code', {
        language: 'python',
        code: 'import json\nprint(json.dumps({"sum": sum(range(10))}))',
      }),
      a('POST', '/v1/skills/run_code', { language: 'javascript', code: 'console.log(6 * 7)' }),
      a('POST', '/v1/skills/run_code', { language: 'bash', code: 'echo "hi $((2+3))" >&2; exit 3' }),
    ]);
    expect(py.status).toBe(200);
    expect(py.body).toEqual({
      success: true,
      output: '{"sum": 45}\n',
      error: '',
      exitCode: 0,
      language: 'python',
    });
    expect(js.body).toEqual({
      success: true,
      output: '42\n',
      error: '',
      exitCode: 0,
      language: 'javascript',
    });
    expect(sh.body).toMatchObject({
      success: false,
      output: '',
      error: 'hi 5\n',
      exitCode: 3,
      language: 'bash',
    });

    const text = await runnerMetrics('workspace-write');
    // Skills have their own series, so they never move the run_code error and latency SLOs.
    expect(
      metric(text, 'islet_skill_runs_total', 'status="Completed",kind="none",mode="workspace-write"') -
        before,
    ).toBe(2);
    expect(
      metric(text, 'islet_skill_runs_total', 'status="Failed",kind="exception",mode="workspace-write"'),
    ).toBeGreaterThanOrEqual(1);
    expect(text).not.toMatch(/islet_runs_total\{[^}]*mode="workspace-write"[^}]*\} [1-9]/);
    expect(text).toMatch(/islet_queue_wait_seconds_count\{[^}]*mode="workspace-write"[^}]*\} [1-9]/);
  });

  it('kills a program at its timeout', async () => {
    const res = await a('POST', '/v1/skills/run_code', {
      language: 'python',
      code: 'import time\nprint("start", flush=True)\ntime.sleep(30)',
      timeout: 700,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: false, exitCode: 124, output: 'start\n', language: 'python' });
  });

  it('has no network in any mode', async () => {
    const res = await a('POST', '/v1/skills/run_code', {
      language: 'python',
      code: 'import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(("127.0.0.1", 80))',
      sandbox_permissions: 'read-only',
    });
    expect(res.body.success).toBe(false);
    expect(res.body.error).toMatch(/PermissionError|Operation not permitted/);
  });

  it('works in the session workspace: writes in workspace-write, cannot in read-only, never sees another tenant', async () => {
    const wrote = await a('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: 'echo "from the skill" > result.txt && cat result.txt',
      sessionId: 'skill-sess',
    });
    expect(wrote.body, JSON.stringify(wrote.body)).toMatchObject({
      success: true,
      output: 'from the skill\n',
    });
    const got = await fetch(`${cluster.url}/v1/sessions/skill-sess/files/result.txt`, {
      headers: { authorization: `Bearer ${cluster.devKey}` },
    });
    expect(await got.text()).toBe('from the skill\n');

    const readOnly = await a('POST', '/v1/skills/run_code', {
      language: 'python',
      code: 'print(open("result.txt").read(), end="")\nopen("other.txt", "w").write("no")',
      sessionId: 'skill-sess',
      sandbox_permissions: 'read-only',
    });
    expect(readOnly.body.output).toBe('from the skill\n');
    expect(readOnly.body.success).toBe(false);
    expect(readOnly.body.error).toMatch(/PermissionError|Read-only|Permission denied/);

    const foreign = await other('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: 'cat result.txt',
      sessionId: 'skill-sess',
    });
    expect(foreign.body.success).toBe(false);
    expect(foreign.body.error).toContain('No such file');
  });

  it('refuses bad input with problem+json, never running it', async () => {
    const bad = await a('POST', '/v1/skills/run_code', { language: 'ruby', code: 'puts 1' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      type: 'https://islet.dev/problems/validation',
      detail: 'invalid language: expected one of python, javascript, bash',
    });
    const tooLong = await a('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: 'true',
      timeout: 120001,
    });
    expect(tooLong.status).toBe(400);
    const wide = await a('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: 'true',
      sandbox_permissions: 'danger-full-access',
    });
    expect(wide.status).toBe(400);
    expect(wide.body.detail).toContain('danger-full-access needs a justified, approved request');
    const session = await a('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: 'true',
      sessionId: '../x',
    });
    expect(session.status).toBe(400);
    const anon = await fetch(`${cluster.url}/v1/skills/run_code`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"language":"bash","code":"true"}',
    });
    expect(anon.status).toBe(401);
  });

  it('is described in /openapi.json with the workspace file routes', async () => {
    const doc: Loose = await (await fetch(`${cluster.url}/openapi.json`)).json();
    expect(doc.paths['/v1/skills/run_code'].post.requestBody.content['application/json'].schema.$ref).toBe(
      '#/components/schemas/SkillRequest',
    );
    expect(doc.components.schemas.SkillRequest.required).toEqual(['language', 'code']);
    expect(Object.keys(doc.components.schemas.SkillResult.properties)).toEqual([
      'success',
      'output',
      'error',
      'exitCode',
      'language',
    ]);
    expect(Object.keys(doc.paths['/v1/sessions/{id}/files/{path}']).sort()).toEqual(['delete', 'get', 'put']);
    expect(doc.paths['/v1/sessions/{id}/files'].get).toBeDefined();
  });
});
