/**
 * The runner's one-call route served ahead of fastify (internal-call-path.ts), on a real listener
 * and real Redis: a request exactly as the runner sends it is taken there and answered as fastify's
 * route answers the same request (`inject` goes through fastify alone): the same status,
 * content type, `retry-after` and bytes for a served call, its replay, every refusal (fields, the
 * run, both depth limits, an empty, broken or poisoned body) and a Redis outage; the App is called
 * once. Anything else (another spelling of the token, a wrong one, another content type, a
 * percent-encoded id, a query, a chunked body) is left to fastify. `islet_http_*` count the fast
 * path's answers under the route's pattern; a drain sends its in-flight answers with
 * `connection: close` and every later request through fastify; a shutdown drains it.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GatewayDepsUnderTest, startGatewayDeps, toolRun } from '../test/gateway-harness.ts';
import { buildApp } from './app.ts';
import { goneSignal, type InternalCallPath, internalCallPaths } from './internal-call-path.ts';
import { createShutdown } from './shutdown.ts';

const INTERNAL = 'internal-token-for-call-path-tests';
let gateway: GatewayDepsUnderTest;
let app: FastifyInstance;
let path: InternalCallPath;
let port = 0;
type PostToApp = NonNullable<GatewayDepsUnderTest['deps']['postToApp']>;
/** The App's answer in each test (the app reads `postToApp` when it is built). */
let toApp: PostToApp = async () => ({ status: 200, text: '{"ok":true}' });

beforeAll(async () => {
  gateway = await startGatewayDeps({ ISLET_INTERNAL_TOKEN: INTERNAL, ISLET_JSON_MAX_DEPTH: '64' });
  gateway.deps.postToApp = (...args) => toApp(...args);
  app = await buildApp(gateway.deps);
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
  path = internalCallPaths.get(app) as InternalCallPath;
});

afterAll(async () => {
  await app?.close();
  await gateway?.close();
});

interface Answer {
  status: number;
  type: string | undefined;
  retryAfter: string | undefined;
  connection: string | undefined;
  text: string;
}

/** A POST on a real connection; `headers` as given (`content-length` set unless `chunked`). */
function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  chunked = false,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: url,
        agent: false,
        headers: {
          // The runner's connections are kept alive; so is this one (node's default here is close).
          connection: 'keep-alive',
          authorization: `Bearer ${INTERNAL}`,
          'content-type': 'application/json',
          ...(chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => {
          req.destroy();
          resolve({
            status: res.statusCode ?? 0,
            type: res.headers['content-type'],
            retryAfter: res.headers['retry-after'] as string | undefined,
            connection: res.headers.connection,
            text,
          });
        });
      },
    );
    req.on('error', reject);
    const bytes = Buffer.from(body);
    if (chunked) req.write(bytes.subarray(0, 1));
    req.end(chunked ? bytes.subarray(1) : bytes);
  });
}

/** The same request through fastify alone. */
async function viaFastify(url: string, body: string | Buffer): Promise<Omit<Answer, 'connection'>> {
  const res = await app.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' },
    payload: body,
  });
  return {
    status: res.statusCode,
    type: res.headers['content-type'] as string | undefined,
    retryAfter: res.headers['retry-after'] as string | undefined,
    text: res.body,
  };
}

/** Posts `body` the runner's way: taken by the fast path, answered as fastify answers it. */
async function sameAsFastify(url: string, body: string | Buffer): Promise<Answer> {
  const before = path.taken;
  const fast = await post(url, body);
  expect(path.taken, url).toBe(before + 1);
  const { connection: _, ...compared } = fast;
  expect(compared, String(body).slice(0, 80)).toEqual(await viaFastify(url, body));
  return fast;
}

