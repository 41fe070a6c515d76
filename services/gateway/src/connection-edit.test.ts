/**
 * `PATCH /v1/connections/:id`, what the console's connections page edits in place: a tool's
 * policy and description, the url, an mcp server's headers (write-only); bad input is a 400 with
 * the problem type, another tenant's connection a 404, and the name (the binding prefix) stays.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';

let key: string;
let otherKey: string;
let id: string;

const auth = (k: string) => ({ authorization: `Bearer ${k}` });
const patch = (payload: unknown, k = key, target = id) =>
  app.inject({
    method: 'PATCH',
    url: `/v1/connections/${target}`,
    headers: auth(k),
    payload: payload as object,
  });

const { app, deps } = await onGatewayApp();

beforeAll(async () => {
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  await deps.tenants.createTenant({ id: 'other', name: 'Other' });
  key = (await deps.tenants.createKey('acme', ['apps.use'])).key;
  otherKey = (await deps.tenants.createKey('other', ['apps.use'])).key;
  const created = await app.inject({
    method: 'POST',
    url: '/v1/connections',
    headers: auth(key),
    payload: {
      name: 'Mail',
      kind: 'http',
      url: 'https://mail.example/call',
      tools: [
        { name: 'send_email', policy: 'allow' },
        { name: 'read_note', policy: 'allow' },
      ],
    },
  });
  expect(created.statusCode).toBe(201);
  id = created.json().id;
});

describe('PATCH /v1/connections/:id', () => {
  it("changes one tool's policy and the url, keeps the rest, and the next read sees it", async () => {
    const res = await patch({
      url: 'https://mail.example/v2',
      tools: [{ name: 'send_email', policy: 'ask', description: 'Sends mail' }],
    });
    expect(res.statusCode).toBe(200);
    const read = (
      await app.inject({ method: 'GET', url: `/v1/connections/${id}`, headers: auth(key) })
    ).json();
    expect(read).toMatchObject({ id, name: 'Mail', slug: 'mail', url: 'https://mail.example/v2' });
    expect(read.tools).toEqual([
      expect.objectContaining({ name: 'send_email', policy: 'ask', description: 'Sends mail' }),
      expect.objectContaining({ name: 'read_note', policy: 'allow' }),
    ]);
    expect(read.bindings).toEqual(['apps.mail.send_email', 'apps.mail.read_note']);
  });

  it('refuses what it cannot apply with a problem naming it, never a 500', async () => {
    const cases: Array<[unknown, string]> = [
      [{ tools: [{ name: 'nope', policy: 'ask' }] }, `connection ${id} has no tool nope`],
      [{ tools: [{ name: 'send_email', policy: 'maybe' }] }, ''],
      [{ name: 'Renamed' }, ''],
      [
        { headers: { 'Webhook-Signature': 'v1,forged' } },
        'headers may not set content-type, content-length, host, connection, transfer-encoding, idempotency-key, webhook-* or x-islet-* (Islet sends those)',
      ],
      [{ url: 'ftp://mail.example' }, 'the url must be http(s)'],
    ];
    for (const [body, detail] of cases) {
      const res = await patch(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().type).toBe('https://islet.dev/problems/validation');
      if (detail) expect(res.json().detail).toBe(detail);
    }
  });

  it("is a 404 for another tenant's connection, and changes nothing there", async () => {
    const res = await patch({ tools: [{ name: 'send_email', policy: 'deny' }] }, otherKey);
    expect(res.statusCode).toBe(404);
    expect(res.json().detail).toBe(`no connection ${id}`);
    const read = (
      await app.inject({ method: 'GET', url: `/v1/connections/${id}`, headers: auth(key) })
    ).json();
    expect(read.tools[0].policy).toBe('ask');
  });
});
