import { createServer, type ServerResponse } from 'node:http';
import type { RunOutcome } from '@islet/engine';
import { freePort } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { createGatewayClient } from './gateway-client.ts';
import { mapOutcome } from './outcome-mapping.ts';

describe('gateway client', () => {
  it('retries an unreachable gateway on the next one with takeover, and keeps 4xx final', async () => {
    const bodies: Array<Record<string, unknown>> = [];
    const server = createServer((req, res) => {
      let s = '';
      req.on('data', (c) => {
        s += c;
      });
      req.on('end', () => {
        const body = JSON.parse(s) as Record<string, unknown>;
        bodies.push({ ...body, auth: req.headers.authorization });
        if (body.index === 9)
          return res.writeHead(404).end('{"type":"https://islet.dev/problems/not-found"}');
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ outcome: { type: 'result', valueJson: '{"ok":1}' }, deliverySeq: 4 }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const live = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const dead = `http://127.0.0.1:${await freePort()}`;
    const client = createGatewayClient({ urls: [dead, live], token: 'tok', retryDelayMs: 5 });
    const got = await client.call('run-1', 2, { index: 0, binding: 'a.b', argsJson: '{}' });
    expect(got).toEqual({ outcome: { type: 'result', valueJson: '{"ok":1}' }, deliverySeq: 4 });
    expect(bodies[0]).toMatchObject({
      attempt: 2,
      index: 0,
      binding: 'a.b',
      takeover: true,
      auth: 'Bearer tok',
    });
    const refused = await client.call('run-1', 2, { index: 9, binding: 'a.b', argsJson: '{}' });
    expect(refused.outcome).toMatchObject({
      type: 'error',
      name: 'AppCallFailed',
      details: { reason: 'gateway-refused' },
    });
    const none = createGatewayClient({ urls: [dead], token: 't', retryDelayMs: 1, maxTries: 2 });
    expect((await none.call('r', 1, { index: 0, binding: 'a.b', argsJson: '{}' })).outcome).toMatchObject({
      name: 'AppCallFailed',
      details: { reason: 'gateway-unreachable' },
    });
    server.close();
  });
});

describe('gateway client batches', () => {
  /** A gateway: `call-batch` answers NDJSON lines through `onBatch`; single calls are recorded and answered. */
  async function gateway(onBatch?: (calls: Array<{ index: number }>, res: ServerResponse) => void) {
    const batches: Array<Array<{ index: number }>> = [];
    const singles: Array<Record<string, unknown>> = [];
    const server = createServer((req, res) => {
      let s = '';
      req.on('data', (c) => {
        s += c;
      });
      req.on('end', () => {
        const body = JSON.parse(s) as { calls?: Array<{ index: number }> } & Record<string, unknown>;
        if (req.url?.endsWith('/call-batch')) {
          if (!onBatch) return res.writeHead(404).end('{"type":"https://islet.dev/problems/not-found"}');
          batches.push(body.calls!);
          res.writeHead(200, { 'content-type': 'application/x-ndjson' });
          return onBatch(body.calls!, res);
        }
        singles.push(body);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ outcome: { type: 'result', valueJson: `"single ${body.index}"` } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      batches,
      singles,
      server,
    };
  }
  const line = (index: number, extra: Record<string, unknown>) => `${JSON.stringify({ index, ...extra })}\n`;
  const result = (v: string) => ({ status: 200, outcome: { type: 'result', valueJson: JSON.stringify(v) } });

  it("sends a program's lone calls one after another on one kept-alive connection", async () => {
    const gw = await gateway();
    let connections = 0;
    gw.server.on('connection', () => connections++);
    try {
      const client = createGatewayClient({ urls: [gw.url], token: 'tok', retryDelayMs: 5 });
      for (let index = 0; index < 5; index++) {
        const got = await client.call('run-1', 1, { index, binding: 'a.b', argsJson: '{}' });
        expect(got.outcome).toEqual({ type: 'result', valueJson: `"single ${index}"` });
      }
      expect(gw.singles.map((b) => b.index)).toEqual([0, 1, 2, 3, 4]);
      // Kept alive, one socket: the lone call's transport (gateway-post.ts) takes back a socket as
      // its answer ends. (Through undici, which reuses a socket that just answered only a loop turn
      // later, GHSA-35p6-xmwp-9g52, one call after another alternated between two.)
      expect(connections).toBe(1);
    } finally {
      gw.server.closeAllConnections();
      await new Promise((r) => gw.server.close(r));
    }
  });

  it('a lone call is sent with no tick; calls reaching the client in promise jobs of one drain still go as one batch', async () => {
    const gw = await gateway((calls, res) =>
      res.end(calls.map((c) => line(c.index, result(`b${c.index}`))).join('')),
    );
    try {
      const client = createGatewayClient({ urls: [gw.url], token: 'tok', retryDelayMs: 5 });
      const call = (index: number) => client.call('run-1', 1, { index, binding: 'a.b', argsJson: '{}' });
      // What the client does in the call itself: no process.nextTick to gather a turn's calls
      // (round 41 `stdout-pair`: a microtask ends the read's step instead).
      const nextTick = process.nextTick;
      let ticks = 0;
      process.nextTick = (...args: Parameters<typeof nextTick>) => {
        ticks++;
        return nextTick(...args);
      };
      let lone: ReturnType<typeof call>;
      try {
        lone = call(0);
      } finally {
        process.nextTick = nextTick;
      }
      expect(ticks).toBe(0);
      expect((await lone).outcome).toEqual({ type: 'result', valueJson: '"single 0"' });
      // A Promise.all's calls each one promise job deep (as the engine's held calls are started).
      const jobs = await Promise.all([1, 2, 3].map((i) => Promise.resolve().then(() => call(i))));
      expect(jobs.map((j) => j.outcome)).toEqual(
        [1, 2, 3].map((i) => ({ type: 'result', valueJson: `"b${i}"` })),
      );
      expect(gw.batches.map((b) => b.map((c) => c.index))).toEqual([[1, 2, 3]]);
      expect(gw.singles.map((b) => b.index)).toEqual([0]);
    } finally {
      gw.server.closeAllConnections();
      await new Promise((r) => gw.server.close(r));
    }
  });

  it('sends the calls of one turn as one batch and settles each from its own line, in any order', async () => {
    const gw = await gateway((calls, res) => {
      // Out of order, in two writes: call 2 first, then 0 (with its delivery sequence) and 1 refused.
      res.write(line(2, result('two')));
      setTimeout(() => {
        res.write(line(0, { ...result('zero'), deliverySeq: 7 }));
        res.end(line(1, { status: 404, problem: { type: 'https://islet.dev/problems/not-found' } }));
      }, 50);
      expect(calls.map((c) => c.index)).toEqual([0, 1, 2]);
    });
    const client = createGatewayClient({ urls: [gw.url], token: 'tok', retryDelayMs: 5 });
    const call = (index: number) => client.call('run-1', 1, { index, binding: 'a.b', argsJson: '{}' });
    const order: number[] = [];
    const answers = await Promise.all(
      [0, 1, 2].map((i) =>
        call(i).then((a) => {
          order.push(i);
          return a;
        }),
      ),
    );
    expect(gw.batches).toHaveLength(1);
    expect(gw.singles).toHaveLength(0);
    // Call 2's line came first and was not held back for the others (Promise.race sees it first).
    expect(order[0]).toBe(2);
    expect(answers[0]).toEqual({ outcome: { type: 'result', valueJson: '"zero"' }, deliverySeq: 7 });
    expect(answers[1]?.outcome).toMatchObject({
      name: 'AppCallFailed',
      details: { reason: 'gateway-refused' },
    });
    expect(answers[2]).toEqual({ outcome: { type: 'result', valueJson: '"two"' } });
    gw.server.close();
  });

  it('retries a call answered 5xx, or left unanswered by a batch cut mid-way, alone on the next gateway as a takeover', async () => {
    const cut = await gateway((_calls, res) => {
      // A line that is not JSON is ignored (it must not throw in the socket's data handler).
      res.write('not json\n');
      res.write(line(0, result('zero')));
      res.write(line(1, { status: 503, problem: { type: 'https://islet.dev/problems/unavailable' } }));
      // Calls 2 and 3 never get a line: the gateway dies.
      setTimeout(() => res.socket?.destroy(), 30);
    });
    const other = await gateway();
    const client = createGatewayClient({ urls: [cut.url, other.url], token: 'tok', retryDelayMs: 5 });
    const answers = await Promise.all(
      [0, 1, 2, 3].map((index) => client.call('run-1', 2, { index, binding: 'a.b', argsJson: '{}' })),
    );
    expect(answers[0]).toEqual({ outcome: { type: 'result', valueJson: '"zero"' } });
    for (const i of [1, 2, 3])
      expect(answers[i]).toEqual({ outcome: { type: 'result', valueJson: `"single ${i}"` } });
    // Round-robin: the retries are spread over both gateways, each alone and a takeover.
    expect([...cut.singles, ...other.singles].map((b) => [b.index, b.takeover, b.attempt]).sort()).toEqual([
      [1, true, 2],
      [2, true, 2],
      [3, true, 2],
    ]);
    cut.server.close();
    other.server.close();
  });

  it('a gateway without the batch route gets each call alone, first try (no takeover)', async () => {
    const old = await gateway();
    const client = createGatewayClient({ urls: [old.url], token: 'tok', retryDelayMs: 5 });
    const answers = await Promise.all(
      [0, 1].map((index) => client.call('run-1', 1, { index, binding: 'a.b', argsJson: '{}' })),
    );
    expect(answers.map((a) => a.outcome)).toEqual([
      { type: 'result', valueJson: '"single 0"' },
      { type: 'result', valueJson: '"single 1"' },
    ]);
    expect(old.singles.map((b) => b.takeover)).toEqual([undefined, undefined]);
    old.server.close();
  });

  it('a stopped run settles its batched calls as stopped', async () => {
    const slow = await gateway(() => undefined);
    const client = createGatewayClient({ urls: [slow.url], token: 'tok', retryDelayMs: 5 });
    const ac = new AbortController();
    const pending = [0, 1].map((index) =>
      client.call('run-1', 1, { index, binding: 'a.b', argsJson: '{}' }, ac.signal),
    );
    setTimeout(() => ac.abort(), 50);
    for (const a of await Promise.all(pending))
      expect(a.outcome).toMatchObject({ type: 'stop', code: 'cancelled' });
    slow.server.closeAllConnections();
    slow.server.close();
  });
});

describe('outcome mapping', () => {
  const base: RunOutcome = {
    status: 'completed',
    logs: [],
    outputTruncated: false,
    calls: [],
    durationMs: 1,
  };
  it('maps kinds to Code Mode statuses and reasons', () => {
    expect(mapOutcome({ ...base, valueJson: '"x"' })).toMatchObject({
      kind: 'final',
      status: 'Completed',
      result: { value: 'x' },
      text: 'x',
    });
    const cases: Array<[RunOutcome['failure'], string, string]> = [
      [{ kind: 'exception', message: 'm' }, 'Failed', 'Error'],
      [{ kind: 'timeout', message: 'm' }, 'Failed', 'Timeout'],
      [{ kind: 'abort', message: 'm' }, 'Cancelled', 'Cancelled'],
      [{ kind: 'worker-exit', message: 'm', cause: 'memory' }, 'Failed', 'Memory'],
      [{ kind: 'worker-exit', message: 'm' }, 'Failed', 'Unavailable'],
      [{ kind: 'output-limit', message: 'm' }, 'Failed', 'OutputTooLarge'],
      [{ kind: 'sandbox-unavailable', message: 'm' }, 'Failed', 'Unavailable'],
      [{ kind: 'invalid-output', message: 'm' }, 'Failed', 'Error'],
      [{ kind: 'protocol', message: 'm' }, 'Failed', 'Error'],
    ];
    for (const [failure, status, reason] of cases) {
      const m = mapOutcome({ ...base, status: 'failed', ...(failure ? { failure } : {}) });
      expect(m, failure?.kind).toMatchObject({
        kind: 'final',
        status,
        result: { _tag: 'Failed', reason, kind: failure?.kind },
      });
    }
    expect(
      mapOutcome({ ...base, status: 'stopped', stop: { code: 'suspended', message: 'm', atCall: 0 } }),
    ).toEqual({ kind: 'suspended' });
    expect(
      mapOutcome({ ...base, status: 'stopped', stop: { code: 'replay-mismatch', message: 'm', atCall: 1 } }),
    ).toMatchObject({
      kind: 'final',
      status: 'Failed',
      result: { reason: 'ReplayMismatch' },
      text: 'code run failed (ReplayMismatch): m',
    });
    expect(
      mapOutcome({ ...base, status: 'stopped', stop: { code: 'cancelled', message: 'm', atCall: 1 } }),
    ).toMatchObject({
      kind: 'cancelled',
      result: { reason: 'Cancelled' },
    });
  });

  it('builds failure records with the one builder, field for field and in order', () => {
    const printed: RunOutcome = { ...base, logs: [{ level: 'log', text: 'hi' }] };
    const thrown = mapOutcome({
      ...printed,
      status: 'failed',
      failure: { kind: 'exception', message: 'boom', detail: 'd', line: 3, column: 7, stack: 'Error: boom' },
    });
    expect(JSON.stringify(thrown)).toBe(
      JSON.stringify({
        kind: 'final',
        status: 'Failed',
        result: {
          _tag: 'Failed',
          reason: 'Error',
          kind: 'exception',
          message: 'boom',
          logs: [{ level: 'log', text: 'hi' }],
          detail: 'd',
          line: 3,
          column: 7,
          stack: 'Error: boom',
        },
        text: 'code run failed (exception): boom\n\nCaptured output:\nhi',
        failureKind: 'exception',
      }),
    );
    // A line without a column is not a place.
    const noColumn = mapOutcome({
      ...printed,
      status: 'failed',
      failure: { kind: 'exception', message: 'x', line: 3 },
    });
    expect(noColumn.kind === 'final' && noColumn.result).not.toHaveProperty('line');
    const mismatch = mapOutcome({
      ...printed,
      status: 'stopped',
      stop: { code: 'replay-mismatch', message: 'mm', atCall: 1 },
    });
    expect(JSON.stringify(mismatch)).toBe(
      JSON.stringify({
        kind: 'final',
        status: 'Failed',
        result: {
          _tag: 'Failed',
          reason: 'ReplayMismatch',
          message: 'mm',
          logs: [{ level: 'log', text: 'hi' }],
        },
        text: 'code run failed (ReplayMismatch): mm\n\nCaptured output:\nhi',
        failureKind: 'abort',
      }),
    );
    const cancelled = mapOutcome({
      ...printed,
      status: 'stopped',
      stop: { code: 'cancelled', message: 'cc', atCall: 1 },
    });
    expect(JSON.stringify(cancelled)).toBe(
      JSON.stringify({
        kind: 'cancelled',
        result: {
          _tag: 'Failed',
          reason: 'Cancelled',
          kind: 'abort',
          message: 'cc',
          logs: [{ level: 'log', text: 'hi' }],
        },
        text: 'code run failed (abort): cc\n\nCaptured output:\nhi',
      }),
    );
  });
});
