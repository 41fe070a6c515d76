/**
 * A turn's calls reach the gateway client in the synchronous step of the read that brought them
 * (gateway-client.ts gathers them with a microtask, not a tick, since round 41 `stdout-pair`): a real
 * sandbox host's `Promise.all` of 100 calls, through the engine and the replaying handler as the
 * run executor wires them, goes to the gateway as one batch; a program's calls one after another go
 * each alone. A stand-in gateway counts the requests.
 */
import { createServer } from 'node:http';
import { createEngine } from '@islet/engine';
import { createReplayingHandler } from '@islet/runs';
import { afterAll, describe, expect, it } from 'vitest';
import { createGatewayClient } from './gateway-client.ts';

const batches: number[][] = [];
const singles: number[] = [];
const server = createServer((req, res) => {
  let s = '';
  req.on('data', (c) => {
    s += c;
  });
  req.on('end', () => {
    const body = JSON.parse(s) as { index?: number; calls?: Array<{ index: number; argsJson: string }> };
    if (req.url?.endsWith('/call-batch')) {
      batches.push(body.calls!.map((c) => c.index));
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      const lines = body.calls!.map((c) =>
        JSON.stringify({ index: c.index, status: 200, outcome: { type: 'result', valueJson: c.argsJson } }),
      );
      res.end(`${lines.join('\n')}\n`);
      return;
    }
    singles.push(body.index!);
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ outcome: { type: 'result', valueJson: `{"i":${body.index}}` } }));
  });
});
const engine = createEngine({ prewarm: false });
afterAll(async () => {
  await engine.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe("a turn's calls gathered by their read", () => {
  it('100 parallel calls of a real host go as one batch, sequential ones each alone', async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const client = createGatewayClient({ urls: [url], token: 'tok', retryDelayMs: 5 });
    const run = (code: string) => {
      const replaying = createReplayingHandler({
        journal: [],
        live: (call) => client.call('run-1', 1, call),
      });
      return engine
        .execute(code, { bindings: ['t'], onCall: replaying.handler })
        .finally(() => replaying.close());
    };
    const par = await run(
      'const r = await Promise.all(Array.from({ length: 100 }, (_, i) => t({ i }))); return r.map((x) => x.i).join(",")',
    );
    expect(par.valueJson).toBe(JSON.stringify(Array.from({ length: 100 }, (_, i) => i).join(',')));
    expect(batches).toEqual([Array.from({ length: 100 }, (_, i) => i)]);
    expect(singles).toEqual([]);
    const seq = await run('let n = 0; for (let i = 0; i < 5; i++) n += (await t({ i })).i; return n');
    expect(seq.valueJson).toBe('10');
    expect(singles).toEqual([0, 1, 2, 3, 4]);
    expect(batches).toHaveLength(1);
  });
});
