/**
 * A call batch's NDJSON answer ends in the same socket write as its last lines (routes/internal.ts):
 * the chunked answer's terminator is never a write of its own, so the runner reads (and wakes for)
 * one message fewer a batch. Counted on the gateway's own end of the connection: each
 * `_writeGeneric` of that socket is one write or writev to the kernel. Real app, real Redis, a real
 * App on 127.0.0.1, the batch sent over a real socket.
 */
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayAppUnderTest, startGatewayApp } from '../test/gateway-harness.ts';

const INTERNAL = 'internal-token-for-batch-end-tests';
const TERMINATOR = '0\r\n\r\n';
let gateway: GatewayAppUnderTest | undefined;
let appServer: Server;
let appPort: number;
let base: string;
let tenantKey: string;
/** Every write the gateway made on the sockets it accepted, as text, by socket. */
const writes = new Map<Socket, string[]>();

beforeAll(async () => {
  // `/slow` answers 300 ms late: a batch with it and a fast call finishes its lines in two turns.
  appServer = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const answer = () => res.writeHead(200).end('{"ok":true}');
      if (req.url === '/slow') setTimeout(answer, 300);
      else answer();
    });
  });
  await new Promise<void>((r) => appServer.listen(0, '127.0.0.1', r));
  appPort = (appServer.address() as { port: number }).port;
  gateway = await startGatewayApp({
    env: { ISLET_INTERNAL_TOKEN: INTERNAL, ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true' },
  });
  const { app, deps } = gateway;
  // Each accepted socket's writes to the kernel: `_writeGeneric` is where net.Socket's `_write`
  // (one buffer) and `_writev` (a corked batch) meet, one syscall each.
  app.server.on('connection', (socket: Socket) => {
    const seen: string[] = [];
    writes.set(socket, seen);
    const s = socket as unknown as {
      _writeGeneric(writev: boolean, data: unknown, encoding: string, cb: unknown): unknown;
    };
    const original = s._writeGeneric.bind(socket);
    s._writeGeneric = (writev, data, encoding, cb) => {
      const text = writev
        ? (data as Array<{ chunk: string | Buffer }>).map((d) => String(d.chunk)).join('')
        : String(data);
      seen.push(text);
      return original(writev, data, encoding, cb);
    };
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
  await deps.tenants.createTenant({ id: 'tb', name: 'tb' });
  tenantKey = (await deps.tenants.createKey('tb', ['apps.use'])).key;
});

afterAll(async () => {
  await gateway?.close();
  appServer?.closeAllConnections();
  await new Promise((r) => appServer?.close(r));
});

async function connect(path: string) {
  const c = await gateway!.deps.connections.create('tb', {
    name: `app ${Math.random().toString(36).slice(2)}`,
    kind: 'http',
    url: `http://127.0.0.1:${appPort}${path}`,
    tools: [{ name: 'go', inputSchema: {}, policy: 'allow' }],
    resources: [],
    prompts: [],
  });
  if (!c.ok) throw new Error(c.detail);
  return c.connection;
}

async function submit(connections: string[]): Promise<string> {
  const submitted = await gateway!.app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { authorization: `Bearer ${tenantKey}` },
    payload: { code: 'return 1', description: 'n', sessionId: 's', turnId: 't', callId: 'c', connections },
  });
  return submitted.json().id as string;
}

/** Posts a batch on a fresh connection; its lines, and the gateway's writes on that connection. */
async function batch(id: string, calls: Array<{ index: number; binding: string; argsJson: string }>) {
  const before = new Set(writes.keys());
  const res = await fetch(`${base}/internal/v1/code-runs/${id}/call-batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ attempt: await gateway!.deps.journal.nextAttempt(id), calls }),
  });
  expect(res.status).toBe(200);
  const lines = (await res.text())
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { index: number; status: number; outcome?: unknown });
  const mine = [...writes.keys()].filter((s) => !before.has(s));
  expect(mine).toHaveLength(1);
  return { lines, sent: writes.get(mine[0]!) ?? [] };
}

describe('a call batch answer ends with its last lines', () => {
  it('answers a batch finished in one turn in one write: head, lines and the terminator', async () => {
    const fast = await connect('/');
    const id = await submit([fast.id]);
    const { lines, sent } = await batch(id, [{ index: 0, binding: `${fast.slug}.go`, argsJson: '{}' }]);
    expect(lines).toEqual([
      expect.objectContaining({
        index: 0,
        status: 200,
        outcome: { type: 'result', valueJson: '{"ok":true}' },
      }),
    ]);
    // f63d2625: two writes, the head with the line, then `0\r\n\r\n` alone a check phase later.
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(sent[0]).toContain('"index":0');
    expect(sent[0]?.endsWith(TERMINATOR)).toBe(true);
  });

  it('sends early lines at once and the last ones with the terminator, never the terminator alone', async () => {
    const fast = await connect('/');
    const slow = await connect('/slow');
    const id = await submit([fast.id, slow.id]);
    const { lines, sent } = await batch(id, [
      { index: 0, binding: `${slow.slug}.go`, argsJson: '{}' },
      { index: 1, binding: `${fast.slug}.go`, argsJson: '{}' },
    ]);
    expect(lines.map((l) => [l.index, l.status])).toEqual([
      [1, 200],
      [0, 200],
    ]);
    // The fast call's line went out before the slow App answered; the slow one's with the end.
    expect(sent).toHaveLength(2);
    expect(sent[0]).toContain('"index":1');
    expect(sent[0]).not.toContain(TERMINATOR);
    expect(sent[1]).toContain('"index":0');
    expect(sent[1]?.endsWith(TERMINATOR)).toBe(true);
    expect(sent.some((w) => w === TERMINATOR)).toBe(false);
  });
});