const good = { index: 0, binding: 'b', argsJson: '{"a":1}', attempt: 1 };
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('the runner’s one-call route ahead of fastify', () => {
  it('serves a call, its replay and every refusal as fastify’s route does', async () => {
    const deps = gateway.deps;
    const runId = 'fast-run';
    const { binding } = await toolRun(deps, { tenant: 'fast', connectionName: 'Fast', tool: 'put', runId });
    const sent: string[] = [];
    toApp = async (_url, _headers, body) => {
      sent.push(body);
      return { status: 200, text: '{"ok":true}' };
    };
    const attempt = await deps.journal.nextAttempt(runId);
    const url = `/internal/v1/code-runs/${runId}/calls`;
    const call = JSON.stringify({ index: 0, binding, argsJson: '{"n":0}', attempt });
    // Served on the fast path, then the same call replayed from the journal through fastify.
    const served = await sameAsFastify(url, call);
    expect(served.status).toBe(200);
    expect(served.type).toBe('application/json; charset=utf-8');
    expect(served.text).toBe('{"outcome":{"type":"result","valueJson":"{\\"ok\\":true}"},"deliverySeq":1}');
    expect(sent).toHaveLength(1);

    const unknown = '/internal/v1/code-runs/no-such-run/calls';
    const refusals = [
      JSON.stringify(good),
      JSON.stringify({ ...good, index: -1 }),
      JSON.stringify({ index: 0, binding: 'b', argsJson: '1' }),
      JSON.stringify({ ...good, takeover: 'yes' }),
      JSON.stringify({ ...good, extra: 1 }),
      JSON.stringify(good).replace(/}$/, `,"x":${nested(63)}}`),
      JSON.stringify(good).replace(/}$/, `,"x":${nested(64)}}`),
      JSON.stringify({ ...good, argsJson: nested(65) }),
      '',
      '{',
      '[1,2',
      '{"__proto__":{"a":1}}',
      '{"constructor":{"prototype":{"a":1}}}',
      'null',
      '7',
      '"text"',
      `{"index":0,"binding":"b","argsJson":"\u00e9\ud83d\ude00","attempt":1}`,
    ];
    const statuses = new Set<number>();
    for (const body of refusals) statuses.add((await sameAsFastify(unknown, body)).status);
    expect([...statuses].sort()).toEqual([400, 404]);
    // A body that is not UTF-8 is decoded as fastify's parser decodes it.
    const notUtf8 = Buffer.concat([
      Buffer.from('{"index":0,"binding":"'),
      Buffer.from([0xff, 0xc3]),
      Buffer.from('","argsJson":"1","attempt":1}'),
    ]);
    const latin = await sameAsFastify(unknown, notUtf8);
    expect(latin.status).toBe(404);
    expect(sent).toHaveLength(1);
  });

  it('makes no AbortController for a call served straight: its client-gone signal is made when first asked', async () => {
    const deps = gateway.deps;
    const runId = 'fast-run-signal';
    const { binding } = await toolRun(deps, {
      tenant: 'fast-signal',
      connectionName: 'Signal',
      tool: 'put',
      runId,
    });
    toApp = async () => ({ status: 200, text: '{"ok":true}' });
    const attempt = await deps.journal.nextAttempt(runId);
    const Original = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made++;
      }
    };
    const before = path.taken;
    try {
      const served = await post(
        `/internal/v1/code-runs/${runId}/calls`,
        JSON.stringify({ index: 0, binding, argsJson: '{"n":0}', attempt }),
      );
      expect(served.status).toBe(200);
    } finally {
      globalThis.AbortController = Original;
    }
    expect(path.taken).toBe(before + 1);
    expect(made).toBe(0);
  });

  it('its lazy client-gone signal: aborted when the client goes, at once when asked after it went', async () => {
    const { createServer } = await import('node:http');
    const asked: Array<() => AbortSignal> = [];
    const server = createServer((_req, res) => {
      asked.push(goneSignal(res));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port: p } = server.address() as { port: number };
    const open = () => {
      const req = httpRequest({ host: '127.0.0.1', port: p, method: 'GET', path: '/', agent: false });
      req.on('error', () => undefined);
      req.end();
      return req;
    };
    try {
      // Asked while the client is there: not aborted, the same signal each time; aborted when it goes.
      const first = open();
      await vi.waitFor(() => expect(asked).toHaveLength(1));
      const live = asked[0]!();
      expect(live.aborted).toBe(false);
      expect(asked[0]!()).toBe(live);
      first.destroy();
      await vi.waitFor(() => expect(live.aborted).toBe(true));
      // Asked only after the client went: aborted already.
      const second = open();
      await vi.waitFor(() => expect(asked).toHaveLength(2));
      second.destroy();
      await new Promise((r) => setTimeout(r, 50));
      expect(asked[1]!().aborted).toBe(true);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('answers a Redis outage with the same 503 and retry-after', async () => {
    const runs = gateway.deps.runs;
    const get = vi.spyOn(runs, 'get').mockRejectedValue(new Error('Connection is closed.'));
    try {
      const outage = await sameAsFastify('/internal/v1/code-runs/outage-run/calls', JSON.stringify(good));
      expect(outage.status).toBe(503);
      expect(outage.retryAfter).toBe('1');
      expect(JSON.parse(outage.text).type).toBe('https://islet.dev/problems/unavailable');
    } finally {
      get.mockRestore();
    }
  });

  it('leaves every other request to fastify', async () => {
    const url = '/internal/v1/code-runs/no-such-run/calls';
    const body = JSON.stringify(good);
    const before = path.taken;
    const wrong = await post(url, body, { authorization: 'Bearer wrong' });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.text).type).toBe('https://islet.dev/problems/unauthorized');
    // Other spellings fastify's check accepts reach the route there.
    for (const authorization of [`bearer ${INTERNAL}`, `Bearer  ${INTERNAL}`, `BEARER\t${INTERNAL}`])
      expect((await post(url, body, { authorization })).status, authorization).toBe(404);
    expect((await post(url, body, { 'content-type': 'application/json; charset=utf-8' })).status).toBe(404);
    const encoded = await post('/internal/v1/code-runs/a%20b/calls', body);
    expect(JSON.parse(encoded.text).detail).toBe('no code run a b');
    expect((await post(`${url}?x=1`, body)).status).toBe(404);
    expect((await post('/internal/v1/code-runs/.x/calls', body)).status).toBe(404);
    expect((await post(url, body, {}, true)).status).toBe(404);
    const text = await post(url, 'plain', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(path.taken).toBe(before);
    // The same request the runner's way is the fast path's.
    expect((await post(url, body)).status).toBe(404);
    expect(path.taken).toBe(before + 1);
  });

  it('counts its answers in islet_http_* under the route’s pattern', async () => {
    const series =
      /^islet_http_requests_total\{route="\/internal\/v1\/code-runs\/:id\/calls",method="POST",code="404"[^}]*\} (\d+)$/m;
    const count = async () => Number(series.exec(await gateway.deps.metrics.registry.metrics())?.[1] ?? 0);
    const before = count();
    const taken = path.taken;
    await post('/internal/v1/code-runs/no-such-run/calls', JSON.stringify(good));
    await post('/internal/v1/code-runs/no-such-run/calls', JSON.stringify(good));
    expect(path.taken).toBe(taken + 2);
    expect(await count()).toBe((await before) + 2);
  });
});

