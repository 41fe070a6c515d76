/**
 * The runner's binding calls served ahead of fastify on the same listener (`internal-fast-path.ts`),
 * over real HTTP on a real Redis: the runner's exact requests are taken there (fastify's hooks never
 * see them; `inject()` still goes through fastify's routes), and every answer, refusals first, is the
 * answer fastify gives the same bytes: the same request to a twin app without the fast path gets the
 * same status line, headers (but `Date`) and body.
 */
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayDepsUnderTest,
  startGatewayDeps,
  type TestGatewayDeps,
} from '../test/gateway-harness.ts';
import { buildApp } from './app.ts';
import { fastPathTaken } from './internal-fast-path.ts';
import { createShutdown } from './shutdown.ts';

const INTERNAL = 'internal-token-for-tests';
let gateway: GatewayDepsUnderTest;
let deps: TestGatewayDeps;
let appServer: Server;
let appPort: number;
let key: string;
let binding: string;
let connectionId: string;
const opened: FastifyInstance[] = [];

beforeAll(async () => {
  gateway = await startGatewayDeps({ ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true' });
  ({ deps } = gateway);
  appServer = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => appServer.listen(0, '127.0.0.1', r));
  appPort = (appServer.address() as { port: number }).port;
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use'])).key;
  const c = await deps.connections.create('acme', {
    name: 'Ping',
    kind: 'http',
    url: `http://127.0.0.1:${appPort}/`,
    tools: [{ name: 'go', inputSchema: {}, policy: 'allow' }],
    resources: [],
    prompts: [],
  });
  if (!c.ok) throw new Error(c.detail);
  binding = `${c.connection.slug}.go`;
  connectionId = c.connection.id;
});
afterAll(async () => {
  for (const a of opened) await a.close();
  appServer?.closeAllConnections();
  await new Promise((r) => appServer?.close(r));
  await gateway?.close();
});

/** An app over the shared deps (closed in afterAll). */
async function built(options: Parameters<typeof buildApp>[1] = {}): Promise<FastifyInstance> {
  const app = await buildApp(deps, options);
  opened.push(app);
  return app;
}

/** `app` listening on loopback; its port. */
async function listen(app: FastifyInstance) {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: (app.server.address() as { port: number }).port };
}

const listening = async (options: Parameters<typeof buildApp>[1] = {}) => listen(await built(options));

async function submit(app: FastifyInstance): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { authorization: `Bearer ${key}` },
    payload: {
      code: 'return 1',
      description: 'd',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [connectionId],
    },
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().id as string;
}

interface Exchange {
  /** Status line and headers as sent, `Date` left out. */
  head: string;
  body: string;
}

/**
 * One request written as these bytes on a fresh connection; the response read whole (by its length,
 * its last chunk, or the connection's end), with its `Date` header dropped.
 */
function exchange(port: number, request: string | Buffer): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const done = () => {
      const text = data.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = text
        .slice(0, split)
        .split('\r\n')
        .filter((l) => !/^date:/i.test(l))
        .join('\n');
      socket.destroy();
      resolve({ head, body: Buffer.from(text.slice(split + 4), 'latin1').toString('utf8') });
    };
    const complete = () => {
      const text = data.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) return false;
      const head = text.slice(0, split);
      const length = /\r\ncontent-length: (\d+)/i.exec(head);
      if (length) return data.length - (split + 4) >= Number(length[1]);
      if (/\r\ntransfer-encoding: chunked/i.test(head)) return text.endsWith('\r\n0\r\n\r\n');
      return false;
    };
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      if (complete()) done();
    });
    socket.on('end', done);
    socket.on('error', (err) => (data.length ? done() : reject(err)));
    socket.write(request);
  });
}

