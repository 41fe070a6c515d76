import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeFilesHelpers, runSkill, WorkspaceStore } from '@islet/kernel-sandbox';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { filesRoutes } from './files.ts';
import { skillRoutes } from './skills.ts';

const base = mkdtempSync(join(tmpdir(), 'islet-routes-'));
chmodSync(base, 0o755); // the skill's scratch dirs live here and the jailed uid must traverse it
afterAll(() => {
  closeFilesHelpers(); // the islet-files helpers this file started
  rmSync(base, { recursive: true, force: true });
});

// A stand-in for the gateway's API-key check: `Bearer <tenant>`.
async function authenticate(request: FastifyRequest, reply: FastifyReply) {
  const m = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '');
  if (!m) {
    await reply
      .code(401)
      .type('application/problem+json')
      .send({ type: 'https://islet.dev/problems/unauthorized' });
  }
}
const resolveTenant = (request: FastifyRequest) =>
  /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')![1]!;

function buildApp() {
  const app = Fastify();
  const store = new WorkspaceStore({ root: join(base, 'ws'), maxFileBytes: 2048 });
  app.register(filesRoutes({ authenticate, resolveTenant, store }));
  app.register(
    skillRoutes({
      authenticate,
      resolveTenant,
      resolveMode: () => 'read-only',
      execute: (req, ctx) => runSkill({ ...req, mode: ctx.mode, tmpDir: base }),
    }),
  );
  return app;
}

const A = { authorization: 'Bearer tenant-a' };
const B = { authorization: 'Bearer tenant-b' };

describe('files routes', () => {
  const app = buildApp();
  afterAll(() => app.close());

  it('puts, gets, lists and deletes a file', async () => {
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/sessions/s1/files/data/in.csv',
      headers: { ...A, 'content-type': 'text/csv' },
      payload: 'a,b\n1,2\n',
    });
    expect(put.statusCode).toBe(201);
    expect(put.json()).toEqual({ path: 'data/in.csv', sizeBytes: 8 });
    const json = await app.inject({
      method: 'PUT',
      url: '/v1/sessions/s1/files/conf.json',
      headers: { ...A, 'content-type': 'application/json' },
      payload: '{"raw": true}',
    });
    expect(json.statusCode).toBe(201); // stored as bytes, not parsed
    const get = await app.inject({ method: 'GET', url: '/v1/sessions/s1/files/data/in.csv', headers: A });
    expect(get.statusCode).toBe(200);
    expect(get.headers['content-type']).toBe('application/octet-stream');
    expect(get.body).toBe('a,b\n1,2\n');
    const list = await app.inject({ method: 'GET', url: '/v1/sessions/s1/files', headers: A });
    expect(list.json().files.map((f: { path: string }) => f.path)).toEqual(['conf.json', 'data/in.csv']);
    const del = await app.inject({ method: 'DELETE', url: '/v1/sessions/s1/files/data/in.csv', headers: A });
    expect(del.statusCode).toBe(204);
    const again = await app.inject({
      method: 'DELETE',
      url: '/v1/sessions/s1/files/data/in.csv',
      headers: A,
    });
    expect(again.statusCode).toBe(404);
    expect(again.headers['content-type']).toContain('application/problem+json');
  });

  it("another tenant's session is not found (404, not 403)", async () => {
    const get = await app.inject({ method: 'GET', url: '/v1/sessions/s1/files/conf.json', headers: B });
    expect(get.statusCode).toBe(404);
    expect(get.json()).toMatchObject({ type: 'https://islet.dev/problems/not-found', code: 'not-found' });
    const list = await app.inject({ method: 'GET', url: '/v1/sessions/s1/files', headers: B });
    expect(list.statusCode).toBe(404);
  });

  it('refuses path traversal, encoded or not, with problem+json', async () => {
    for (const url of [
      '/v1/sessions/s1/files/..%2F..%2Fetc%2Fpasswd',
      '/v1/sessions/s1/files/a/..%2F..%2Fx',
      '/v1/sessions/s1/files/a%00b',
      '/v1/sessions/..%2Fx/files/a',
    ]) {
      const res = await app.inject({ method: 'PUT', url, headers: A, payload: 'x' });
      expect({ url, status: res.statusCode, body: res.body }).toMatchObject({ url, status: 400 });
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.json().type).toBe('https://islet.dev/problems/validation');
    }
    // Dot segments are normalised by URL parsing before routing: the request never names a file.
    const dots = await app.inject({
      method: 'PUT',
      url: '/v1/sessions/s1/files/a/%2e%2e/%2e%2e/%2e%2e/x',
      headers: A,
      payload: 'x',
    });
    expect(dots.statusCode).toBe(404);
  });

  it('refuses bodies over the size limit with 413', async () => {
    const res = await app.inject({
      method: 'PUT',
      url: '/v1/sessions/s1/files/big.bin',
      headers: { ...A, 'content-type': 'application/octet-stream' },
      payload: Buffer.alloc(4096),
    });
    expect(res.statusCode).toBe(413);
  });

  it('requires authentication', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/sessions/s1/files' });
    expect(res.statusCode).toBe(401);
  });
});

describe('POST /v1/skills/run_code', () => {
  const app = buildApp();
  afterAll(() => app.close());

  it('runs the program and answers the skill shape', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/skills/run_code',
      headers: A,
      payload: {
        language: 'python',
        code: "import json\nprint(json.dumps({'sum': sum(range(10))}))",
        timeout: 60000,
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      success: true,
      output: '{"sum": 45}\n',
      error: '',
      exitCode: 0,
      language: 'python',
    });
  });

  it('refuses invalid requests with problem+json naming the field', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/skills/run_code',
      headers: A,
      payload: { language: 'ruby', code: 'puts 1', timeout: 500000 },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      type: 'https://islet.dev/problems/validation',
      errors: [
        'invalid language: expected one of python, javascript, bash',
        'invalid timeout: the maximum is 120000 ms',
      ],
    });
  });
});
