import { createServer } from 'node:http';
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
});
