/**
 * `node test/bench/app-client-cpu.ts`: the gateway's App client alone, a hundred parallel POSTs at a
 * time (a hundred-call run's App requests) to a loopback App in a child process, kept-alive
 * connections, each way in turn (rounds interleaved `ROUNDS` times, `BATCHES` batches a way a
 * round): this thread's CPU a request (`process.threadCpuUsage`, user + system, µs).
 * - `postToApp`: the gateway's own (`app-http.ts`: undici `Agent.dispatch` with its handler);
 * - `pool`: the same handler on an undici `Pool` for the origin, no Agent in front;
 * - `node:http`: `http.request` on a keep-alive `Agent`, the body collected from the stream;
 * - `raw`: a bare socket writing the same request and reading a `Content-Length` answer, as the
 *   floor (what any client must spend on the sockets): not a client the gateway could use.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Pool } from 'undici';
import { postToApp } from '../../services/gateway/src/app-http.ts';
import { startLoopbackApp } from './loopback-app.ts';

const PARALLEL = Number(process.env.PARALLEL ?? 100);
const BATCHES = Number(process.env.BATCHES ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const { app, port, url } = await startLoopbackApp(60000);
const headers: Record<string, string> = {
  'content-type': 'application/json',
  'idempotency-key': 'run-1:0',
  'x-islet-tenant': 'bench',
  'x-islet-run': 'run-1',
  'x-islet-operation-id': '6f1c3c1e-0000-5000-8000-000000000000',
  'webhook-id': 'run-1:0',
  'webhook-timestamp': '1764900000',
  'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
};
const body = JSON.stringify({
  tool: 'ping',
  kind: 'tool',
  arguments: { i: 1 },
  context: {
    tenant: 'bench',
    run: 'run-1',
    session: 's',
    callIndex: 0,
    operationId: 'x',
    idempotencyKey: 'k',
  },
});
const options = { timeoutMs: 30_000, allowPrivate: true, maxResponseBytes: 1 << 20 };

const pool = new Pool(`http://127.0.0.1:${port}`);
const viaPool = () =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    pool.dispatch(
      { origin: `http://127.0.0.1:${port}`, path: '/', method: 'POST', headers, body },
      {
        onRequestStart() {},
        onResponseStart() {},
        onResponseData(_c, chunk) {
          chunks.push(chunk);
        },
        onResponseEnd() {
          resolve(Buffer.concat(chunks).toString('utf8'));
        },
        onResponseError(_c, err) {
          reject(err);
        },
      },
    );
  });

const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
const viaNodeHttp = () =>
  new Promise<string>((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent: httpAgent,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });

// The floor: one kept socket a request in flight, the request's bytes in one write, the answer read
// by its Content-Length (the loopback App always sends one).
const head =
  `POST / HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: keep-alive\r\n` +
  Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('') +
  `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
const idle: Socket[] = [];
const viaRaw = () =>
  new Promise<string>((resolve, reject) => {
    const socket = idle.pop() ?? connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let got: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      got = got.length ? Buffer.concat([got, chunk]) : chunk;
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /content-length: (\d+)/i.exec(got.subarray(0, end).toString('latin1'));
      const length = Number(m?.[1] ?? 0);
      if (got.length < end + 4 + length) return;
      socket.off('data', onData);
      socket.off('error', reject);
      idle.push(socket);
      resolve(got.subarray(end + 4, end + 4 + length).toString('utf8'));
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(head + body);
  });

const ways: [string, () => Promise<unknown>][] = [
  ['postToApp', () => postToApp(url, headers, body, options)],
  ['pool', viaPool],
  ['node:http', viaNodeHttp],
  ['raw', viaRaw],
];
const cpu: Record<string, number[]> = Object.fromEntries(ways.map(([w]) => [w, []]));
for (let round = 0; round <= ROUNDS; round++) {
  for (const [name, one] of ways) {
    const t0 = process.threadCpuUsage();
    for (let b = 0; b < BATCHES; b++) await Promise.all(Array.from({ length: PARALLEL }, one));
    const t = process.threadCpuUsage(t0);
    // Round 0 warms every way (connections opened, code compiled) and is not counted.
    if (round > 0) cpu[name]?.push((t.user + t.system) / BATCHES / PARALLEL);
  }
}
for (const [name] of ways)
  console.log(`${name.padEnd(10)} µs a request: ${(cpu[name] ?? []).map((v) => v.toFixed(1)).join(', ')}`);
await pool.close();
httpAgent.destroy();
for (const s of idle) s.destroy();
app.kill();
process.exit(0);
