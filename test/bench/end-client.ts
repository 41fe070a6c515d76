/**
 * The client's own part of the end's stage ("end sent → … → response received"): a one-client
 * cluster as the cluster bench sets it up (`startOneClientCluster`, the fair share at the
 * default 0.5 unless BENCH_TENANT_SHARE), `WARM` runs, then `RUNS` runs one after another over the
 * bench's own client (`leanPost`: Node's http client, keep-alive, `JSON.parse` of the answer),
 * each stamped in this process on core's `wallNow` (the clock of the runner's `endSent`):
 *
 *   endSent (runner) → the response's first bytes handed to the socket's `data` listeners (this
 *   process) → http's `response` callback → the response's `end` → `JSON.parse` done → the
 *   awaiting code resumed (the stamp the benches call "received").
 *
 * So the stage splits into the server's side (to the bytes here) and the client's (from them).
 * `CLIENT=raw` sends the same request over a bare `net` socket and takes the answer when its
 * `Content-Length` bytes are in (then `JSON.parse`): what a client without Node's http costs.
 *
 *   RUNS=1000 node test/bench/end-client.ts
 */
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { createRedis, keys } from '@islet/core';
import { TRIVIAL_RUN_BODY } from './baselines.ts';
import { benchNow } from './bench-clock.ts';
import { startOneClientCluster } from './cluster-figures.ts';
import { stampsOf } from './stages.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const WARM = Number(process.env.WARM ?? 300);
const RAW = process.env.CLIENT === 'raw';
const now = benchNow;

interface Stamps {
  sent: number;
  data: number;
  response: number;
  end: number;
  parsed: number;
  received: number;
  id: string;
}

const cluster = await startOneClientCluster('0.5', JSON.parse(process.env.BENCH_ENV ?? '{}'));
const redis = createRedis(cluster.redisUrl);
const url = new URL(`${cluster.url}/v1/runs`);
const body = JSON.stringify(TRIVIAL_RUN_BODY);

/** The bench's `leanPost`, stamped at each step. */
function httpClient(): () => Promise<Stamps> {
  const agent = new Agent({ keepAlive: true });
  const hooked = new WeakSet<Socket>();
  let data = 0;
  return () =>
    new Promise((resolve, reject) => {
      const sent = now();
      data = 0;
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${cluster.devKey}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            prefer: 'wait=30',
          },
        },
        (res) => {
          const response = now();
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const end = now();
            try {
              const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
              const p = now();
              resolve({ sent, data, response, end, parsed: p, received: 0, id: parsed.id });
            } catch (e) {
              reject(e);
            }
          });
          res.on('error', reject);
        },
      );
      req.on('socket', (s: Socket) => {
        if (hooked.has(s)) return;
        hooked.add(s);
        // Before http's own listener: the moment the bytes reach JavaScript.
        s.prependListener('data', () => {
          if (!data) data = now();
        });
      });
      req.on('error', reject);
      req.end(body);
    });
}

/** The same request over a bare socket; the answer taken at its Content-Length. */
async function rawClient(): Promise<() => Promise<Stamps>> {
  const socket = connect(Number(url.port), url.hostname);
  socket.setNoDelay(true);
  await new Promise((r) => socket.once('connect', r));
  const head =
    `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${cluster.devKey}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nPrefer: wait=30\r\n` +
    'Connection: keep-alive\r\n\r\n';
  const request = Buffer.from(head + body);
  return () =>
    new Promise((resolve, reject) => {
      const sent = now();
      let data = 0;
      let got: Buffer = Buffer.alloc(0);
      const onData = (c: Buffer) => {
        if (!data) data = now();
        got = got.length ? Buffer.concat([got, c]) : c;
        const split = got.indexOf('\r\n\r\n');
        if (split < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(got.subarray(0, split).toString('latin1'))?.[1]);
        if (got.length < split + 4 + length) return;
        socket.off('data', onData);
        const end = now();
        try {
          const parsed = JSON.parse(got.subarray(split + 4, split + 4 + length).toString('utf8')) as {
            id: string;
          };
          const p = now();
          resolve({ sent, data, response: end, end, parsed: p, received: 0, id: parsed.id });
        } catch (e) {
          reject(e);
        }
      };
      socket.on('data', onData);
      socket.write(request);
    });
}

try {
  const post = RAW ? await rawClient() : httpClient();
  const once = async () => {
    const s = await post();
    s.received = now();
    return s;
  };
  for (let i = 0; i < WARM; i++) await once();
  const runs: Stamps[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once());
  const rows: number[][] = [];
  for (const r of runs) {
    const t = stampsOf(await redis.hget(keys.run(r.id), 'timings'));
    if (t.endSent === undefined) continue;
    rows.push([
      r.data - t.endSent,
      r.response - r.data,
      r.end - r.response,
      r.parsed - r.end,
      r.received - r.parsed,
      r.received - r.data,
      r.received - t.endSent,
      r.received - r.sent,
    ]);
  }
  const names = [
    'endSent → first bytes at the client',
    'bytes → http response callback',
    'response callback → end',
    'end → JSON.parse done',
    'parsed → awaiting code resumed',
    'client: bytes → resumed',
    'end sent → response received (the row)',
    'one client, send → received',
  ];
  const p = (v: number[], q: number) => [...v].sort((a, b) => a - b)[Math.floor(v.length * q)] ?? Number.NaN;
  console.log(
    `client ${RAW ? 'raw net socket' : "node http (the bench's leanPost)"}, ${rows.length} runs; ms`,
  );
  for (const [k, n] of names.entries()) {
    const v = rows.map((r) => r[k]!);
    const mean = v.reduce((a, b) => a + b, 0) / v.length;
    console.log(
      `  ${n.padEnd(42)} p50 ${p(v, 0.5).toFixed(3)}  p25 ${p(v, 0.25).toFixed(3)}  mean ${mean.toFixed(3)}`,
    );
  }
} finally {
  redis.disconnect();
  await cluster.stop();
}
