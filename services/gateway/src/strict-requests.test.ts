/**
 * Unknown request fields are refused with a 400 naming them (and the field probably meant), on
 * every public request schema; the run_code contract's own refusals still come first, word for word.
 */
import { RUN_CODE_REFUSALS, RunCodeRequestSchema } from '@islet/protocol';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';
import { runPlacementSchema } from './run-request.ts';

let user: Record<string, string>;
let admin: Record<string, string>;

const { app, deps } = await onGatewayApp({ env: { ISLET_INTERNAL_TOKEN: 'internal-token-strict-requests' } });

beforeAll(async () => {
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  user = { authorization: `Bearer ${(await deps.tenants.createKey('acme', ['apps.use'])).key}` };
  admin = { authorization: `Bearer ${(await deps.tenants.createKey('acme', ['platform.admin'])).key}` };
});

async function send(method: 'POST' | 'PUT' | 'PATCH', url: string, payload: unknown, headers = user) {
  const res = await app.inject({ method, url, headers, payload: payload as object });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

const run = { code: 'return 1', description: 'Return one for the test' };

describe('POST /v1/runs', () => {
  it('refuses timeout, naming timeoutMs', async () => {
    const res = await send('POST', '/v1/runs', { ...run, timeout: 5000 });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('https://islet.dev/problems/validation');
    expect(res.body.detail).toBe('unknown field "timeout" (did you mean "timeoutMs"?)');
    expect(res.body.unknownFields).toEqual([{ path: 'timeout', suggestion: 'timeoutMs' }]);
  });

  it("refuses language, saying it is the skill's field", async () => {
    const res = await send('POST', '/v1/runs', { ...run, language: 'python' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(
      'unknown field "language": language is a field of the run_code skill (POST /v1/skills/run_code: python, javascript, bash); /v1/runs runs JavaScript and takes no language',
    );
  });

  it('names every unknown field, with a suggestion where one is close', async () => {
    const res = await send('POST', '/v1/runs', {
      ...run,
      sandboxPermissions: 'read-only',
      session_id: 's',
      zz: 1,
    });
    expect(res.body.unknownFields).toEqual([
      { path: 'sandboxPermissions', suggestion: 'sandbox_permissions' },
      { path: 'session_id', suggestion: 'sessionId' },
      { path: 'zz' },
    ]);
  });

  it("keeps the contract's refusals first and exact; its fields all pass", async () => {
    const empty = await send('POST', '/v1/runs', { code: 'return 1', description: '', timeout: 5 });
    expect(empty.body.detail).toBe(RUN_CODE_REFUSALS.description);
    const zero = await send('POST', '/v1/runs', { ...run, timeoutMs: 0, timeout: 5 });
    expect(zero.body.detail).toBe(RUN_CODE_REFUSALS.timeoutMs);
    const ok = await send('POST', '/v1/runs', {
      ...run,
      timeoutMs: 1000,
      style: 'run_code',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [],
      approval: 'hold',
    });
    expect(ok.status).toBe(202);
  });
});

describe('POST /v1/runs without zod for a plainly valid body', () => {
  it('accepts it without either parse; a body with a problem gets the parses and their exact refusals', async () => {
    // zod's two parses of every submit were ~20–50 µs of a loaded gateway's CPU (round 29 gw-cpu).
    const contract = vi.spyOn(RunCodeRequestSchema, 'safeParse');
    const placement = vi.spyOn(runPlacementSchema, 'safeParse');
    try {
      const plain = { ...run, timeoutMs: 1000, sessionId: 's2', turnId: 't', callId: 'c', connections: [] };
      const ok = await send('POST', '/v1/runs', plain);
      expect(ok.status).toBe(202);
      expect(ok.body.status).toBe('Running');
      expect(contract).not.toHaveBeenCalled();
      expect(placement).not.toHaveBeenCalled();
      const badSession = await send('POST', '/v1/runs', { ...plain, sessionId: 'a..b' });
      expect(badSession.status).toBe(400);
      expect(badSession.body.errors).toEqual([
        {
          path: 'sessionId',
          message:
            "expected 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit (no '..')",
        },
      ]);
      const blank = await send('POST', '/v1/runs', { ...plain, code: '  ' });
      expect(blank.body.detail).toBe(RUN_CODE_REFUSALS.code);
      const escalation = await send('POST', '/v1/runs', { ...plain, justification: 'why' });
      expect(escalation.body.detail).toBe(RUN_CODE_REFUSALS.justificationWithoutEscalation);
      expect(contract).toHaveBeenCalledTimes(3);
      expect(placement).toHaveBeenCalledTimes(1);
    } finally {
      contract.mockRestore();
      placement.mockRestore();
    }
  });
});

describe('other request bodies', () => {
  it('connections: top-level and nested unknown fields, with suggestions', async () => {
    const res = await send('POST', '/v1/connections', {
      name: 'Cal',
      kind: 'http',
      urls: 'https://x.example.com',
      tools: [{ name: 'a', polcy: 'ask' }],
    });
    expect(res.status).toBe(400);
    expect(res.body.unknownFields).toEqual(
      expect.arrayContaining([
        { path: 'urls', suggestion: 'url' },
        { path: 'tools.0.polcy', suggestion: 'policy' },
      ]),
    );
    expect(res.body.detail).toContain('unknown field "tools.0.polcy" (did you mean "policy"?)');
  });

  it('skills: timeoutMs → timeout, description belongs to code runs; the gateway fields pass', async () => {
    const timeoutMs = await send('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: 'true',
      timeoutMs: 5,
    });
    expect(timeoutMs.status).toBe(400);
    expect(timeoutMs.body.detail).toBe('unknown field "timeoutMs" (did you mean "timeout"?)');
    const description = await send('POST', '/v1/skills/run_code', {
      language: 'bash',
      code: 'x',
      description: 'd',
    });
    expect(description.body.detail).toContain(
      'unknown field "description": description belongs to code runs',
    );
  });

  it('platform settings, run policy and keys refuse unknown fields with a suggestion', async () => {
    const settings = await send(
      'PATCH',
      '/v1/platform/settings',
      { expectedVersion: 0, codeMode: { enable: true } },
      admin,
    );
    expect(settings.status).toBe(400);
    expect(settings.body.unknownFields).toEqual([{ path: 'codeMode.enable', suggestion: 'enabled' }]);
    const policy = await send('PUT', '/v1/admin/tenants/acme/run-policy', { styles: 'run_code' }, admin);
    expect(policy.body.unknownFields).toEqual([{ path: 'styles', suggestion: 'style' }]);
    const key = await send('POST', '/v1/admin/tenants/acme/keys', { scope: ['apps.use'] }, admin);
    expect(key.body.unknownFields).toEqual([{ path: 'scope', suggestion: 'scopes' }]);
  });
});
