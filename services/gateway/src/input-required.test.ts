import { keys } from '@islet/core';
import { operationIdFor } from '@islet/runs';
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';
import { clientConnection } from '../test/gateway-harness.ts';
import type { AppResponse } from './app-http.ts';
import { httpAnswerOutcome } from './input-required.ts';

const INTERNAL = 'internal-token-for-input-required';
let key: string;
let httpConn: string;
let clientConn: string;
const posted: Array<{ tool: string; idempotencyKey: string }> = [];

const auth = { authorization: `Bearer ${'x'}` };

const { app, deps } = await onGatewayApp({
  env: { ISLET_INTERNAL_TOKEN: INTERNAL, ISLET_CLIENT_CALL_TIMEOUT_MS: '10000' },
  prepare: (d) => {
    d.postToApp = async (_url, headers, body): Promise<AppResponse> => {
      const { tool } = JSON.parse(body) as { tool: string };
      posted.push({ tool, idempotencyKey: headers['idempotency-key'] ?? '' });
      if (tool === 'needs') return { status: 202, text: '{"inputRequired":{"message":"Which account?"}}' };
      return { status: 200, text: '{"ok":true}' };
    };
  },
});

beforeAll(async () => {
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use'])).key;
  auth.authorization = `Bearer ${key}`;
  const h = await deps.connections.create('acme', {
    name: 'Bank',
    kind: 'http',
    url: 'https://bank.example.com/app',
    tools: [
      { name: 'needs', inputSchema: {}, policy: 'allow' },
      { name: 'pay', inputSchema: {}, policy: 'ask' },
    ],
    resources: [],
    prompts: [],
  });
  if (!h.ok) throw new Error('connections');
  httpConn = h.connection.id;
  clientConn = await clientConnection(deps, 'acme');
});

async function submit(connection: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth,
    payload: {
      code: 'return 1',
      description: 'Input required',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [connection],
      ...extra,
    },
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().id as string;
}

const serve = (id: string, attempt: number, index: number, binding: string) =>
  app.inject({
    method: 'POST',
    url: `/internal/v1/code-runs/${id}/calls`,
    headers: { authorization: `Bearer ${INTERNAL}` },
    payload: { attempt, index, binding, argsJson: '{}' },
  });

describe('http App answers', () => {
  it('maps exactly {"inputRequired": {"message"}} to AppInputRequired; anything else stays a result or fails', () => {
    expect(httpAnswerOutcome('{"inputRequired":{"message":"Need a PIN"}}', 'op-1')).toEqual({
      type: 'error',
      name: 'AppInputRequired',
      message: 'Need a PIN',
      details: { operationId: 'op-1' },
    });
    for (const bad of [
      '{"inputRequired":{}}',
      '{"inputRequired":{"message":"  "}}',
      '{"inputRequired":{"message":7}}',
      '{"inputRequired":"Need a PIN"}',
      '{"inputRequired":{"message":"x","extra":1}}',
    ]) {
      expect(httpAnswerOutcome(bad, 'op-1'), bad).toMatchObject({
        type: 'error',
        name: 'AppCallFailed',
        details: { reason: 'bad-input-required' },
      });
    }
    // Another key next to it, or an array: an ordinary result.
    expect(httpAnswerOutcome('{"inputRequired":{"message":"x"},"data":1}', 'op-1')).toEqual({
      type: 'result',
      valueJson: '{"inputRequired":{"message":"x"},"data":1}',
    });
    expect(httpAnswerOutcome('[1]', 'op-1')).toEqual({ type: 'result', valueJson: '[1]' });
    expect(httpAnswerOutcome('', 'op-1')).toEqual({ type: 'result', valueJson: 'null' });
    expect(httpAnswerOutcome('nope', 'op-1')).toMatchObject({ details: { reason: 'bad-json' } });
  });

  it('journals AppInputRequired with the operation id; a re-execution replays it and sends nothing', async () => {
    const id = await submit(httpConn);
    const attempt = await deps.journal.nextAttempt(id);
    const first = await serve(id, attempt, 0, 'bank.needs');
    expect(first.statusCode, first.body).toBe(200);
    const expected = {
      type: 'error',
      name: 'AppInputRequired',
      message: 'Which account?',
      details: { operationId: operationIdFor(id, 0) },
    };
    expect(first.json().outcome).toEqual(expected);
    const again = await serve(id, await deps.journal.nextAttempt(id), 0, 'bank.needs');
    expect(again.json().outcome).toEqual(expected);
    expect(posted.filter((p) => p.idempotencyKey === `${id}:0`)).toHaveLength(1);
    const record = (await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth })).json();
    expect(record.calls[0]).toMatchObject({
      index: 0,
      operationId: operationIdFor(id, 0),
      outcome: {
        _tag: 'Done',
        result: {
          _tag: 'Failed',
          error: { name: 'AppInputRequired', message: 'Which account?', details: expected.details },
        },
      },
    });
  });
});

