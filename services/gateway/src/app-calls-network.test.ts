/**
 * An `http` App call through the gateway (real app, real Redis, real listeners on 127.0.0.1 only):
 * with private networks off nothing internal is reached, and every way a connection can fail
 * (blocked, refused, reset, timeout, DNS failure) reaches the program as the same AppCallFailed
 * text, so a tenant cannot map ports. An oversized answer is a clear AppCallFailed.
 */
import { createServer, type Server } from 'node:http';
import { freePort } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewaysUnderTest, injectCall, startGateways } from '../test/gateway-harness.ts';
import { postToApp, type Resolver } from './app-http.ts';
import { APP_UNREACHABLE_MESSAGE } from './binding-calls.ts';

const INTERNAL = 'internal-token-for-network-tests';
let gateways: GatewaysUnderTest | undefined;
let server: Server;
let port: number;
let closedPort: number;
let hits = 0;

// Names resolve through this table, never through a real DNS server.
const resolver: Resolver = async (host) => {
  if (host === 'app.test') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};

beforeAll(async () => {
  gateways = await startGateways({ env: { ISLET_INTERNAL_TOKEN: INTERNAL } });
  server = createServer((req, res) => {
    hits++;
    if (req.url === '/reset') return req.socket.destroy();
    if (req.url === '/silent') return; // never answers
    req.resume();
    req.on('end', () => {
      if (req.url === '/big') return res.writeHead(200).end(`"${'x'.repeat(8192)}"`);
      res.writeHead(200).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  closedPort = await freePort();
});

afterAll(async () => {
  await gateways?.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** A gateway on the test Redis with `env` over the defaults; closed in afterAll. A tenant and its key come with it. */
async function startGateway(env: Record<string, string>) {
  const { app, deps } = await gateways!.add({
    env,
    prepare: (d) => {
      d.postToApp = (url, headers, body, options) => postToApp(url, headers, body, { ...options, resolver });
    },
  });
  const tenant = `t${gateways!.gateways.length}`;
  await deps.tenants.createTenant({ id: tenant, name: tenant });
  const key = (await deps.tenants.createKey(tenant, ['apps.use'])).key;
  /** An `http` App at `url` with one allowed tool, `go`. */
  const connect = async (url: string, name = `app ${Math.random().toString(36).slice(2)}`) => {
    const c = await deps.connections.create(tenant, {
      name,
      kind: 'http',
      url,
      tools: [{ name: 'go', inputSchema: {}, policy: 'allow' }],
      resources: [],
      prompts: [],
    });
    if (!c.ok) throw new Error(c.detail);
    return c.connection;
  };
  /** A run of this tenant with these connections; its id. */
  const submit = async (connections: string[]) => {
    const submitted = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { authorization: `Bearer ${key}` },
      payload: { code: 'return 1', description: 'n', sessionId: 's', turnId: 't', callId: 'c', connections },
    });
    return submitted.json().id as string;
  };
  return { app, deps, connect, submit };
}

async function gateway(allowPrivate: boolean) {
  const { app, deps, connect, submit } = await startGateway({
    ISLET_APP_ALLOW_PRIVATE_NETWORKS: String(allowPrivate),
    ISLET_APP_CALL_TIMEOUT_MS: '800',
    ISLET_APP_ANSWER_MAX_BYTES: '4096',
  });
  /** The outcome the program gets from one call to `url`. */
  return async (url: string): Promise<unknown> => {
    const connection = await connect(url);
    const id = await submit([connection.id]);
    const served = await injectCall({ app, deps }, INTERNAL, id, {
      index: 0,
      binding: `${connection.slug}.go`,
      argsJson: '{}',
    });
    expect(served.statusCode, served.body).toBe(200);
    return served.json().outcome;
  };
}

const uniform = {
  type: 'error',
  name: 'AppCallFailed',
  message: APP_UNREACHABLE_MESSAGE,
  details: { reason: 'unreachable' },
};

describe('http App calls through the gateway', () => {
  it('private networks off: no internal address is reached and every failure reads the same', async () => {
    const call = await gateway(false);
    for (const url of [
      `http://127.0.0.1:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://[::ffff:7f00:1]:${port}/`,
      `http://2130706433:${port}/`,
      `http://0x7f.1:${port}/`,
      `http://017700000001:${port}/`,
      `http://0.0.0.0:${port}/`,
      `http://[::]:${port}/`,
      `http://app.test:${port}/`,
      `http://127.0.0.1:${closedPort}/`,
      `http://169.254.169.254/latest/meta-data/`,
      `http://[fd00:ec2::254]/`,
      `http://[::ffff:a9fe:a9fe]/`,
      `http://10.0.0.1:6379/`,
      `http://nowhere.test/`,
    ])
      expect(await call(url), url).toEqual(uniform);
    expect(hits).toBe(0);
  });

  it('private networks on (devstack): refused, reset, timeout and DNS failure read the same; a live App answers', async () => {
    const call = await gateway(true);
    expect(await call(`http://app.test:${port}/`)).toEqual({ type: 'result', valueJson: '{"ok":true}' });
    for (const url of [
      `http://127.0.0.1:${closedPort}/`,
      `http://127.0.0.1:${port}/reset`,
      `http://127.0.0.1:${port}/silent`,
      `http://nowhere.test:${port}/`,
    ])
      expect(await call(url), url).toEqual(uniform);
    expect(await call(`http://127.0.0.1:${port}/big`)).toEqual({
      type: 'error',
      name: 'AppCallFailed',
      message: "the App's answer is larger than 4096 bytes, the most a call may return",
      details: { reason: 'answer-too-large', maxBytes: 4096 },
    });
  });
});

describe('a lone call on the wire', () => {
  it("costs the run's journal two Redis commands, the claim's and the outcome's scripts, and nothing else", async () => {
    const { app, deps, connect, submit } = await startGateway({ ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true' });
    const connection = await connect(`http://127.0.0.1:${port}/`);
    const id = await submit([connection.id]);
    const attempt = await deps.journal.nextAttempt(id);
    const call = (index: number) =>
      app.inject({
        method: 'POST',
        url: `/internal/v1/code-runs/${id}/calls`,
        headers: { authorization: `Bearer ${INTERNAL}` },
        payload: { attempt, index, binding: `${connection.slug}.go`, argsJson: '{}' },
      });
    // The first call fills the gateway's caches (the run's record, the connection).
    expect((await call(0)).json().outcome).toEqual({ type: 'result', valueJson: '{"ok":true}' });
    const sent: string[][] = [];
    const send = deps.redis.sendCommand.bind(deps.redis);
    deps.redis.sendCommand = ((command: { name: string; args: unknown[] }) => {
      sent.push([command.name, ...command.args.map(String)]);
      return send(command as never);
    }) as typeof deps.redis.sendCommand;
    try {
      const served = await call(1);
      expect(served.json()).toEqual({
        outcome: { type: 'result', valueJson: '{"ok":true}' },
        deliverySeq: 2,
      });
    } finally {
      deps.redis.sendCommand = send;
    }
    // Any read or write of this run's record, journal or events would name the run.
    const ofRun = sent.filter((c) => c.some((a) => a.includes(id)));
    expect(ofRun.map((c) => c[0])).toEqual(['evalsha', 'evalsha']);
  });

  it("refuses a call body the schema refuses, with the schema's own problem, and serves a well-formed one whatever else it carries", async () => {
    const { app, deps, connect, submit } = await startGateway({ ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true' });
    const connection = await connect(`http://127.0.0.1:${port}/`);
    const id = await submit([connection.id]);
    const attempt = await deps.journal.nextAttempt(id);
    const good = { attempt, index: 0, binding: `${connection.slug}.go`, argsJson: '{}' };
    const post = (payload: unknown) =>
      app.inject({
        method: 'POST',
        url: `/internal/v1/code-runs/${id}/calls`,
        headers: { authorization: `Bearer ${INTERNAL}` },
        payload: payload as Record<string, unknown>,
      });
    for (const bad of [
      { ...good, index: -1 },
      { ...good, index: 1.5 },
      { ...good, index: '0' },
      { ...good, attempt: 0 },
      { ...good, binding: '' },
      { ...good, binding: 'x'.repeat(301) },
      { ...good, argsJson: 7 },
      { ...good, takeover: 'yes' },
      { ...good, takeover: null },
      [good],
    ]) {
      const refused = await post(bad);
      expect(refused.statusCode, JSON.stringify(bad)).toBe(400);
      expect(refused.json().type).toBe('https://islet.dev/problems/validation');
    }
    expect(await deps.journal.list(id)).toEqual([]);
    const served = await post({ ...good, takeover: false, extra: 'ignored' });
    expect(served.json()).toEqual({ outcome: { type: 'result', valueJson: '{"ok":true}' }, deliverySeq: 1 });
  });
});

describe('call batches (one request, one NDJSON line per call as soon as it is journaled)', () => {
  it('answers each call on its own line, early ones first, and refuses what a single call refuses', async () => {
    // The silent App's call ends at 2.5 s; the fast ones' lines must come long before it.
    const { app, deps, connect, submit } = await startGateway({
      ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true',
      ISLET_APP_CALL_TIMEOUT_MS: '2500',
    });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const fast = await connect(`http://127.0.0.1:${port}/`, 'Fast');
    const silent = await connect(`http://127.0.0.1:${port}/silent`, 'Silent');
    const id = await submit([fast.id, silent.id]);
    const attempt = await deps.journal.nextAttempt(id);
    const deep = `${'['.repeat(200)}${']'.repeat(200)}`;
    const calls = [
      { index: 0, binding: `${silent.slug}.go`, argsJson: '{}' },
      { index: 1, binding: `${fast.slug}.go`, argsJson: '{"n":1}' },
      { index: 2, binding: `${fast.slug}.go`, argsJson: deep },
      { index: 3, binding: `${fast.slug}.go`, argsJson: '{"n":3}' },
    ];
    const started = Date.now();
    const res = await fetch(`${base}/internal/v1/code-runs/${id}/call-batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' },
      body: JSON.stringify({ attempt, calls }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/x-ndjson');
    const arrived: Array<{ at: number; line: Record<string, unknown> }> = [];
    const decoder = new TextDecoder();
    let rest = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      rest += decoder.decode(chunk, { stream: true });
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        arrived.push({ at: Date.now() - started, line: JSON.parse(rest.slice(0, nl)) });
        rest = rest.slice(nl + 1);
      }
    }
    const byIndex = new Map(arrived.map((a) => [a.line.index as number, a]));
    expect([...byIndex.keys()].sort()).toEqual([0, 1, 2, 3]);
    expect(byIndex.get(1)?.line).toMatchObject({
      status: 200,
      outcome: { type: 'result', valueJson: '{"ok":true}' },
    });
    expect(byIndex.get(3)?.line).toMatchObject({ status: 200, outcome: { type: 'result' } });
    expect(byIndex.get(2)?.line).toMatchObject({
      status: 400,
      problem: { type: 'https://islet.dev/problems/json-too-deep' },
    });
    // The silent App's call ends at its timeout, as the uniform AppCallFailed, after the others.
    expect(byIndex.get(0)?.line).toMatchObject({ status: 200, outcome: uniform });
    expect(byIndex.get(0)!.at - byIndex.get(1)!.at).toBeGreaterThan(1000);
    // Each served call is journaled like a single one.
    const journaled = await deps.journal.list(id);
    expect(
      journaled
        .filter((e) => e.state === 'done')
        .map((e) => e.index)
        .sort(),
    ).toEqual([0, 1, 3]);

    // A run that does not exist: every line is the single call's 404; no token: the request's 401.
    const gone = await fetch(`${base}/internal/v1/code-runs/nope/call-batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' },
      body: JSON.stringify({ attempt: 1, calls: calls.slice(1, 2) }),
    });
    expect(JSON.parse(await gone.text())).toMatchObject({
      index: 1,
      status: 404,
      problem: { type: 'https://islet.dev/problems/not-found', status: 404, detail: 'no code run nope' },
    });
    const anonymous = await fetch(`${base}/internal/v1/code-runs/${id}/call-batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ attempt, calls }),
    });
    expect(anonymous.status).toBe(401);
  });
});
