/**
 * `node test/bench/gateway-client-cpu.ts`: the runner's side of a binding call's request to the
 * gateway, alone: the runner's real gateway client (`services/runner/src/gateway-client.ts`, its
 * default transport) against a stand-in gateway in another process that answers each call at once
 * as the gateway does (JSON for a lone call, NDJSON lines for a batch). Prints this process's CPU
 * per call (user + system, `process.cpuUsage`, µs) for `N` (default 3000) lone calls one after
 * another, and for `BATCHES` (default 30) batches of 100 calls, plus the wall per lone call. The
 * other process's CPU is not counted: what the client costs the runner is what is read.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createGatewayClient } from '../../services/runner/src/gateway-client.ts';

const N = Number(process.env.N ?? 3000);
const BATCHES = Number(process.env.BATCHES ?? 30);
const server = spawn(
  process.execPath,
  [
    '-e',
    `
const http = require('node:http');
const s = http.createServer((req, res) => {
  let b = '';
  req.setEncoding('utf8');
  req.on('data', (c) => { b += c; });
  req.on('end', () => {
    const body = JSON.parse(b);
    if (req.url.endsWith('/call-batch')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
      res.end(body.calls.map((c) => JSON.stringify({ index: c.index, status: 200, outcome: { type: 'result', valueJson: '{"ok":true}' }, deliverySeq: c.index })).join('\\n') + '\\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ outcome: { type: 'result', valueJson: '{"ok":true}' }, deliverySeq: body.index }));
  });
});
s.keepAliveTimeout = 72000;
s.listen(0, '127.0.0.1', () => console.log(s.address().port));
`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const [chunk] = (await once(server.stdout!, 'data')) as [Buffer];
const url = `http://127.0.0.1:${chunk.toString().trim()}`;
try {
  const client = createGatewayClient({ urls: [url], token: 'x'.repeat(24) });
  const call = (index: number) =>
    client.call('bench-run', 1, { index, binding: 'ping.ping', argsJson: '{"n":1}' });
  for (let i = 0; i < 300; i++) await call(i);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await call(i);
  const wall = performance.now() - t0;
  const cpu1 = process.cpuUsage(cpu0);
  const lone = (cpu1.user + cpu1.system) / N;
  for (let b = 0; b < 5; b++) await Promise.all(Array.from({ length: 100 }, (_, i) => call(i)));
  const cpu2 = process.cpuUsage();
  for (let b = 0; b < BATCHES; b++) await Promise.all(Array.from({ length: 100 }, (_, i) => call(i)));
  const cpu3 = process.cpuUsage(cpu2);
  const batched = (cpu3.user + cpu3.system) / (BATCHES * 100);
  console.log(
    `lone calls: ${N}, client CPU ${lone.toFixed(1)} µs a call, wall ${((wall * 1000) / N).toFixed(1)} µs a call; ` +
      `batched (100 a batch): ${BATCHES * 100}, client CPU ${batched.toFixed(1)} µs a call`,
  );
} finally {
  server.kill();
}
process.exit(0);
