/**
 * `npm run bench:cluster`: what the cluster path costs over the engine alone, on this machine.
 * Measures, in one invocation: the engine in-process (trivial runs/s, latency, binding-call cost)
 * and the local cluster over HTTP (1 gateway, 1 read-only runner, concurrency 4; submit with
 * `Prefer: wait` to the finished record), then prints both and their ratios. Target: under ~90 s.
 */
import { createServer } from 'node:http';
import { startCluster } from '@islet/devstack';
import { createEngine } from '@islet/engine';
import { api } from '../e2e/helpers.ts';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const ms = (n: number) => `${n.toFixed(2)} ms`;
const CALLS = 20;

async function timed<T>(fn: () => Promise<T>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function pool(total: number, concurrency: number, job: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await job(next++);
    }),
  );
}

async function benchEngine() {
  const engine = createEngine();
  try {
    for (let i = 0; i < 10; i++) await engine.execute('return 1');
    const lat: number[] = [];
    for (let i = 0; i < 100; i++) lat.push(await timed(() => engine.execute('return 1')));
    const n = 200;
    const t0 = performance.now();
    await pool(n, 4, async () => {
      await engine.execute('return 1');
    });
    const runsPerSec = n / ((performance.now() - t0) / 1000);
    const onCall = async () => ({ type: 'result' as const, valueJson: '{"ok":true}' });
    const code = `for (let i = 0; i < ${CALLS}; i++) await apps.bench.ping({ i }); return 1`;
    const withCalls: number[] = [];
    for (let i = 0; i < 30; i++)
      withCalls.push(await timed(() => engine.execute(code, { bindings: ['bench.ping'], onCall })));
    const callMs = (pct(withCalls, 50) - pct(lat, 50)) / CALLS;
    return { p50: pct(lat, 50), p99: pct(lat, 99), runsPerSec, callMs };
  } finally {
    await engine.close();
  }
}

async function benchCluster() {
  const app = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appPort = (app.address() as { port: number }).port;
  const cluster = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'], concurrency: 4 }] });
  const a = api(cluster.url, cluster.devKey);
  const submit = async (code: string, connections: string[] = []) => {
    const res = await a(
      'POST',
      '/v1/runs',
      {
        code,
        description: 'Benchmark a trivial program',
        sessionId: 'bench',
        turnId: 't',
        callId: 'c',
        connections,
      },
      { prefer: 'wait=30' },
    );
    if (res.body?.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(res.body)}`);
  };
  try {
    const conn = (
      await a('POST', '/v1/connections', {
        name: 'Bench',
        kind: 'http',
        url: `http://127.0.0.1:${appPort}/`,
        tools: [{ name: 'ping' }],
      })
    ).body as { id: string };
    for (let i = 0; i < 10; i++) await submit('return 1');
    const lat: number[] = [];
    for (let i = 0; i < 60; i++) lat.push(await timed(() => submit('return 1')));
    const n = 200;
    const t0 = performance.now();
    await pool(n, 16, () => submit('return 1'));
    const runsPerSec = n / ((performance.now() - t0) / 1000);
    const code = `for (let i = 0; i < ${CALLS}; i++) await apps.bench.ping({ i }); return 1`;
    const withCalls: number[] = [];
    for (let i = 0; i < 20; i++) withCalls.push(await timed(() => submit(code, [conn.id])));
    const callMs = (pct(withCalls, 50) - pct(lat, 50)) / CALLS;
    return { p50: pct(lat, 50), p99: pct(lat, 99), runsPerSec, callMs };
  } finally {
    await cluster.stop();
    app.close();
  }
}

const started = performance.now();
const engine = await benchEngine();
const cluster = await benchCluster();
const row = (name: string, e: string, c: string, ratio: string) =>
  `${name.padEnd(34)}${e.padStart(14)}${c.padStart(14)}${ratio.padStart(12)}`;
console.log(`\nIslet cluster bench (node ${process.version}, ${new Date().toISOString()})`);
console.log(row('', 'engine', 'cluster', 'cluster/eng'));
console.log(
  row(
    'trivial runs/s (4 slots)',
    engine.runsPerSec.toFixed(1),
    cluster.runsPerSec.toFixed(1),
    `${(cluster.runsPerSec / engine.runsPerSec).toFixed(2)}x`,
  ),
);
console.log(
  row(
    'latency p50 (submit→result)',
    ms(engine.p50),
    ms(cluster.p50),
    `${(cluster.p50 / engine.p50).toFixed(1)}x`,
  ),
);
console.log(row('latency p99', ms(engine.p99), ms(cluster.p99), `${(cluster.p99 / engine.p99).toFixed(1)}x`));
console.log(
  row(
    'binding call round trip',
    ms(engine.callMs),
    ms(cluster.callMs),
    `${(cluster.callMs / engine.callMs).toFixed(1)}x`,
  ),
);
console.log(
  `(engine: in-process execute(); cluster: HTTP submit with Prefer: wait → gateway → BullMQ → runner → engine → record; binding call: runner → gateway → journal → local App → journal → runner, ${CALLS} sequential calls)`,
);
console.log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exit(0);
