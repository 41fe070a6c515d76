/**
 * A submit's answer byte for byte on the wire (round 52 `gateway-reply`): the record sent as its
 * text past fastify's serialization (waited-reply.ts) gives the same raw response — status line,
 * every header in the same order with the same value (`location`, `idempotent-replayed`,
 * `preference-applied`, `content-type`, `content-length`, then Node's `Date`, `Connection`,
 * `Keep-Alive`), body — as the previous release's `reply.send(record)`: a Completed end (a small
 * result and a spliced large one), Failed and Cancelled ends of several kinds, a timeout kind, a
 * wait that ends unfinished (202), a replay of a finished run and a submit that does not wait. The
 * body is the same run's `GET` (its route unchanged). And the record is stringified once, by the
 * route, not by fastify's serializer; its handler does not hand the ended reply back as a thenable.
 * Real redis-server, the gateway app listening on a port, a raw TCP client; the test ends each run.
 */
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { auth, run, startAppFixture } from '../test/app-fixture.ts';
import type { GatewayAppUnderTest, TestGatewayDeps } from '../test/gateway-harness.ts';
import { failedEnd, nextListen } from '../test/next-listen.ts';

let gateway: GatewayAppUnderTest | undefined;
let app: FastifyInstance;
let deps: TestGatewayDeps;
let key: string;
let port: number;

beforeAll(async () => {
  ({ gateway, app, deps, key } = await startAppFixture());
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});

afterAll(() => gateway?.close());

type End = Parameters<TestGatewayDeps['runs']['finish']>[1];

/** One request on a socket of its own; the raw answer (head and body) as the client reads it. */
function rawPost(body: string, headers: Record<string, string>): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  const head = Object.entries({
    host: 'localhost',
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.write(`POST /v1/runs HTTP/1.1\r\n${head}\r\n${body}`);
  return new Promise<string>((resolve, reject) => {
    let got = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(got.toString('latin1'));
      if (end >= 0 && length && got.length >= end + 4 + Number(length[1])) {
        socket.destroy();
        resolve(got.toString('utf8'));
      }
    });
    socket.on('error', reject);
  });
}

interface Submit {
  end?: End;
  wait?: number;
  idempotencyKey?: string;
  code?: string;
}

/** A submit (waited unless `wait: 0`) whose run the test ends with `end`, its raw answer and id. */
async function submit({ end, wait = 10, idempotencyKey, code = 'return 1' }: Submit) {
  const { listened, restore } = nextListen(deps.hub);
  try {
    const headers: Record<string, string> = { ...auth(key) };
    if (wait > 0) headers.prefer = `wait=${wait}`;
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    const answering = rawPost(JSON.stringify(run({ sessionId: 'reply-raw', code })), headers);
    if (wait === 0) return { raw: await answering };
    const id = await listened;
    const stored = await deps.runs.get(id);
    if (!stored) throw new Error('the waited run was not stored');
    if (end) await deps.runs.finish(stored, end);
    return { raw: await answering };
  } finally {
    restore();
  }
}