describe('draining and closing', () => {
  it('a drain closes an in-flight answer’s connection and sends later requests through fastify', async () => {
    const deps = gateway.deps;
    const runId = 'drain-run';
    const { binding } = await toolRun(deps, { tenant: 'drain', connectionName: 'Drain', tool: 'put', runId });
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let reached: () => void = () => undefined;
    const atApp = new Promise<void>((r) => {
      reached = r;
    });
    toApp = async () => {
      reached();
      await held;
      return { status: 200, text: '{"ok":true}' };
    };
    const attempt = await deps.journal.nextAttempt(runId);
    const url = `/internal/v1/code-runs/${runId}/calls`;
    const taken = path.taken;
    const inFlight = post(url, JSON.stringify({ index: 0, binding, argsJson: '{}', attempt }));
    await atApp;
    expect(path.taken).toBe(taken + 1);
    path.beginDraining();
    release();
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(answer.connection).toBe('close');
    expect((await post('/internal/v1/code-runs/no-such-run/calls', JSON.stringify(good))).status).toBe(404);
    expect(path.taken).toBe(taken + 1);
  });

  it('a shutdown drains it, and a closed app takes nothing', async () => {
    const other = await buildApp(gateway.deps);
    const otherPath = internalCallPaths.get(other) as InternalCallPath;
    const drain = vi.spyOn(otherPath, 'beginDraining');
    const shutdown = createShutdown({
      apps: [other],
      delayMs: 0,
      logger: { info: () => undefined, warn: () => undefined },
      afterClose: async () => undefined,
    });
    await shutdown.begin('test');
    expect(drain).toHaveBeenCalledOnce();
    const req = {
      method: 'POST',
      url: '/internal/v1/code-runs/r/calls',
      headers: {
        authorization: `Bearer ${INTERNAL}`,
        'content-type': 'application/json',
        'content-length': '2',
      },
    } as unknown as IncomingMessage;
    expect(otherPath.take(req, {} as ServerResponse)).toBe(false);
    expect(otherPath.taken).toBe(0);
    // Closed without a drain (tests, a listener closed on its own): fastify's 503 path.
    const closed = await buildApp(gateway.deps);
    await closed.close();
    const closedPath = internalCallPaths.get(closed) as InternalCallPath;
    expect(closedPath.take(req, {} as ServerResponse)).toBe(false);
    expect(closedPath.taken).toBe(0);
  });

  it('is not on a listener without the internal routes', async () => {
    const pub = await buildApp(gateway.deps, { surface: 'public' });
    try {
      expect(internalCallPaths.get(pub)).toBeUndefined();
    } finally {
      await pub.close();
    }
  });
});