describe('client answers', () => {
  it('validates the body (400 problem+json, call stays pending), then {"inputRequired"} → AppInputRequired', async () => {
    const id = await submit(clientConn);
    const served = serve(id, await deps.journal.nextAttempt(id), 0, 'phone.ask_user');
    const pendingKey = keys.clientCallPending(id, 0);
    for (let i = 0; i < 100 && !(await deps.redis.exists(pendingKey)); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(await deps.redis.exists(pendingKey)).toBe(1);
    const answer = (payload: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: `/v1/code-runs/${id}/calls/0/result`, headers: auth, payload });
    for (const bad of [
      { inputRequired: {} },
      { inputRequired: { message: '' } },
      { inputRequired: { message: 5 } },
      { inputRequired: 'text' },
      { inputRequired: { message: 'x', extra: true } },
      { inputRequired: { message: 'x' }, result: 1 },
      { inputRequired: { message: 'x'.repeat(10_001) } },
    ]) {
      const res = await answer(bad);
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expect(String(res.headers['content-type'])).toContain('application/problem+json');
      expect(res.json()).toMatchObject({ type: 'https://islet.dev/problems/validation' });
      expect(res.json().detail).toContain('{"inputRequired": {"message": "..."}}');
    }
    expect(await deps.redis.exists(pendingKey)).toBe(1);
    const ok = await answer({ inputRequired: { message: 'Pick a date' } });
    expect(ok.statusCode, ok.body).toBe(202);
    const expected = {
      type: 'error',
      name: 'AppInputRequired',
      message: 'Pick a date',
      details: { operationId: operationIdFor(id, 0) },
    };
    expect((await served).json().outcome).toEqual(expected);
    expect((await answer({ inputRequired: { message: 'again' } })).statusCode).toBe(409);
    const replay = await serve(id, await deps.journal.nextAttempt(id), 0, 'phone.ask_user');
    expect(replay.json().outcome).toEqual(expected);
    const requested = (await deps.runs.readEvents(id)).filter((e) => e.type === 'call.requested');
    expect(requested).toHaveLength(1); // the replay did not ask the client again
  });
});

describe('decision.needed', () => {
  it('is published once per (run, index), even when a re-execution meets the pending decision again', async () => {
    // Stop-and-replay (Code Mode's approval) is what re-executes; run_code holds by default.
    const id = await submit(httpConn, { approval: 'stop' });
    const first = await serve(id, await deps.journal.nextAttempt(id), 0, 'bank.pay');
    expect(first.json().outcome).toMatchObject({ type: 'stop', code: 'suspended' });
    const second = await serve(id, await deps.journal.nextAttempt(id), 0, 'bank.pay');
    expect(second.json().outcome).toMatchObject({ type: 'stop', code: 'suspended' });
    const needed = (await deps.runs.readEvents(id)).filter((e) => e.type === 'decision.needed');
    expect(needed).toHaveLength(1);
    expect(needed[0]?.data).toMatchObject({ code: { run: id, index: 0 } });
    expect((await deps.runs.get(id))?.status).toBe('Waiting');
    expect(posted.filter((p) => p.idempotencyKey === `${id}:0`)).toHaveLength(0);
  });
});