/** The raw answer b7514025's `reply.send(record)` gives, the body read by GET, `Date` as sent. */
async function previousReleaseAnswer(
  raw: string,
  status: 200 | 202,
  headers: { wait?: number; replayed?: boolean },
): Promise<string> {
  const id = /\r\nlocation: \/v1\/code-runs\/([\w-]+)\r\n/.exec(raw)?.[1];
  if (!id) throw new Error(`no location in ${JSON.stringify(raw)}`);
  const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(key) });
  const date = /\r\nDate: ([^\r]+)\r\n/.exec(raw)?.[1];
  return [
    `HTTP/1.1 ${status} ${status === 200 ? 'OK' : 'Accepted'}`,
    `location: /v1/code-runs/${id}`,
    ...(headers.replayed ? ['idempotent-replayed: true'] : []),
    ...(headers.wait ? [`preference-applied: wait=${headers.wait}`] : []),
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(read.body)}`,
    `Date: ${date}`,
    'Connection: keep-alive',
    'Keep-Alive: timeout=72',
    '',
    read.body,
  ].join('\r\n');
}

const completed = (value: unknown, logs: string[] = []): End =>
  ({
    status: 'Completed',
    result: { _tag: 'Completed', value, logs: logs.map((text) => ({ level: 'log', text })) },
    text: [...logs, typeof value === 'string' ? value : JSON.stringify(value)].join('\n'),
  }) as End;

const ENDS: [string, End][] = [
  ['Completed, a small result', completed({ ok: true })],
  ['Completed, a large result (spliced)', completed('x'.repeat(2_000), ['line "1"', 'line 2 — é'])],
  ['Completed, no value', completed(undefined, ['printed'])],
  ['Failed, exception', failedEnd('exception', 'ProgramFailed', 'boom "x"')],
  ['Failed, timeout', failedEnd('timeout', 'Timeout', 'the run took longer than 120000 ms')],
  ['Failed, output-limit', failedEnd('output-limit', 'OutputLimit', 'too much output')],
  ['Failed, sandbox-unavailable', failedEnd('sandbox-unavailable', 'SandboxUnavailable', 'no host')],
  ['Cancelled, abort', failedEnd('abort', 'Cancelled', 'ended by the test', 'Cancelled')],
];

describe("a submit's raw answer", () => {
  it.each(ENDS)('a waited end, %s: byte for byte the previous release answer', async (_name, end) => {
    const { raw } = await submit({ end });
    expect(raw).toBe(await previousReleaseAnswer(raw, 200, { wait: 10 }));
  });

  it('a wait that ends unfinished: 202 with the Running record, byte for byte', async () => {
    const { raw } = await submit({ wait: 1 });
    expect(raw.startsWith('HTTP/1.1 202 Accepted\r\n')).toBe(true);
    expect(raw).toContain('"status":"Running"');
    expect(raw).toBe(await previousReleaseAnswer(raw, 202, { wait: 1 }));
  });

  it('a replay of a finished waited run: idempotent-replayed among the same headers', async () => {
    const idempotencyKey = `reply-raw-${Date.now()}`;
    const first = await submit({ end: completed({ n: 1 }), idempotencyKey });
    expect(first.raw).toBe(await previousReleaseAnswer(first.raw, 200, { wait: 10 }));
    const again = await rawPost(JSON.stringify(run({ sessionId: 'reply-raw', code: 'return 1' })), {
      ...auth(key),
      prefer: 'wait=10',
      'idempotency-key': idempotencyKey,
    });
    expect(again).toBe(await previousReleaseAnswer(again, 200, { wait: 10, replayed: true }));
  });

  it('a submit that does not wait: 202, no preference-applied, byte for byte', async () => {
    const { raw } = await submit({ wait: 0 });
    expect(raw).toBe(await previousReleaseAnswer(raw, 202, {}));
  });
});

/** Stack traces of `JSON.stringify` calls, during `during`, given an object with its own `result` or `status`. */
async function recordStringifyStacks<T>(during: () => Promise<T>): Promise<{ out: T; stacks: string[] }> {
  const real = JSON.stringify;
  const stacks: string[] = [];
  JSON.stringify = ((value: unknown, ...rest: unknown[]) => {
    if (value && typeof value === 'object' && Object.hasOwn(value, 'status') && Object.hasOwn(value, 'calls'))
      stacks.push(new Error('stringify').stack ?? '');
    return (real as (...a: unknown[]) => string)(value, ...rest);
  }) as typeof JSON.stringify;
  try {
    return { out: await during(), stacks };
  } finally {
    JSON.stringify = real;
  }
}

describe("a submit's answer past fastify's serialization", () => {
  it("the record is stringified once, by the route, not by fastify's serializer", async () => {
    const { stacks } = await recordStringifyStacks(() => submit({ end: completed({ ok: true }) }));
    expect(stacks).toHaveLength(1);
    expect(stacks[0]).toContain('waited-reply.ts');
    expect(stacks[0]).not.toMatch(/preSerializationHook|\bserialize\b/);
  });

  it('the ended reply is not handed back as a thenable (no Reply.then a submit)', async () => {
    // fastify's Reply, the prototype every route's reply inherits `then` from (fastify's own module).
    const Reply = createRequire(import.meta.url)('fastify/lib/reply.js') as {
      prototype: { then: (...a: unknown[]) => unknown };
    };
    const then = vi.spyOn(Reply.prototype, 'then');
    try {
      const { raw } = await submit({ end: completed({ ok: true }) });
      expect(raw.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
      expect(then).not.toHaveBeenCalled();
    } finally {
      then.mockRestore();
    }
  });
});
