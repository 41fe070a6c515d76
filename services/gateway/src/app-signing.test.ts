/**
 * Apps can trust Islet, end to end through the gateway (real app, real Redis, the example App from
 * `examples/http-app` on a real listener, verifying with the `standardwebhooks` package): the
 * secret is shown once, every call is signed, a rotation signs with both secrets until the old
 * one expires, connection headers reach the App and never come back out of the API, and an App's
 * error body and unsafe numbers reach the program as errors it can act on.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../examples/http-app/src/app.ts';
import {
  type GatewayAppUnderTest,
  injectCall,
  startGatewayApp,
  type TestGatewayDeps,
} from '../test/gateway-harness.ts';
import { signatureOf, webhookHeaders } from './app-signing.ts';

const INTERNAL = 'internal-token-for-signing-tests';
const TOKEN = 'app-token-that-must-never-come-back';
let gateway: GatewayAppUnderTest | undefined;
let app: FastifyInstance;
let deps: TestGatewayDeps;
let server: Server;
let base: string;
let auth: Record<string, string>;
/** What the listener does with the next requests; swapped per test. */
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => res.end('{}');
const seen: Array<{ headers: IncomingMessage['headers']; body: string }> = [];

beforeAll(async () => {
  gateway = await startGatewayApp({
    env: { ISLET_INTERNAL_TOKEN: INTERNAL, ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true' },
  });
  ({ app, deps } = gateway);
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  auth = { authorization: `Bearer ${(await deps.tenants.createKey('acme', ['apps.use'])).key}` };
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString() }));
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await gateway?.close();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

const tools = ['create_invoice', 'get_invoice', 'refund', 'raw'].map((name) => ({ name }));

async function connect(name: string, extra: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/connections',
    headers: auth,
    payload: { name, kind: 'http', url: `${base}/app`, tools, ...extra },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; slug: string; signingSecret: string; headers?: string[] };
}

/** One binding call of a fresh run through the gateway's call route; the outcome the program gets. */
async function call(conn: { id: string; slug: string }, tool: string, args: unknown = {}) {
  const submitted = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth,
    payload: { code: 'return 1', description: 'signing test', connections: [conn.id] },
  });
  const id = submitted.json().id as string;
  const served = await injectCall({ app, deps }, INTERNAL, id, {
    index: 0,
    binding: `${conn.slug}.${tool}`,
    argsJson: JSON.stringify(args),
  });
  expect(served.statusCode, served.body).toBe(200);
  return { runId: id, outcome: served.json().outcome as Record<string, unknown> };
}

