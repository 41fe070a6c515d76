/**
 * The example App against requests signed as Islet signs them (the `standardwebhooks` package's
 * own `sign`): accepted when signed, refused when tampered, stale, unsigned or signed with another
 * secret; a rotation's two signatures; idempotency; input-required; an error body.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createApp } from '../src/app.ts';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const other = `whsec_${randomBytes(24).toString('base64')}`;
let server: Server;
let url: string;

before(async () => {
  server = createServer(createApp({ secrets: [secret], token: 't0ken' }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

let n = 0;
function requestBody(tool: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  n++;
  return {
    tool,
    kind: 'tool',
    arguments: args,
    ...extra,
    context: {
      tenant: 'acme',
      run: 'run-1',
      session: 's',
      callIndex: n,
      operationId: `op-${n}`,
      idempotencyKey: `run-1:${n}`,
    },
  };
}

async function call(
  body: { context: { idempotencyKey: string; run: string } },
  opts: { signWith?: string[]; at?: Date; tamper?: boolean; token?: string } = {},
) {
  const text = JSON.stringify(body);
  const id = body.context.idempotencyKey;
  const at = opts.at ?? new Date();
  const signature = (opts.signWith ?? [secret]).map((s) => new Webhook(s).sign(id, at, text)).join(' ');
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${opts.token ?? 't0ken'}`,
      'idempotency-key': id,
      'x-islet-run': body.context.run,
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    },
    body: opts.tamper ? text.replace('"amountCents":100', '"amountCents":100000') : text,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('example App', () => {
  it('answers a signed call with the tool result', async () => {
    const res = await call(requestBody('create_invoice', { customer: 'ada', amountCents: 100 }));
    assert.equal(res.status, 200);
    assert.equal(res.body.customer, 'ada');
  });

  it('refuses a tampered body, a stale timestamp, another secret, a missing signature, a wrong token', async () => {
    const args = { customer: 'ada', amountCents: 100 };
    assert.equal((await call(requestBody('create_invoice', args), { tamper: true })).status, 401);
    const stale = new Date(Date.now() - 10 * 60 * 1000);
    assert.equal((await call(requestBody('create_invoice', args), { at: stale })).status, 401);
    assert.equal((await call(requestBody('create_invoice', args), { signWith: [other] })).status, 401);
    assert.equal((await call(requestBody('create_invoice', args), { signWith: [] })).status, 401);
    const wrongToken = await call(requestBody('create_invoice', args), { token: 'nope' });
    assert.deepEqual(wrongToken, { status: 401, body: { error: 'missing or wrong Authorization' } });
  });

  it('accepts a rotation: the old and the new secret sign together', async () => {
    const res = await call(requestBody('create_invoice', { customer: 'bo', amountCents: 5 }), {
      signWith: [other, secret],
    });
    assert.equal(res.status, 200);
  });

  it('answers a retried call (same idempotency key) with the first answer, acting once', async () => {
    const body = requestBody('create_invoice', { customer: 'cy', amountCents: 7 });
    const first = await call(body);
    const again = await call(body);
    assert.deepEqual(again, first);
  });

  it('asks for input, then acts on the answer', async () => {
    const ask = await call(requestBody('refund', { id: 'inv_1' }));
    assert.deepEqual(ask.body, { inputRequired: { message: 'Refund inv_1 in full?' } });
    const done = await call(requestBody('refund', { id: 'inv_1' }, { input: 'yes' }));
    assert.deepEqual(done.body, { refunded: 'inv_1', answer: 'yes' });
  });

  it('answers an unknown invoice with a 404 and a body saying why', async () => {
    const res = await call(requestBody('get_invoice', { id: 'inv_404' }));
    assert.deepEqual(res, { status: 404, body: { error: 'no invoice inv_404' } });
  });
});
