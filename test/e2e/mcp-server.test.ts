/**
 * Islet as an MCP server, end to end: the SDK's real `Client` over Streamable HTTP against `/mcp`
 * on a real local cluster (gateway, runners, Redis, a local http App). Lists tools, runs programs
 * with all four surfaces, the contract's refusals, the code-call-mode refusal, a decision,
 * progress, cancellation, sessions, and two tenants walled from each other.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { jsonSchemaOf, SURFACE_DEFINITIONS } from '@islet/mcp';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, startAppServer, until } from './helpers.ts';

let cluster: Cluster;
let a: Api;
let admin: Api;
let otherKey: string;
let app: Awaited<ReturnType<typeof startAppServer>>;
const clients: Client[] = [];

async function connect(
  key: string,
  elicit?: (message: string) => { action: 'accept' | 'decline' | 'cancel'; content?: { allow: boolean } },
  fetchImpl?: typeof fetch,
): Promise<{ client: Client; sessionId: string }> {
  const client = new Client(
    { name: 'islet-e2e-agent', version: '1.0.0' },
    elicit ? { capabilities: { elicitation: {} } } : {},
  );
  if (elicit)
    client.setRequestHandler(ElicitRequestSchema, async (req) => elicit(String(req.params.message)));
  const transport = new StreamableHTTPClientTransport(new URL(`${cluster.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
  await client.connect(transport);
  clients.push(client);
  return { client, sessionId: transport.sessionId! };
}

const textOf = (r: Loose) =>
  (r as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('');

beforeAll(async () => {
  cluster = await startCluster({ gateways: 2, modes: ['read-only', 'workspace-write'] });
  admin = api(cluster.url, cluster.devKey);
  a = admin;
  app = await startAppServer((d) => {
    if (d.body.tool === 'list-events')
      return {
        status: 200,
        body: JSON.stringify({ structuredContent: { events: [{ title: `day ${d.body.arguments.day}` }] } }),
      };
    return { status: 200, body: JSON.stringify({ sent: d.body.arguments.to }) };
  });
  expect(
    (
      await a('POST', '/v1/connections', {
        name: 'Work calendar',
        kind: 'http',
        url: app.url,
        tools: [
          {
            name: 'list-events',
            description: 'Events of one day',
            inputSchema: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] },
          },
          { name: 'send_email', policy: 'ask' },
        ],
      })
    ).status,
  ).toBe(201);
  expect((await a('POST', '/v1/admin/tenants', { id: 'umbrella', name: 'Umbrella' })).status).toBe(201);
  otherKey = (await a('POST', '/v1/admin/tenants/umbrella/keys', { scopes: ['apps.use', 'sessions.read'] }))
    .body.key;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await app?.close();
  await cluster?.stop();
});

describe('tools/list', () => {
  it("offers the four surfaces with the documents' names and schemas generated from the zod schemas", async () => {
    const { client } = await connect(cluster.devKey);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'run_code',
      'openbot_code_api',
      'openbot_run_code',
      'run_code_skill',
      'get_run',
    ]);
    const runCode = tools[0]!;
    expect(runCode.inputSchema).toEqual(jsonSchemaOf(SURFACE_DEFINITIONS.run_code.input, 'input'));
    expect(runCode.inputSchema.required).toEqual(['code', 'description']);
    expect((runCode.inputSchema.properties as Loose).description.description).toBe(
      'Five to ten words in active voice, saying what the program does; it appears as the title of the run in the chat.',
    );
    expect((runCode.inputSchema.properties as Loose).sandbox_permissions.enum).toEqual([
      'read-only',
      'workspace-write',
      'danger-full-access',
    ]);
    const skill = tools[3]!;
    expect(skill.inputSchema.required).toEqual(['language', 'code']);
    expect((skill.inputSchema.properties as Loose).language.enum).toEqual(['python', 'javascript', 'bash']);
    expect(skill.outputSchema?.required).toEqual(['success', 'output', 'error', 'exitCode', 'language']);
  });
});

describe('run_code', () => {
  it('runs a program; the result text is the tool result; progress arrives; the run joins the MCP session', async () => {
    const { client, sessionId } = await connect(cluster.devKey);
    const progress: string[] = [];
    const res = await client.callTool(
      {
        name: 'run_code',
        arguments: {
          code: 'console.log("hello"); return 6 * 7',
          description: 'Print a greeting and multiply',
        },
      },
      undefined,
      { onprogress: (p) => progress.push(p.message ?? '') },
    );
    expect(res.isError).toBeFalsy();
    expect(textOf(res)).toBe('hello\n42');
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress.at(-1)).toMatch(/^run [\w-]+ ended: Completed$/);

    const empty = await client.callTool({
      name: 'run_code',
      arguments: { code: 'let x = 1', description: 'Do nothing visible at all' },
    });
    expect(textOf(empty)).toBe('(run_code completed with no output)');
    const failed = await client.callTool({
      name: 'run_code',
      arguments: {
        code: 'console.log("before"); throw new Error("boom")',
        description: 'Fail on purpose after printing',
      },
    });
    expect(failed.isError).toBe(true);
    expect(textOf(failed)).toMatch(
      /^code run failed \(exception\): .*boom[\s\S]*\nCaptured output:\nbefore$/,
    );

    const listed = await a('GET', `/v1/sessions/${sessionId}/code-runs`);
    expect(listed.status).toBe(200);
    expect(listed.body.items).toHaveLength(3);
    expect(listed.body.items.map((r: Loose) => r.session)).toEqual([sessionId, sessionId, sessionId]);
    expect(listed.body.items.every((r: Loose) => /^mcp-\d+$/.test(r.callId))).toBe(true);
  });

  it("refuses a call that does not fit with the document's exact refusals, before anything runs", async () => {
    const { client, sessionId } = await connect(cluster.devKey);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ code: 'return 1' }, 'invalid description: expected a non-empty string'],
      [{ code: 'return 1', description: '  ' }, 'invalid description: expected a non-empty string'],
      [
        { code: 'return 1', description: 'Return one', timeoutMs: 0 },
        'invalid timeoutMs: expected a positive finite number',
      ],
      [
        { code: 'return 1', description: 'Return one', timeoutMs: 'soon' },
        'invalid timeoutMs: expected a positive finite number',
      ],
      [
        { code: 'return 1', description: 'Return one', sandbox_permissions: 'workspace-write' },
        'invalid escalation: sandbox_permissions requires a justification',
      ],
      [
        { code: 'return 1', description: 'Return one', justification: 'Because.' },
        'invalid escalation: justification is only valid together with sandbox_permissions',
      ],
      [
        {
          code: 'return 1',
          description: 'Return one',
          sandbox_permissions: 'workspace-write',
          justification: ' ',
        },
        'invalid justification: expected a non-empty sentence',
      ],
    ];
    for (const [args, refusal] of cases) {
      const res = await client.callTool({ name: 'run_code', arguments: args });
      expect(res.isError).toBe(true);
      expect(textOf(res)).toBe(refusal);
    }
    expect((await a('GET', `/v1/sessions/${sessionId}/code-runs`)).body.items).toEqual([]);
  });

  it('code-call mode: a direct call of any other tool fails and says to call it from inside a program', async () => {
    const { client } = await connect(cluster.devKey);
    const res = await client.callTool({
      name: 'work_calendar__list_events',
      arguments: { day: '2026-10-23' },
    });
    expect(res.isError).toBe(true);
    expect(textOf(res)).toBe(
      'tool "work_calendar__list_events" cannot be called directly: in code-call mode only run_code is called directly. ' +
        'Reach that tool from inside a program instead: call run_code with code that calls it, as in `await apps.work_calendar.list_events(args)`; openbot_code_api shows the bindings and their arguments.',
    );
    const other = await client.callTool({ name: 'bash', arguments: { command: 'ls' } });
    expect(other.isError).toBe(true);
    expect(textOf(other)).toContain('tool "bash" cannot be called directly');
    expect(textOf(other)).toContain('from inside a program');
    expect(app.deliveries.filter((d) => d.body.arguments?.day === '2026-10-23')).toEqual([]);
  });

  it('cancelling the MCP request cancels the run', async () => {
    const { client } = await connect(cluster.devKey);
    const ac = new AbortController();
    let runId = '';
    const call = client.callTool(
      {
        name: 'run_code',
        arguments: {
          code: 'while (true) {}',
          description: 'Spin until stopped by the caller',
          timeoutMs: 120_000,
        },
      },
      undefined,
      {
        signal: ac.signal,
        onprogress: (p) => {
          const m = /^run ([\w-]+) running$/.exec(p.message ?? '');
          if (m) {
            runId = m[1]!;
            ac.abort('the agent changed its mind');
          }
        },
      },
    );
    await expect(call).rejects.toThrow();
    expect(runId).not.toBe('');
    const rec = await until(async () => {
      const r = await a('GET', `/v1/code-runs/${runId}`);
      return r.body.status === 'Cancelled' && r.body;
    }, 30_000);
    expect(rec.result).toMatchObject({ _tag: 'Failed', reason: 'Cancelled', kind: 'abort' });
  }, 60_000);
});

describe('Code Mode tools', () => {
  it("openbot_code_api shows and searches the declarations of the caller's bindings", async () => {
    const { client } = await connect(cluster.devKey);
    const all = textOf(await client.callTool({ name: 'openbot_code_api', arguments: {} }));
    expect(all).toContain('namespace work_calendar {');
    expect(all).toContain('function list_events(args: {');
    expect(all).toContain('function call(name: string, args?: unknown): Promise<unknown>;');
    const searched = textOf(
      await client.callTool({ name: 'openbot_code_api', arguments: { q: 'events day' } }),
    );
    expect(searched).toContain('list_events');
    expect(searched).not.toContain('send_email');
  });

  it('openbot_run_code returns result, log lines and App calls as structuredContent', async () => {
    const { client } = await connect(cluster.devKey);
    const res = await client.callTool({
      name: 'openbot_run_code',
      arguments: {
        reason: 'Count the events of two days.',
        code: `const [a, b] = await Promise.all([
          apps.work_calendar.list_events({ day: "2026-10-23" }),
          apps.work_calendar.list_events({ day: "2026-10-24" }),
        ]);
        console.log("events", 2);
        return [a, b].flatMap((r) => r.structuredContent.events).map((e) => e.title)`,
      },
    });
    expect(res.isError, textOf(res)).toBeFalsy();
    const s = res.structuredContent as Loose;
    expect(s.status).toBe('Completed');
    expect(s.value).toEqual(['day 2026-10-23', 'day 2026-10-24']);
    expect(s.logs).toEqual([expect.objectContaining({ level: 'log', text: 'events 2' })]);
    expect(s.calls.map((c: Loose) => c.binding)).toEqual([
      'work_calendar.list_events',
      'work_calendar.list_events',
    ]);
    expect(s.calls.every((c: Loose) => c.outcome._tag === 'Done')).toBe(true);
    expect(JSON.parse(textOf(res))).toEqual(s);
  });

  it('a call that needs a decision answers with the decision id and how to answer; the App is called once', async () => {
    const { client } = await connect(cluster.devKey);
    const before = app.deliveries.filter((d) => d.body.tool === 'send_email').length;
    const res = await client.callTool({
      name: 'openbot_run_code',
      arguments: { code: 'await apps.work_calendar.send_email({ to: "team@example.com" }); return "sent"' },
    });
    const s = res.structuredContent as Loose;
    expect(s.status).toBe('Waiting');
    expect(s.decision).toMatchObject({ id: `${s.runId}:0`, index: 0 });
    expect(s.decision.answer).toContain(
      `POST /v1/code-runs/${s.runId}/decisions {"index": 0, "allow": true}`,
    );
    expect(app.deliveries.filter((d) => d.body.tool === 'send_email').length).toBe(before);
    expect((await a('POST', `/v1/code-runs/${s.runId}/decisions`, { index: 0, allow: true })).status).toBe(
      200,
    );
    const rec = await until(async () => {
      const r = await a('GET', `/v1/code-runs/${s.runId}`);
      return r.body.status === 'Completed' && r.body;
    }, 30_000);
    expect(rec.result.value).toBe('sent');
    expect(app.deliveries.filter((d) => d.body.tool === 'send_email').length).toBe(before + 1);
  }, 60_000);
});

describe('wider access', () => {
  it('run_code with sandbox_permissions answers with the escalation decision (index -1); allowed, the run goes on', async () => {
    const { client } = await connect(cluster.devKey);
    const res = await client.callTool({
      name: 'run_code',
      arguments: {
        code: 'return "wide"',
        description: 'Return a word with wider access',
        sandbox_permissions: 'workspace-write',
        justification: 'It writes the report into the workspace.',
      },
    });
    expect(res.isError).toBeFalsy();
    const text = textOf(res);
    const runId = (res._meta as Loose)['dev.islet/run'].id;
    expect(text).toBe(
      `The run ${runId} is waiting for a decision on its wider file access (decision ${runId}:-1); nothing more runs until it is answered. ` +
        `Answer it with POST /v1/code-runs/${runId}/decisions {"index": -1, "allow": true} (or "allow": false) using an API key with the "decisions" scope. ` +
        `The run then continues (calls that already ran are replayed, never sent twice); read its result with the get_run tool or GET /v1/code-runs/${runId}. ` +
        `A person can answer it on the run's console page: ${cluster.url}/console/#/runs/${runId}`,
    );
    expect((await a('POST', `/v1/code-runs/${runId}/decisions`, { index: -1, allow: true })).status).toBe(
      200,
    );
    const rec = await until(async () => {
      const r = await a('GET', `/v1/code-runs/${runId}`);
      return r.body.status === 'Completed' && r.body;
    }, 30_000);
    expect(rec.text).toBe('wide');
  }, 60_000);
});

describe('decisions through MCP elicitation', () => {
  it('a client that can elicit is asked; accept lets the run finish in the same call, decline denies the call', async () => {
    const asked: string[] = [];
    const accepting = await connect(cluster.devKey, (message) => {
      asked.push(message);
      return { action: 'accept', content: { allow: true } };
    });
    const before = app.deliveries.filter((d) => d.body.tool === 'send_email').length;
    const res = await accepting.client.callTool({
      name: 'openbot_run_code',
      arguments: { code: 'await apps.work_calendar.send_email({ to: "elicit@example.com" }); return "sent"' },
    });
    const s = res.structuredContent as Loose;
    expect(s.status).toBe('Completed');
    expect(s.value).toBe('sent');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(
      /^Islet run [\w-]+ needs your decision: call conn-\w+\/send_email with \{"to":"elicit@example.com"\}\. Allow it\?$/,
    );
    expect(app.deliveries.filter((d) => d.body.tool === 'send_email').length).toBe(before + 1);

    const declining = await connect(cluster.devKey, () => ({ action: 'decline' }));
    const denied = await declining.client.callTool({
      name: 'run_code',
      arguments: {
        code: 'try { await apps.work_calendar.send_email({ to: "no@example.com" }) } catch (e) { return e.name }',
        description: 'Try to send a mail that is declined',
      },
    });
    expect(textOf(denied)).toBe('AppCallDenied');
    expect(app.deliveries.filter((d) => d.body.arguments?.to === 'no@example.com')).toEqual([]);
  }, 60_000);
});

describe('replicas', () => {
  it('any gateway serves the session: tools/call on one, everything else (initialize, elicitation answers, cancellation) on the other', async () => {
    const [callGateway, otherGateway] = cluster.gatewayUrls.map((u) => new URL(u).host);
    const seen: Array<[string, string]> = [];
    const split: typeof fetch = (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const body = typeof init?.body === 'string' ? init.body : '';
      url.host = body.includes('"method":"tools/call"') ? callGateway! : otherGateway!;
      seen.push([
        url.host,
        /"method":"([^"]+)"/.exec(body)?.[1] ?? (body ? 'response' : (init?.method ?? 'GET')),
      ]);
      return fetch(url, init);
    };
    const { client } = await connect(
      cluster.devKey,
      () => ({ action: 'accept', content: { allow: true } }),
      split,
    );
    const res = await client.callTool({
      name: 'openbot_run_code',
      arguments: {
        code: 'await apps.work_calendar.send_email({ to: "replica@example.com" }); return "sent"',
      },
    });
    expect((res.structuredContent as Loose).status).toBe('Completed');
    // The elicitation answer reached the other gateway, the waiting call picked it up through Redis.
    expect(seen).toContainEqual([otherGateway, 'response']);

    const ac = new AbortController();
    let runId = '';
    const spin = client.callTool(
      {
        name: 'run_code',
        arguments: { code: 'while (true) {}', description: 'Spin until stopped on the other gateway' },
      },
      undefined,
      {
        signal: ac.signal,
        onprogress: (p) => {
          const m = /^run ([\w-]+) running$/.exec(p.message ?? '');
          if (m && !runId) {
            runId = m[1]!;
            ac.abort('stop');
          }
        },
      },
    );
    await expect(spin).rejects.toThrow();
    const rec = await until(async () => {
      const r = await a('GET', `/v1/code-runs/${runId}`);
      return r.body.status === 'Cancelled' && r.body;
    }, 30_000);
    expect(rec.result.kind).toBe('abort');
    expect(seen).toContainEqual([otherGateway, 'notifications/cancelled']);
    expect(seen.filter(([, m]) => m === 'tools/call').every(([h]) => h === callGateway)).toBe(true);
  }, 60_000);
});

describe('the run_code skill', () => {
  it("runs python and answers the skill document's output shape", async () => {
    const { client } = await connect(cluster.devKey);
    const res = await client.callTool({
      name: 'run_code_skill',
      arguments: { language: 'python', code: "import json\nprint(json.dumps({'sum': sum(range(10))}))" },
    });
    expect(res.structuredContent).toEqual({
      success: true,
      output: '{"sum": 45}\n',
      error: '',
      exitCode: 0,
      language: 'python',
    });
    const bad = await client.callTool({
      name: 'run_code_skill',
      arguments: { language: 'ruby', code: 'puts 1' },
    });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toBe('invalid language: expected one of python, javascript, bash');
  }, 60_000);
});

describe('tenants', () => {
  it('per-tenant names and surfaces; sessions, runs and bindings are walled', async () => {
    const put = await admin('PUT', '/v1/admin/tenants/umbrella/mcp', {
      tools: {
        run_code: { name: 'umbrella_run', description: 'Runs Umbrella programs.' },
        skill: { enabled: false },
      },
    });
    expect(put.status).toBe(200);
    const dup = await admin('PUT', '/v1/admin/tenants/umbrella/mcp', {
      tools: { code_api: { name: 'openbot_run_code' } },
    });
    expect(dup.status).toBe(400);
    expect(dup.body.detail).toContain('two tools are named "openbot_run_code"');
    expect((await admin('PUT', '/v1/admin/tenants/nobody/mcp', {})).status).toBe(404);
    expect((await api(cluster.url, otherKey)('PUT', '/v1/admin/tenants/umbrella/mcp', {})).status).toBe(403);

    const mine = await connect(cluster.devKey);
    const theirs = await connect(otherKey);
    const theirTools = (await theirs.client.listTools()).tools;
    // Umbrella has no Apps: no Code Mode tools; run_code's description gains the runtime's rules.
    expect(theirTools.map((t) => t.name)).toEqual(['umbrella_run', 'get_run']);
    expect(theirTools[0]!.description).toMatch(/^Runs Umbrella programs\.\n\nRuntime rules:/);
    expect((await mine.client.listTools()).tools.map((t) => t.name)).toContain('run_code');

    // Their code API does not show my connections; their programs cannot reach them.
    const decl = textOf(await theirs.client.callTool({ name: 'openbot_code_api', arguments: {} }));
    expect(decl).not.toContain('work_calendar');
    const tried = await theirs.client.callTool({
      name: 'umbrella_run',
      arguments: {
        code: 'return await apps.work_calendar.list_events({ day: "x" })',
        description: 'Try to reach another tenant',
      },
    });
    expect(tried.isError).toBe(true);
    expect(textOf(tried)).toMatch(/^code run failed \(exception\)/);
    // My run_code name is not theirs: calling it is a direct-call refusal.
    const wrong = await theirs.client.callTool({
      name: 'run_code',
      arguments: { code: 'return 1', description: 'Use the other name' },
    });
    expect(wrong.isError).toBe(true);
    expect(textOf(wrong)).toContain('only umbrella_run is called directly');

    // My session id with their key is not found; my session's runs are not listed for them.
    await mine.client.callTool({
      name: 'run_code',
      arguments: { code: 'return 1', description: 'Leave a run in my session' },
    });
    const hijack = await fetch(`${cluster.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${otherKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': mine.sessionId,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(hijack.status).toBe(404);
    const theirApi = api(cluster.url, otherKey);
    expect((await theirApi('GET', `/v1/sessions/${mine.sessionId}/code-runs`)).body.items).toEqual([]);
    const noKey = await fetch(`${cluster.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(noKey.status).toBe(401);
  }, 60_000);
});

describe('GET /v1/tools', () => {
  it('returns the same tools for openai, anthropic and mcp, generated from the zod schemas', async () => {
    const schema = jsonSchemaOf(SURFACE_DEFINITIONS.run_code.input, 'input');
    const openai = await a('GET', '/v1/tools?format=openai');
    expect(openai.status).toBe(200);
    expect(openai.body.tools[0]).toEqual({
      type: 'function',
      function: {
        name: 'run_code',
        description: SURFACE_DEFINITIONS.run_code.defaultDescription,
        parameters: schema,
      },
    });
    const anthropic = await a('GET', '/v1/tools?format=anthropic');
    expect(anthropic.body.tools.map((t: Loose) => t.name)).toEqual([
      'run_code',
      'openbot_code_api',
      'openbot_run_code',
      'run_code_skill',
    ]);
    expect(anthropic.body.tools[0].input_schema).toEqual(schema);
    const mcp = await a('GET', '/v1/tools');
    expect(mcp.body.format).toBe('mcp');
    const { client } = await connect(cluster.devKey);
    // MCP adds get_run and the runtime's rules to run_code's description; the surfaces are the same.
    const listed = (await client.listTools()).tools.map((t) => t.name).filter((n) => n !== 'get_run');
    expect(mcp.body.tools.map((t: Loose) => t.name)).toEqual(listed);
    const bad = await a('GET', '/v1/tools?format=gemini');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    // Per tenant: the other tenant's renamed tool shows in its own definitions.
    const theirs = await api(cluster.url, otherKey)('GET', '/v1/tools?format=anthropic');
    expect(theirs.body.tools[0].name).toBe('umbrella_run');
  });
});
