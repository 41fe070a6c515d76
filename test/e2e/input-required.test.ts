/**
 * End to end with real processes (two gateways, a runner, their own Redis): an App that needs more
 * input — an `http` App answering `{"inputRequired": {"message"}}`, or a `client` connection posting
 * it as its call answer — reaches the program as `AppInputRequired` with `details.operationId` equal
 * to the record's `calls[i].operationId`; uncaught it fails the run; a replay never resends it.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, httpConnection, type Loose, readSse, startAppServer, until } from './helpers.ts';

let cluster: Cluster;
let a: Api;
let b: Api;
let app: Awaited<ReturnType<typeof startAppServer>>;
let bank: Loose;
let phone: Loose;

const run = (code: string, connection: string) => ({
  code,
  description: 'Ask an App that needs more input',
  sessionId: 'sess-ir',
  turnId: 'turn-ir',
  callId: 'call-ir',
  connections: [connection],
});
const ended = (id: string) =>
  until(async () => {
    const r = await a('GET', `/v1/code-runs/${id}`);
    return ['Completed', 'Failed', 'Cancelled'].includes(r.body.status) && r.body;
  }, 30_000);
const deliveriesOf = (key: string) => app.deliveries.filter((d) => d.idempotencyKey === key);

const CATCH = `
try {
  await apps.bank.needs({ amount: 5 });
  return "no error";
} catch (e) {
  return { name: e.name, message: e.message, operationId: e.details.operationId };
}`;

beforeAll(async () => {
  cluster = await startCluster({
    gateways: 2,
    runners: [{ modes: ['read-only'] }],
    env: { ISLET_CLIENT_CALL_TIMEOUT_MS: '20000', ISLET_APP_CALL_TIMEOUT_MS: '5000' },
  });
  a = api(cluster.gatewayUrls[0]!, cluster.devKey);
  b = api(cluster.gatewayUrls[1]!, cluster.devKey);
  app = await startAppServer((d) =>
    d.body.tool === 'needs'
      ? { status: 202, body: JSON.stringify({ inputRequired: { message: 'Which account?' } }) }
      : { status: 200, body: JSON.stringify({ structuredContent: { tool: d.body.tool } }) },
  );
  bank = await httpConnection(a, 'Bank', app.url, { needs: 'allow', pay: 'ask' });
  const client = await a('POST', '/v1/connections', {
    name: 'Phone',
    kind: 'client',
    tools: [{ name: 'ask_user', policy: 'allow' }],
  });
  expect(client.status, JSON.stringify(client.body)).toBe(201);
  phone = client.body;
}, 90_000);

afterAll(async () => {
  await app?.close();
  await cluster?.stop();
});

describe('http App: {"inputRequired": {"message"}}', () => {
  it('the program catches AppInputRequired; details.operationId is the record’s calls[0].operationId', async () => {
    const res = await a('POST', '/v1/runs', run(CATCH, bank.id), { prefer: 'wait=30' });
    expect(res.body.status, JSON.stringify(res.body)).toBe('Completed');
    const rec = res.body;
    expect(rec.result.value).toEqual({
      name: 'AppInputRequired',
      message: 'Which account?',
      operationId: rec.calls[0].operationId,
    });
    expect(rec.calls[0].operationId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-/);
    expect(rec.calls[0]).toMatchObject({
      index: 0,
      binding: 'bank.needs',
      outcome: {
        _tag: 'Done',
        result: {
          _tag: 'Failed',
          error: {
            name: 'AppInputRequired',
            message: 'Which account?',
            details: { operationId: rec.calls[0].operationId },
          },
        },
      },
    });
    expect(deliveriesOf(`${rec.id}:0`)).toHaveLength(1);
  });

  it('uncaught, the run fails with an exception', async () => {
    const res = await a('POST', '/v1/runs', run('await apps.bank.needs({}); return "unreached"', bank.id), {
      prefer: 'wait=30',
    });
    expect(res.body.status).toBe('Failed');
    expect(res.body.result).toMatchObject({ _tag: 'Failed', kind: 'exception' });
    expect(res.body.text).toMatch(/^code run failed \(exception\): /);
    expect(res.body.text).toContain('Which account?');
  });

  it('a replay after a decision returns the journaled AppInputRequired and does not send the call again', async () => {
    const code = `
      let first;
      try { await apps.bank.needs({}); } catch (e) { first = e.name + " " + e.details.operationId; }
      await apps.bank.pay({ to: "x" });
      return first;`;
    const id = (await a('POST', '/v1/runs', run(code, bank.id))).body.id as string;
    const events = await readSse(`${cluster.gatewayUrls[1]}/v1/code-runs/${id}/events`, cluster.devKey, {
      until: (e) => e.event === 'decision.needed',
    });
    expect(events.filter((e) => e.event === 'decision.needed')).toHaveLength(1);
    await until(async () => (await a('GET', `/v1/code-runs/${id}`)).body.status === 'Waiting');
    const allowed = await b('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    const rec = await ended(id);
    expect(rec.status).toBe('Completed');
    expect(rec.result.value).toBe(`AppInputRequired ${rec.calls[0].operationId}`);
    expect(deliveriesOf(`${id}:0`)).toHaveLength(1); // replayed from the journal, never resent
    expect(deliveriesOf(`${id}:1`)).toHaveLength(1);
    // The whole stream announced the decision once.
    const all = await readSse(`${cluster.gatewayUrls[0]}/v1/code-runs/${id}/events`, cluster.devKey, {
      until: (e) => e.event === 'end',
    });
    expect(all.filter((e) => e.event === 'decision.needed')).toHaveLength(1);
  });
});

describe('client connection: {"inputRequired": {"message"}} as the call answer', () => {
  it('the program catches AppInputRequired with the call’s operationId; malformed answers are 400', async () => {
    const code = `
      try { return await apps.phone.ask_user({ q: "date?" }); }
      catch (e) { return { name: e.name, message: e.message, operationId: e.details.operationId }; }`;
    const id = (await a('POST', '/v1/runs', run(code, phone.id))).body.id as string;
    const events = await readSse(`${cluster.gatewayUrls[0]}/v1/code-runs/${id}/events`, cluster.devKey, {
      until: (e) => e.event === 'call.requested',
    });
    const requested = events.at(-1)!.data;
    expect(requested).toMatchObject({ index: 0, binding: 'phone.ask_user', idempotencyKey: `${id}:0` });
    const answer = (body: unknown) => b('POST', `/v1/code-runs/${id}/calls/0/result`, body);
    for (const bad of [{ inputRequired: {} }, { inputRequired: { message: ' ' } }, { inputRequired: 'x' }]) {
      const res = await answer(bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.type).toBe('https://islet.dev/problems/validation');
    }
    expect((await answer({ inputRequired: { message: 'Pick a date' } })).status).toBe(202);
    const rec = await ended(id);
    expect(rec.status).toBe('Completed');
    expect(rec.result.value).toEqual({
      name: 'AppInputRequired',
      message: 'Pick a date',
      operationId: rec.calls[0].operationId,
    });
    expect(requested.operationId).toBe(rec.calls[0].operationId);
    expect(rec.calls[0].outcome.result.error).toMatchObject({ name: 'AppInputRequired' });
  });

  it('uncaught, the run fails with code run failed (exception)', async () => {
    const id = (await a('POST', '/v1/runs', run('return await apps.phone.ask_user({})', phone.id))).body
      .id as string;
    await readSse(`${cluster.gatewayUrls[1]}/v1/code-runs/${id}/events`, cluster.devKey, {
      until: (e) => e.event === 'call.requested',
    });
    expect(
      (await a('POST', `/v1/code-runs/${id}/calls/0/result`, { inputRequired: { message: 'PIN?' } })).status,
    ).toBe(202);
    const rec = await ended(id);
    expect(rec.status).toBe('Failed');
    expect(rec.text).toMatch(/^code run failed \(exception\): .*PIN\?/);
  });
});