describe('signing (Standard Webhooks)', () => {
  it('the /docs page carries the HTTP App contract (docs/apps.md)', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.info.description).toContain('## Write an App: the HTTP App contract');
    expect(doc.info.description).toContain('### 3. Verify the signature');
    expect(doc.paths['/v1/connections/{id}/signing-secret/rotate'].post).toBeDefined();
  });

  it('signs exactly as the spec and the standardwebhooks package do', () => {
    const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    const at = new Date(1_792_486_800_000);
    const body = '{"tool":"x"}';
    expect(signatureOf(secret, 'msg_1', at.getTime() / 1000, body)).toBe(
      new Webhook(secret).sign('msg_1', at, body),
    );
    const headers = webhookHeaders([secret, secret.replace('Bw', 'CA')], 'msg_1', body, at.getTime());
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
  });

  it('returns the secret once; the example App verifies every call with it', async () => {
    const conn = await connect('Invoices', { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(conn.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(conn.headers).toEqual(['Authorization']);
    handler = createApp({ secrets: [conn.signingSecret], token: TOKEN });

    const { runId, outcome } = await call(conn, 'create_invoice', { customer: 'ada', amountCents: 100 });
    expect(outcome).toEqual({
      type: 'result',
      valueJson: '{"id":"inv_1","customer":"ada","amountCents":100}',
    });
    const request = seen.at(-1)!;
    expect(request.headers['webhook-id']).toBe(`${runId}:0`);
    expect(request.headers['x-islet-tenant']).toBe('acme');
    expect(request.headers['x-islet-run']).toBe(runId);
    expect(request.headers.authorization).toBe(`Bearer ${TOKEN}`);
    // Tenant and run are inside what the signature covers.
    expect(JSON.parse(request.body).context).toMatchObject({ tenant: 'acme', run: runId, callIndex: 0 });

    // Another secret: the App refuses, and its answer reaches the program.
    handler = createApp({ secrets: [`whsec_${Buffer.alloc(24, 1).toString('base64')}`], token: TOKEN });
    expect((await call(conn, 'create_invoice', { customer: 'ada', amountCents: 1 })).outcome).toEqual({
      type: 'error',
      name: 'AppCallFailed',
      message: 'the App answered HTTP 401: the request is not signed by Islet',
      details: { reason: 'http-status', status: 401, body: { error: 'the request is not signed by Islet' } },
    });
  });

  it('never returns the secret or the header values from any read', async () => {
    const conn = await connect('Ledger', {
      headers: { Authorization: `Bearer ${TOKEN}`, 'X-Api-Key': TOKEN },
    });
    const reads = [
      await app.inject({ method: 'GET', url: '/v1/connections', headers: auth }),
      await app.inject({ method: 'GET', url: `/v1/connections/${conn.id}`, headers: auth }),
      await app.inject({ method: 'GET', url: '/v1/code-api', headers: auth }),
      await app.inject({ method: 'GET', url: '/openapi.json' }),
    ];
    for (const read of reads) {
      expect(read.statusCode).toBe(200);
      expect(read.body).not.toContain(TOKEN);
      expect(read.body).not.toContain(conn.signingSecret);
      expect(read.body).not.toMatch(/sealedHeaders|sealedSigning/);
    }
    const one = reads[1]!.json();
    expect(one.headers).toEqual(['Authorization', 'X-Api-Key']);
    expect(one.signing).toEqual({ scheme: 'standard-webhooks', secrets: 1 });
    expect(one.signingSecret).toBeUndefined();
  });

  it('rotates: both secrets sign until the old one expires; expiring at once drops it', async () => {
    const conn = await connect('Rotating');
    const old = conn.signingSecret;
    const rotated = await app.inject({
      method: 'POST',
      url: `/v1/connections/${conn.id}/signing-secret/rotate`,
      headers: auth,
      payload: {},
    });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const next = rotated.json().signingSecret as string;
    expect(next).toMatch(/^whsec_/);
    expect(next).not.toBe(old);
    expect(rotated.json().previousExpiresAt).toBeGreaterThan(Date.now() + 23 * 3600_000);
    for (const secrets of [[old], [next]]) {
      handler = createApp({ secrets });
      expect((await call(conn, 'create_invoice', { customer: 'x', amountCents: 1 })).outcome.type).toBe(
        'result',
      );
    }
    expect(String(seen.at(-1)!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    const view = await app.inject({ method: 'GET', url: `/v1/connections/${conn.id}`, headers: auth });
    expect(view.json().signing).toMatchObject({ secrets: 2 });

    const now = await app.inject({
      method: 'POST',
      url: `/v1/connections/${conn.id}/signing-secret/rotate`,
      headers: auth,
      payload: { previousSecretExpiresInSeconds: 0 },
    });
    const newest = now.json().signingSecret as string;
    handler = createApp({ secrets: [next] });
    expect((await call(conn, 'create_invoice', { customer: 'x', amountCents: 1 })).outcome).toMatchObject({
      details: { status: 401 },
    });
    handler = createApp({ secrets: [newest] });
    expect((await call(conn, 'create_invoice', { customer: 'x', amountCents: 1 })).outcome.type).toBe(
      'result',
    );
  });

  it('two rotations at once each return a secret that really signs', async () => {
    const conn = await connect('Racing');
    const [a, b] = await Promise.all(
      [1, 2].map(() =>
        app.inject({
          method: 'POST',
          url: `/v1/connections/${conn.id}/signing-secret/rotate`,
          headers: auth,
          payload: { previousSecretExpiresInSeconds: 600 },
        }),
      ),
    );
    for (const secret of [a!.json().signingSecret, b!.json().signingSecret]) {
      handler = createApp({ secrets: [secret] });
      expect((await call(conn, 'create_invoice', { customer: 'r', amountCents: 1 })).outcome.type).toBe(
        'result',
      );
    }
  });

  it('refuses headers on client connections, Islet-owned header names, and rotating a non-http connection', async () => {
    const client = await app.inject({
      method: 'POST',
      url: '/v1/connections',
      headers: auth,
      payload: { name: 'Phone', kind: 'client', headers: { Authorization: 'x' } },
    });
    expect(client.statusCode).toBe(400);
    expect(client.json().detail).toContain('headers are only for http and mcp connections');
    for (const name of ['Webhook-Signature', 'Idempotency-Key', 'X-Islet-Tenant', 'Content-Type']) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/connections',
        headers: auth,
        payload: { name: `Forge ${name}`, kind: 'http', url: `${base}/app`, headers: { [name]: 'forged' } },
      });
      expect(res.statusCode, name).toBe(400);
      expect(res.json().detail).toContain('Islet sends those');
    }
    const created = await app.inject({
      method: 'POST',
      url: '/v1/connections',
      headers: auth,
      payload: { name: 'Phone2', kind: 'client', tools: [{ name: 'ask' }] },
    });
    expect(created.json().signingSecret).toBeUndefined();
    const rotate = await app.inject({
      method: 'POST',
      url: `/v1/connections/${created.json().id}/signing-secret/rotate`,
      headers: auth,
      payload: {},
    });
    expect(rotate.statusCode).toBe(404);
  });
});

