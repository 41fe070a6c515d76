/**
 * The runner's default transports to the gateway (gateway-client.ts): a lone call on a kept-alive
 * socket of its own (gateway-post.ts, README round 36 call-hops), a batch through undici's
 * `dispatch` with a handler of its own; neither through node:http's `ClientRequest` with its
 * response stream and abort listener (README round 28, call-seq). Seen through the diagnostics
 * channels each client publishes on.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayClient } from './gateway-client.ts';

let url: string;
let held: (() => void) | undefined;
const paths: string[] = [];
const server = createServer((req, res) => {
  paths.push(req.url ?? '');
  let s = '';
  req.on('data', (c) => {
    s += c;
  });
  req.on('end', () => {
    const body = JSON.parse(s) as { index?: number; calls?: Array<{ index: number }> };
    if (req.url?.endsWith('/call-batch')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      // One line split across two writes: a line is taken whole.
      const lines = body.calls!.map((c) =>
        JSON.stringify({ index: c.index, status: 200, outcome: { type: 'result', valueJson: `${c.index}` } }),
      );
      const text = `${lines.join('\n')}\n`;
      res.write(text.slice(0, 7));
      setTimeout(() => res.end(text.slice(7)), 5);
      return;
    }
    if (body.index === 7) {
      held = () => res.end('{}');
      return;
    }
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(
        JSON.stringify({ outcome: { type: 'result', valueJson: `${body.index}` }, deliverySeq: body.index }),
      );
  });
});

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  held?.();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('gateway client transport', () => {
  it("lone calls go on the runner's own socket, a batch through undici, none through a node:http ClientRequest", async () => {
    const counts = { nodeHttp: 0, undici: 0 };
    const onNodeHttp = () => counts.nodeHttp++;
    const onUndici = () => counts.undici++;
    subscribe('http.client.request.start', onNodeHttp);
    subscribe('undici:request:create', onUndici);
    try {
      const client = createGatewayClient({ urls: [url], token: 'tok', retryDelayMs: 5 });
      for (let index = 0; index < 5; index++) {
        const got = await client.call('run-1', 1, { index, binding: 'a.b', argsJson: '{}' });
        expect(got).toEqual({ outcome: { type: 'result', valueJson: `${index}` }, deliverySeq: index });
      }
      const together = await Promise.all(
        [10, 11, 12].map((index) => client.call('run-1', 1, { index, binding: 'a.b', argsJson: '{}' })),
      );
      expect(together.map((t) => t.outcome)).toEqual(
        [10, 11, 12].map((i) => ({ type: 'result', valueJson: `${i}` })),
      );
      expect(counts).toEqual({ nodeHttp: 0, undici: 1 });
    } finally {
      unsubscribe('http.client.request.start', onNodeHttp);
      unsubscribe('undici:request:create', onUndici);
    }
  });

  it('a call still unanswered when its signal aborts ends as stopped', async () => {
    const client = createGatewayClient({ urls: [url], token: 'tok', retryDelayMs: 5, batch: false });
    const ac = new AbortController();
    const pending = client.call('run-1', 1, { index: 7, binding: 'a.b', argsJson: '{}' }, ac.signal);
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    expect((await pending).outcome).toEqual({
      type: 'stop',
      code: 'cancelled',
      message: 'the run was stopped',
    });
  });

  it("each call goes to its own run's path, its id encoded; a run's calls reuse their parsed URL", async () => {
    const client = createGatewayClient({ urls: [url], token: 'tok', retryDelayMs: 5, batch: false });
    paths.length = 0;
    for (const runId of ['run-a', 'run b/../x', 'run-a', 'run-c', 'run b/../x'])
      expect((await client.call(runId, 1, { index: 1, binding: 'a.b', argsJson: '{}' })).outcome).toEqual({
        type: 'result',
        valueJson: '1',
      });
    expect(paths).toEqual([
      '/internal/v1/code-runs/run-a/calls',
      '/internal/v1/code-runs/run%20b%2F..%2Fx/calls',
      '/internal/v1/code-runs/run-a/calls',
      '/internal/v1/code-runs/run-c/calls',
      '/internal/v1/code-runs/run%20b%2F..%2Fx/calls',
    ]);
    // An unusable gateway URL fails its call (after its tries), as before, not the client.
    const bad = createGatewayClient({ urls: ['not a url'], token: 'tok', retryDelayMs: 1, maxTries: 2 });
    const failed = await bad.call('run-a', 1, { index: 1, binding: 'a.b', argsJson: '{}' });
    expect(failed.outcome).toMatchObject({ type: 'error', details: { reason: 'gateway-unreachable' } });
  });
});