/** A POST's bytes: `headers` as given (Host first), a Content-Length for `body` unless one is given. */
function post(path: string, body: string, headers: Record<string, string> = {}): string {
  const all: Record<string, string> = { host: '127.0.0.1', ...headers };
  if (
    !Object.keys(all).some(
      (h) => h.toLowerCase() === 'content-length' || h.toLowerCase() === 'transfer-encoding',
    )
  )
    all['content-length'] = String(Buffer.byteLength(body));
  const lines = Object.entries(all).map(([k, v]) => `${k}: ${v}`);
  return `POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}
const runner = { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' };

/** The NDJSON lines of a batch's chunked body, by index (their grouping into chunks may differ). */
function batchLines(body: string): unknown[] {
  const text = body
    .split('\r\n')
    .filter((_, i) => i % 2 === 1)
    .join('');
  return text
    .split('\n')
    .filter((l) => l)
    .map((l) => JSON.parse(l) as { index: number })
    .sort((a, b) => a.index - b.index);
}

/** `islet_http_requests_total` of a route and code, and `islet_http_request_duration_seconds_count` of the route. */
async function counted(route: string, code: string) {
  const lines = (await deps.metrics.registry.metrics()).split('\n');
  const sum = (name: string, labels: string[]) =>
    lines
      .filter((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const of = [`route="${route}"`, 'method="POST"'];
  return {
    total: sum('islet_http_requests_total', [...of, `code="${code}"`]),
    histogram: sum('islet_http_request_duration_seconds_count', of),
  };
}

describe('the internal fast path', () => {
  it("takes the runner's calls ahead of fastify (no fastify hook runs for them) and counts them in the same series", async () => {
    const seen: string[] = [];
    const unready = await built();
    unready.addHook('onRequest', (request, _reply, done) => {
      seen.push(request.url);
      done();
    });
    const { app, port } = await listen(unready);
    const id = await submit(app);
    const calls = '/internal/v1/code-runs/:id/calls';
    const batches = '/internal/v1/code-runs/:id/call-batch';
    const before = { ok: await counted(calls, '200'), batch: await counted(batches, '200') };
    const taken = fastPathTaken.count;
    seen.length = 0;
    for (let index = 0; index < 5; index++) {
      const res = await fetch(`http://127.0.0.1:${port}/internal/v1/code-runs/${id}/calls`, {
        method: 'POST',
        headers: runner,
        body: JSON.stringify({ attempt: 1, index, binding, argsJson: '{}' }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        outcome: { type: 'result', valueJson: '{"ok":true}' },
        deliverySeq: index + 1,
      });
    }
    const batch = await fetch(`http://127.0.0.1:${port}/internal/v1/code-runs/${id}/call-batch`, {
      method: 'POST',
      headers: runner,
      body: JSON.stringify({
        attempt: 1,
        calls: [5, 6, 7].map((index) => ({ index, binding, argsJson: '{}' })),
      }),
    });
    expect(batch.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await batch.text()).split('\n').filter((l) => l);
    expect(lines.map((l) => JSON.parse(l).status)).toEqual([200, 200, 200]);
    // The base counts 6 here: every call through fastify's onRequest.
    expect(seen).toEqual([]);
    expect(fastPathTaken.count - taken).toBe(6);
    // The request counter and histogram an SRE reads count them as before, with their route.
    const after = { ok: await counted(calls, '200'), batch: await counted(batches, '200') };
    expect(after.ok.total - before.ok.total).toBe(5);
    expect(after.ok.histogram - before.ok.histogram).toBe(5);
    expect(after.batch.total - before.batch.total).toBe(1);
    expect(after.batch.histogram - before.batch.histogram).toBe(1);
    // A refusal's status is counted with it.
    const refused = await counted(calls, '400');
    expect(
      (
        await fetch(`http://127.0.0.1:${port}/internal/v1/code-runs/${id}/calls`, {
          method: 'POST',
          headers: runner,
          body: '{',
        })
      ).status,
    ).toBe(400);
    expect((await counted(calls, '400')).total - refused.total).toBe(1);
    // inject() reaches fastify's routes, which serve the same calls.
    const injected = await app.inject({
      method: 'POST',
      url: `/internal/v1/code-runs/${id}/calls`,
      headers: runner,
      payload: { attempt: 1, index: 9, binding, argsJson: '{}' },
    });
    expect(injected.json()).toEqual({
      outcome: { type: 'result', valueJson: '{"ok":true}' },
      deliverySeq: 9,
    });
    expect(seen).toEqual([`/internal/v1/code-runs/${id}/calls`]);
    expect(fastPathTaken.count - taken).toBe(7);
  });

  it('answers every refusal as fastify does, byte for byte (status line, headers, body)', async () => {
    const fast = await listening();
    const plain = await listening({ internalFastPath: false });
    const id = await submit(fast.app);
    const good = { attempt: 1, index: 0, binding, argsJson: '{}' };
    const deep = `${'['.repeat(70)}${']'.repeat(70)}`;
    const path = (route: string, run = id) => `/internal/v1/code-runs/${run}/${route}`;
    const cases: Array<[string, string | Buffer]> = [
      ['malformed JSON', post(path('calls'), '{"attempt":', runner)],
      ['prototype poisoning', post(path('calls'), '{"__proto__":{"x":1}}', runner)],
      ['constructor poisoning', post(path('calls'), '{"constructor":{"prototype":{"x":1}}}', runner)],
      ['a body nested too deep', post(path('calls'), `{"x":${deep}}`, runner)],
      ['a body that is not an object', post(path('calls'), '[1]', runner)],
      ['a negative index', post(path('calls'), JSON.stringify({ ...good, index: -1 }), runner)],
      ['attempt 0', post(path('calls'), JSON.stringify({ ...good, attempt: 0 }), runner)],
      ['an empty binding', post(path('calls'), JSON.stringify({ ...good, binding: '' }), runner)],
      ['takeover not a boolean', post(path('calls'), JSON.stringify({ ...good, takeover: 'yes' }), runner)],
      ['arguments nested too deep', post(path('calls'), JSON.stringify({ ...good, argsJson: deep }), runner)],
      ['an unknown run', post(path('calls', 'no-such-run'), JSON.stringify(good), runner)],
      [
        'an unknown run, batch',
        post(path('call-batch', 'no-such-run'), JSON.stringify({ attempt: 1, calls: [good] }), runner),
      ],
      ['a batch without calls', post(path('call-batch'), JSON.stringify({ attempt: 1, calls: [] }), runner)],
      [
        'a batch of bad calls',
        post(path('call-batch'), JSON.stringify({ attempt: 1, calls: [{ index: 'x' }] }), runner),
      ],
      ['a batch, malformed', post(path('call-batch'), '{', runner)],
      ['a batch, nested too deep', post(path('call-batch'), `{"x":${deep}}`, runner)],
      ['no token', post(path('calls'), JSON.stringify(good), { 'content-type': 'application/json' })],
      [
        'a wrong token',
        post(path('calls'), JSON.stringify(good), {
          ...runner,
          authorization: `Bearer ${'x'.repeat(INTERNAL.length)}`,
        }),
      ],
      ['a wrong token, batch', post(path('call-batch'), '{}', { ...runner, authorization: 'Bearer nope' })],
      ['text/plain', post(path('calls'), JSON.stringify(good), { ...runner, 'content-type': 'text/plain' })],
      ['no content type', post(path('calls'), JSON.stringify(good), { authorization: runner.authorization })],
      ['an empty body', post(path('calls'), '', runner)],
      [
        'a body over the limit',
        post(path('calls'), '', { ...runner, 'content-length': String(67_108_864 + 65_537) }),
      ],
      [
        'a chunked body, malformed',
        post(path('calls'), '1\r\n{\r\n0\r\n\r\n', { ...runner, 'transfer-encoding': 'chunked' }),
      ],
      ['a run id too long', post(path('calls', 'r'.repeat(201)), JSON.stringify(good), runner)],
      ['a run id with bad encoding', post(path('calls', '%zz'), JSON.stringify(good), runner)],
      ['a trailing slash', post(`${path('calls')}/`, JSON.stringify(good), runner)],
      ['a query string', post(`${path('calls', 'no-such-run')}?x=1`, JSON.stringify(good), runner)],
      [
        'GET',
        `GET ${path('calls')} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${INTERNAL}\r\n\r\n`,
      ],
    ];
    const taken = fastPathTaken.count;
    for (const [what, request] of cases) {
      const [a, b] = [await exchange(fast.port, request), await exchange(plain.port, request)];
      expect(a, what).toEqual(b);
      expect(a.head, what).toMatch(/^HTTP\/1\.1 [245]\d\d /);
      if (process.env.SHOW) console.log(what, a);
    }
    // The first sixteen have the runner's exact head: their refusals were the fast path's own.
    expect(fastPathTaken.count - taken).toBe(16);
  });

  it('a served call and a batch: the same answers as fastify, the batch streamed as NDJSON lines', async () => {
    const fast = await listening();
    const plain = await listening({ internalFastPath: false });
    const id = await submit(fast.app);
    const served = await Promise.all(
      [fast.port, plain.port].map((port, i) =>
        exchange(
          port,
          post(
            `/internal/v1/code-runs/${id}/calls`,
            JSON.stringify({ attempt: 1, index: i, binding, argsJson: '{}' }),
            runner,
          ),
        ),
      ),
    );
    expect(served[0]!.head).toBe(served[1]!.head);
    expect(JSON.parse(served[0]!.body)).toEqual({
      outcome: { type: 'result', valueJson: '{"ok":true}' },
      deliverySeq: 1,
    });
    expect(JSON.parse(served[1]!.body)).toEqual({
      outcome: { type: 'result', valueJson: '{"ok":true}' },
      deliverySeq: 2,
    });
    // A run each: the same indexes, the same journal sequence.
    const batch = async (port: number) =>
      exchange(
        port,
        post(
          `/internal/v1/code-runs/${await submit(fast.app)}/call-batch`,
          JSON.stringify({
            attempt: 1,
            calls: [
              { index: 0, binding, argsJson: '{}' },
              { index: 1, binding, argsJson: `${'['.repeat(70)}${']'.repeat(70)}` },
              { index: 2, binding: 'none.such', argsJson: '{}' },
            ],
          }),
          runner,
        ),
      );
    const [a, b] = [await batch(fast.port), await batch(plain.port)];
    expect(a.head).toBe(b.head);
    expect(a.head).toContain('content-type: application/x-ndjson');
    expect(batchLines(a.body)).toEqual(batchLines(b.body));
    expect(batchLines(a.body)).toMatchObject([
      { index: 0, status: 200, outcome: { type: 'result' } },
      { index: 1, status: 400, problem: { type: 'https://islet.dev/problems/json-too-deep' } },
      { index: 2, status: 200, outcome: { type: 'error', details: { reason: 'unknown-binding' } } },
    ]);
  });

  it('a Redis outage and an internal error: the same 503 (Retry-After) and 500 as fastify', async () => {
    const fast = await listening();
    const plain = await listening({ internalFastPath: false });
    const get = deps.runs.get.bind(deps.runs);
    const good = JSON.stringify({ attempt: 1, index: 0, binding, argsJson: '{}' });
    try {
      // Run ids neither app has cached: each reads the record and meets the error.
      deps.runs.get = async () => {
        throw new Error('Connection is closed.');
      };
      const [a, b] = [
        await exchange(fast.port, post('/internal/v1/code-runs/outage-a/calls', good, runner)),
        await exchange(plain.port, post('/internal/v1/code-runs/outage-a/calls', good, runner)),
      ];
      expect(a).toEqual(b);
      expect(a.head).toMatch(/^HTTP\/1\.1 503 /);
      expect(a.head).toContain('retry-after: 1');
      deps.runs.get = async () => {
        throw new Error('a bug');
      };
      const [c, d] = [
        await exchange(fast.port, post('/internal/v1/code-runs/bug-a/calls', good, runner)),
        await exchange(plain.port, post('/internal/v1/code-runs/bug-a/calls', good, runner)),
      ];
      expect(c).toEqual(d);
      expect(c.head).toMatch(/^HTTP\/1\.1 500 /);
    } finally {
      deps.runs.get = get;
    }
  });

  it('while the gateway drains, its answers close their connection as fastify does', async () => {
    const apps = [await built(), await built({ internalFastPath: false })];
    // Before they listen, as main.ts does.
    const shutdown = createShutdown({
      apps,
      delayMs: 1500,
      logger: { info: () => {} } as never,
      afterClose: async () => {},
    });
    const [fast, plain] = [await listen(apps[0]!), await listen(apps[1]!)];
    const id = await submit(fast.app);
    const done = shutdown.begin('SIGTERM');
    const served = await Promise.all(
      [fast.port, plain.port].map((port, i) =>
        exchange(
          port,
          post(
            `/internal/v1/code-runs/${id}/calls`,
            JSON.stringify({ attempt: 1, index: i, binding, argsJson: '{}' }),
            runner,
          ),
        ),
      ),
    );
    expect(served[0]!.head).toBe(served[1]!.head);
    expect(served[0]!.head).toContain('connection: close');
    const unknown = post(
      '/internal/v1/code-runs/no-such-run/calls',
      JSON.stringify({ attempt: 1, index: 0, binding, argsJson: '{}' }),
      runner,
    );
    const [a, b] = [await exchange(fast.port, unknown), await exchange(plain.port, unknown)];
    expect(a).toEqual(b);
    expect(a.head).toContain('connection: close');
    await done;
  });
});