describe("an App's answer the program can act on", () => {
  it('an error body reaches the program and the run record, bounded to 4 KiB', async () => {
    const conn = await connect('Books');
    handler = createApp({ secrets: [conn.signingSecret] });
    const { runId, outcome } = await call(conn, 'get_invoice', { id: 'inv_404' });
    expect(outcome).toEqual({
      type: 'error',
      name: 'AppCallFailed',
      message: 'the App answered HTTP 404: no invoice inv_404',
      details: { reason: 'http-status', status: 404, body: { error: 'no invoice inv_404' } },
    });
    const record = await app.inject({ method: 'GET', url: `/v1/code-runs/${runId}`, headers: auth });
    expect(record.json().calls[0].outcome.result.error.details.body).toEqual({ error: 'no invoice inv_404' });

    handler = (_req, res) => res.writeHead(500).end('é'.repeat(5000));
    const big = (await call(conn, 'raw')).outcome as { message: string; details: Record<string, unknown> };
    expect(big.message).toBe('the App answered HTTP 500');
    expect(big.details.bodyTruncated).toBe(true);
    expect(Buffer.byteLength(String(big.details.body))).toBeLessThanOrEqual(4096);
    expect(String(big.details.body)).toMatch(/^é+$/);
  });

  it('numbers JSON cannot carry exactly are an error, not null or a rounded value', async () => {
    const conn = await connect('Numbers');
    for (const [answer, number] of [
      ['{"amount":1e400}', '1e400'],
      ['{"id":9007199254740993}', '9007199254740993'],
      ['[-1e999]', '-1e999'],
    ] as const) {
      handler = (_req, res) => res.writeHead(200).end(answer);
      const { outcome } = await call(conn, 'raw');
      expect(outcome, answer).toMatchObject({
        type: 'error',
        name: 'AppCallFailed',
        details: { reason: 'lossy-number', number },
      });
      expect(String(outcome.message)).toContain(`${number}`);
      expect(String(outcome.message)).toContain('send it as a string');
    }
    handler = (_req, res) =>
      res.writeHead(200).end('{"x":0.1,"big":1e20,"max":9007199254740991,"s":"9007199254740993"}');
    expect((await call(conn, 'raw')).outcome).toEqual({
      type: 'result',
      valueJson: '{"x":0.1,"big":100000000000000000000,"max":9007199254740991,"s":"9007199254740993"}',
    });
  });
});

describe('arguments checked against the tool inputSchema before anything is sent', () => {
  it('names the field, nothing reaches the App, and an ask tool asks nobody', async () => {
    const schema = {
      type: 'object',
      required: ['customer', 'amountCents'],
      additionalProperties: false,
      properties: { customer: { type: 'string' }, amountCents: { type: 'integer', minimum: 1 } },
    };
    const created = await app.inject({
      method: 'POST',
      url: '/v1/connections',
      headers: auth,
      payload: {
        name: 'Checked',
        kind: 'http',
        url: `${base}/app`,
        tools: [
          { name: 'create_invoice', inputSchema: schema },
          { name: 'pay', inputSchema: schema, policy: 'ask' },
        ],
      },
    });
    const conn = created.json() as { id: string; slug: string; signingSecret: string };
    handler = createApp({ secrets: [conn.signingSecret] });
    const before = seen.length;
    const cases: Array<[string, unknown, string]> = [
      [
        'create_invoice',
        { customer: 'ada', amountCents: '12' },
        'invalid arguments for apps.checked.create_invoice: arguments.amountCents must be integer',
      ],
      [
        'create_invoice',
        { amountCents: 3 },
        'invalid arguments for apps.checked.create_invoice: arguments.customer is required',
      ],
      [
        'create_invoice',
        null,
        'invalid arguments for apps.checked.create_invoice: arguments.customer is required; arguments.amountCents is required',
      ],
      [
        'pay',
        { customer: 'ada', amountCents: 5, note: 'x' },
        'invalid arguments for apps.checked.pay: arguments.note is not a field of this tool',
      ],
    ];
    for (const [tool, args, message] of cases) {
      const { outcome } = await call(conn, tool, args);
      expect(outcome).toMatchObject({
        type: 'error',
        name: 'AppCallFailed',
        message,
        details: { reason: 'invalid-arguments' },
      });
    }
    expect(seen.length).toBe(before);
    expect((await call(conn, 'create_invoice', { customer: 'ada', amountCents: 12 })).outcome.type).toBe(
      'result',
    );
    expect(seen.length).toBe(before + 1);
  });
});
