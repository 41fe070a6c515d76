/**
 * The two run contracts over HTTP against a real local cluster (issue 10): a `run_code` run gets
 * the run_code document's rules (000), a `code-mode` run gets Code Mode's (003). Quotes both
 * documents' field names, refusals, kinds and texts. One cluster for the file.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, httpConnection, type Loose, sleep, startAppServer, until } from './helpers.ts';

let cluster: Cluster;
let a: Api;
let redis: Redis;
let app: Awaited<ReturnType<typeof startAppServer>>;

const wait = { prefer: 'wait=30' };
const final = (id: string, as: Api = a) =>
  until(async () => {
    const r = await as('GET', `/v1/code-runs/${id}`);
    return ['Completed', 'Failed', 'Cancelled'].includes(r.body.status) && r.body;
  }, 40_000);
const status = (id: string, want: string) =>
  until(async () => {
    const r = await a('GET', `/v1/code-runs/${id}`);
    return r.body.status === want && r.body;
  }, 30_000);
const deliveries = (key: string) => app.deliveries.filter((d) => d.idempotencyKey === key);

async function settingsPatch(codeMode: Record<string, unknown>) {
  const current = (await a('GET', '/v1/platform/settings')).body;
  const res = await a('PATCH', '/v1/platform/settings', { expectedVersion: current.version, codeMode });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { version: number; codeMode: Record<string, unknown> };
}

async function keyFor(scopes: string[], principal?: string): Promise<Api> {
  const res = await a('POST', `/v1/admin/tenants/${cluster.tenantId}/keys`, {
    scopes,
    ...(principal ? { principal } : {}),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return api(cluster.url, res.body.key);
}

beforeAll(async () => {
  cluster = await startCluster({
    runners: [
      { modes: ['read-only'], concurrency: 3 },
      { modes: ['workspace-write'], concurrency: 1 },
    ],
  });
  a = api(cluster.url, cluster.devKey);
  redis = new Redis(cluster.redisUrl);
  app = await startAppServer(async (d) => {
    if (d.body.tool === 'slow') await sleep(2500);
    return { status: 200, body: JSON.stringify({ structuredContent: { tool: d.body.tool } }) };
  });
  await httpConnection(a, 'Mail', app.url, { read_note: 'allow', send_email: 'ask', slow: 'allow' });
}, 90_000);

afterAll(async () => {
  redis?.disconnect();
  await app?.close();
  await cluster?.stop();
});

describe('run_code (document 000)', () => {
  it('needs only code and description; session, turn and call are generated; the defaults are 000s', async () => {
    const res = await a(
      'POST',
      '/v1/runs',
      { code: 'return 1', description: 'Return the number one now' },
      wait,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ status: 'Completed', text: '1', style: 'run_code' });
    for (const field of ['session', 'turn', 'callId'])
      expect(res.body[field]).toMatch(/^[a-z]+-[0-9a-f-]{36}$/);
    expect(res.body.limits).toEqual({
      timeoutMs: 120_000,
      memoryMb: 512,
      outputBytes: 67_108_864,
      outputCap: 'shared',
    });
    // The ceiling caps a longer request; zero is refused with the document's text.
    const long = await a(
      'POST',
      '/v1/runs',
      { code: 'return 2', description: 'Return two', timeoutMs: 9e9 },
      wait,
    );
    expect(long.body.limits.timeoutMs).toBe(600_000);
    const zero = await a('POST', '/v1/runs', { code: 'return 2', description: 'Return two', timeoutMs: 0 });
    expect(zero.status).toBe(400);
    expect(zero.body.detail).toBe('invalid timeoutMs: expected a positive finite number');
  });

  it('has a 512 MiB heap and a 64 MiB output cap shared by lines and value', async () => {
    // 160 MB of doubles: past the old 128 MiB default, inside run_code's 512 MiB.
    const heap = await a(
      'POST',
      '/v1/runs',
      { code: 'const a = new Array(2e7).fill(1.5); return a.length', description: 'Fill a large array' },
      wait,
    );
    expect(heap.body).toMatchObject({ status: 'Completed', result: { value: 2e7 } });
    // 2 MiB printed: past the old 1 MiB cap, well inside 64 MiB.
    const big = await a(
      'POST',
      '/v1/runs',
      { code: 'console.log("y".repeat(2 * 1048576)); return "ok"', description: 'Print two mebibytes' },
      wait,
    );
    expect(big.body.status).toBe('Completed');
    expect(big.body.result.logs[0].text).toHaveLength(2 * 1048576);
    // Lines and value share the cap: a value that alone would fit (67,108,862 bytes of JSON)
    // does not fit after a printed line; the fitting part (the line) is kept.
    const over = await a(
      'POST',
      '/v1/runs',
      { code: 'console.log("head"); return "b".repeat(67108860)', description: 'Print and return too much' },
      wait,
    );
    const ended = over.body.result ? over.body : await final(over.body.id);
    expect(ended.status).toBe('Failed');
    expect(ended.result).toMatchObject({ reason: 'OutputTooLarge', kind: 'output-limit' });
    expect(ended.text).toBe(
      'code run failed (output-limit): output exceeded the cap of 67108864 bytes\n\nCaptured output:\nhead',
    );
    const alone = await a(
      'POST',
      '/v1/runs',
      { code: 'return "b".repeat(67108860).length', description: 'Build a large value in memory' },
      wait,
    );
    expect(alone.body.status).toBe('Completed');
  }, 120_000);

  it('counts elapsed time, App waits included, and holds approvals in place', async () => {
    const slow = await a(
      'POST',
      '/v1/runs',
      {
        code: 'await apps.mail.slow({}); return "late"',
        description: 'Wait for a slow App',
        timeoutMs: 1500,
      },
      wait,
    );
    const ended = slow.body.result ? slow.body : await final(slow.body.id);
    expect(ended).toMatchObject({ status: 'Failed', result: { reason: 'Timeout', kind: 'timeout' } });
    expect(ended.text).toBe('code run failed (timeout): execution deadline reached (1500ms)');

    const held = await a('POST', '/v1/runs', {
      code: 'await apps.mail.send_email({ to: "x" }); return "sent"',
      description: 'Send one mail after approval',
    });
    const id = held.body.id as string;
    await status(id, 'Waiting');
    const [pending] = (await a('GET', '/v1/decisions')).body.items.filter((d: Loose) => d.code.run === id);
    expect(pending).toMatchObject({ approval: 'hold' });
    await a('POST', `/v1/code-runs/${id}/decisions`, { index: 0, allow: true });
    expect((await final(id)).result.value).toBe('sent');
    expect(await redis.hget(`islet:run:{${id}}`, 'attempts')).toBe('1'); // held, never replayed
  });

  it('a workflow principal may ask for no deadline; a chat key may not', async () => {
    const workflow = await keyFor(['apps.use', 'workflows'], 'nightly-workflow');
    const none = await workflow(
      'POST',
      '/v1/runs',
      { code: 'return "no deadline"', description: 'Run without a deadline', timeoutMs: null },
      wait,
    );
    expect(none.body).toMatchObject({ status: 'Completed', limits: { timeoutMs: null } });
    const chat = await keyFor(['apps.use']);
    const refused = await chat('POST', '/v1/runs', {
      code: 'return 1',
      description: 'Run without a deadline',
      timeoutMs: null,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toBe('invalid timeoutMs: expected a positive finite number');
  });

  it('refuses sandbox_permissions that is not wider than the run mode, before anything runs', async () => {
    const res = await a('POST', '/v1/runs', {
      code: 'return 1',
      description: 'Ask for the mode it already has',
      sandbox_permissions: 'read-only',
      justification: 'It only reads.',
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      type: 'https://islet.dev/problems/validation',
      detail:
        "invalid escalation: sandbox_permissions read-only is not wider than the run's mode (read-only)",
    });
    expect(
      (await a('GET', '/v1/decisions')).body.items.filter((d: Loose) => d.justification === 'It only reads.'),
    ).toEqual([]);
  });

  it('prints the file-denial line once per failure', async () => {
    const res = await a(
      'POST',
      '/v1/runs',
      {
        code: 'await apps.files.write({ path: "x.txt", content: "x" })',
        description: 'Write a file read-only',
      },
      wait,
    );
    expect(res.body.status).toBe('Failed');
    const line = /File sandbox: read-only; enforcement: \w+; operation denied/g;
    expect(res.body.text.match(line)).toHaveLength(1);
  });
});

describe('Code Mode (document 003)', () => {
  it('has no files and no sandbox modes; its budget excludes App waits', async () => {
    const noFiles = await a(
      'POST',
      '/v1/runs',
      {
        style: 'code-mode',
        code: "return 'files' in apps ? 'present' : 'absent'",
        description: 'Look for the files binding',
      },
      wait,
    );
    expect(noFiles.body).toMatchObject({
      status: 'Completed',
      result: { value: 'absent' },
      style: 'code-mode',
    });
    const wide = await a('POST', '/v1/runs', {
      style: 'code-mode',
      code: 'return 1',
      description: 'Ask for wider access',
      sandbox_permissions: 'workspace-write',
      justification: 'It writes.',
    });
    expect(wide.status).toBe(400);
    expect(wide.body.detail).toBe(
      'sandbox_permissions belongs to run_code runs: Code Mode programs have no files',
    );

    const s = await settingsPatch({ timeoutMs: 1000 });
    try {
      const slow = await a(
        'POST',
        '/v1/runs',
        {
          style: 'code-mode',
          code: 'await apps.mail.slow({}); return "waited"',
          description: 'Wait for a slow App',
        },
        wait,
      );
      expect(slow.body).toMatchObject({ status: 'Completed', result: { value: 'waited' } });
      expect(slow.body.limits).toMatchObject({
        timeoutMs: 1000,
        outputCap: 'separate',
        settingsVersion: s.version,
      });
    } finally {
      await settingsPatch({ timeoutMs: 120_000 });
    }
  });

  it('outputBytes cuts logs and completes; only a larger return value fails OutputTooLarge', async () => {
    await settingsPatch({ outputBytes: 1024 });
    try {
      const logs = await a(
        'POST',
        '/v1/runs',
        {
          style: 'code-mode',
          code: 'console.log("z".repeat(5000)); return "done"',
          description: 'Print a lot',
        },
        wait,
      );
      expect(logs.body.status).toBe('Completed');
      expect(logs.body.result.value).toBe('done');
      expect(logs.body.result.logs.map((l: Loose) => l.text).join('').length).toBeLessThanOrEqual(1024);
      const value = await a(
        'POST',
        '/v1/runs',
        { style: 'code-mode', code: 'return "v".repeat(2000)', description: 'Return a large value' },
        wait,
      );
      expect(value.body).toMatchObject({ status: 'Failed', result: { reason: 'OutputTooLarge' } });
    } finally {
      await settingsPatch({ outputBytes: 1_048_576 });
    }
  });

  it('a run keeps the settings it was created with, through a decision and its replay', async () => {
    const code = 'console.log("q".repeat(3000)); await apps.mail.send_email({ to: "team" }); return "sent"';
    const submitted = await a('POST', '/v1/runs', {
      style: 'code-mode',
      code,
      description: 'Print then send',
    });
    const id = submitted.body.id as string;
    const created = await status(id, 'Waiting');
    const version = created.limits.settingsVersion as number;
    expect(created.limits).toMatchObject({ outputBytes: 1_048_576, outputCap: 'separate' });
    // While it waits: a smaller output cap and Code Mode turned off.
    await settingsPatch({ outputBytes: 1024, enabled: false });
    try {
      await a('POST', `/v1/code-runs/${id}/decisions`, { index: 0, allow: true });
      const done = await final(id);
      expect(done.status, done.text).toBe('Completed');
      expect(done.result.value).toBe('sent');
      expect(done.result.logs[0].text).toHaveLength(3000); // not cut at the new 1024
      expect(done.limits.settingsVersion).toBe(version);
      expect(Number(await redis.hget(`islet:journal:{${id}}`, '#attempt'))).toBeGreaterThanOrEqual(2); // replayed
      expect(deliveries(`${id}:0`)).toHaveLength(1);
    } finally {
      await settingsPatch({ outputBytes: 1_048_576, enabled: true });
    }
  });

  it('a ReplayMismatch reads as itself, not as an abort', async () => {
    const code = 'await apps.mail.read_note({}); await apps.mail.send_email({}); return 1';
    const id = (await a('POST', '/v1/runs', { style: 'code-mode', code, description: 'Read then send' })).body
      .id as string;
    await status(id, 'Waiting');
    const key = `islet:journal:{${id}}`;
    const entry = JSON.parse((await redis.hget(key, '0')) ?? '{}');
    await redis.hset(key, '0', JSON.stringify({ ...entry, b: 'mail.other' }));
    await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true });
    const ended = await final(id);
    expect(ended.result.reason).toBe('ReplayMismatch');
    expect(ended.text).toBe(`code run failed (ReplayMismatch): ${ended.result.message}`);
  });
});

describe('bindings', () => {
  it('a run without connections sees the Apps /v1/code-api declares, in both styles', async () => {
    const declared = (await a('GET', '/v1/code-api')).body.bindings.map((b: Loose) => b.binding);
    expect(declared).toEqual(expect.arrayContaining(['mail.read_note', 'files.read']));
    const cm = (await a('GET', '/v1/code-api?style=code-mode')).body.bindings.map((b: Loose) => b.binding);
    expect(cm).toContain('mail.read_note');
    expect(cm.filter((b: string) => b.startsWith('files.'))).toEqual([]);
    for (const style of ['run_code', 'code-mode']) {
      const res = await a(
        'POST',
        '/v1/runs',
        {
          style,
          code: 'return (await apps.mail.read_note({})).structuredContent.tool',
          description: 'Read a note',
        },
        wait,
      );
      expect(res.body, style).toMatchObject({ status: 'Completed', result: { value: 'read_note' } });
    }
  });

  it('refuses names the engine refuses, with its texts, at registration', async () => {
    const refused = async (body: Record<string, unknown>, detail: string) => {
      const res = await a('POST', '/v1/connections', { kind: 'client', ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body).toMatchObject({ type: 'https://islet.dev/problems/invalid-binding-name', detail });
    };
    await refused(
      { name: 'Tools', tools: [{ name: '$tools' }] },
      'invalid binding name: $tools (not a plain identifier)',
    );
    await refused(
      { name: 'Tools', tools: [{ name: 'lambda' }] },
      'invalid binding name: lambda (reserved by Python)',
    );
    await refused(
      { name: 'Tools', tools: [{ name: 'console' }] },
      'invalid binding name: console (kept by the run environment)',
    );
    await refused({ name: 'console' }, 'invalid binding name: console (kept by the run environment)');
    await refused({ name: '$tools' }, 'invalid binding name: $tools (not a plain identifier)');
    await refused({ name: 'lambda' }, 'invalid binding name: lambda (reserved by Python)');
    const names = (await a('GET', '/v1/connections')).body.items.map((c: Loose) => c.name);
    expect(names).toEqual(['Mail']);
  });
});

describe('principals', () => {
  it('sessions belong to the principal that opened them; sessions.admin sees the tenant', async () => {
    const alice = await keyFor(['apps.use', 'sessions.read'], 'alice');
    const alice2 = await keyFor(['apps.use', 'sessions.read'], 'alice');
    const bob = await keyFor(['apps.use', 'sessions.read'], 'bob');
    const admin = await keyFor(['apps.use', 'sessions.read', 'sessions.admin'], 'auditor');
    const mine = await alice(
      'POST',
      '/v1/runs',
      { code: 'return "alice"', description: 'Return a name', sessionId: 'sess-alice' },
      wait,
    );
    expect(mine.body.status).toBe('Completed');
    const list = async (as: Api) =>
      (await as('GET', '/v1/sessions/sess-alice/code-runs')).body.items.map((r: Loose) => r.id);
    expect(await list(alice)).toEqual([mine.body.id]);
    expect(await list(alice2)).toEqual([mine.body.id]); // another key of the same principal
    expect(await list(bob)).toEqual([]);
    expect((await bob('GET', `/v1/code-runs/${mine.body.id}`)).status).toBe(404);
    const intrude = await bob('POST', '/v1/runs', {
      code: 'return 1',
      description: 'Join a session',
      sessionId: 'sess-alice',
    });
    expect(intrude.status).toBe(404);
    expect(await list(admin)).toEqual([mine.body.id]);
    expect((await admin('GET', `/v1/code-runs/${mine.body.id}`)).status).toBe(200);
  });
});

describe('the run_code skill (document 002)', () => {
  it('keeps the first 1 MB of output and lets the program finish', async () => {
    const res = await a('POST', '/v1/skills/run_code', {
      language: 'python',
      code: "import sys\nfor i in range(300):\n    print('s' * 4095)\nsys.stderr.write('finished')",
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    expect(res.body).toMatchObject({ success: true, exitCode: 0, language: 'python' });
    expect(res.body.output).toHaveLength(1_048_576);
    expect(res.body.error).toContain('finished');
    expect(res.body.error).toContain('stdout was truncated: captured the first 1048576 bytes');
  });
});

describe('documented', () => {
  it('OpenAPI shows only code and description as required, the style, and the style table', async () => {
    const doc = (await a('GET', '/openapi.json')).body;
    const req = doc.components.schemas.RunRequest;
    expect(req.required).toEqual(['code', 'description']);
    expect(req.properties.style.enum).toEqual(['code-mode', 'run_code']);
    for (const f of ['sessionId', 'turnId', 'callId', 'connections', 'timeoutMs'])
      expect(req.properties[f], f).toBeDefined();
    expect(req.description).toContain('| | run_code (000) | code-mode (003) |');
    expect(doc.info.description).toContain('## run_code vs Code Mode');
    expect(doc['x-run-styles'].map((r: Loose) => r.rule)).toEqual(
      expect.arrayContaining([
        'time counted',
        'a call needing a decision',
        'files and sandbox modes',
        'output',
      ]),
    );
  });
});
