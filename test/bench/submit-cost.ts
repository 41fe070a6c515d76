/**
 * `node test/bench/submit-cost.ts`: the gateway's CPU per `POST /v1/runs`, in its own process: the
 * real app (`createGatewayDeps` + `buildApp`) against a redis-server of its own, the admission
 * script and BullMQ's add real, no runner (the runs stay queued, so the answer is the 202 with the
 * record; a `Prefer: wait` run's head is the same up to its one write). The client is another
 * process (`HTTP=1`, the default: real HTTP on loopback, keep-alive) or `inject()` (`HTTP=0`: no
 * socket, light-my-request's own CPU counted). `N` submits (default 2000) a round after `WARM`
 * (default 2000) to warm up, `ROUNDS` rounds (default 7), `CLIENTS` concurrent (default 1); prints
 * each round's µs of this process's CPU per submit (`process.cpuUsage`: user + system, every
 * thread) and wall per submit, and their medians. Compare heads with `ab.sh`, which swaps
 * `services/` under this file. `PROFILE=<file>` writes a `.cpuprofile` of the measured rounds
 * (`node test/bench/profile-summary.ts <file>` reads it).
 *
 * `PAIRS=1`: instead, the submit's pieces this round cut, before and after alternated round by round
 * in this process (no Redis): µs per op hot (`N` × `ROUNDS`, median), and p50 of one op each 2 ms
 * (caches cold between ops, as a sequential client's submits find them).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { createLogger, generateSealKey, hashApiKey, loadConfig } from '@islet/core';
import { runJobOptions } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import Fastify from 'fastify';
import { buildApp } from '../../services/gateway/src/app.ts';
import { createGatewayDeps } from '../../services/gateway/src/create-deps.ts';
import { runAdds } from '../../services/gateway/src/run-add-store.ts';
import { ADMIT_AND_CREATE } from '../../services/runs/src/run-store-scripts.ts';
import { PROGRAM } from './baselines.ts';

const N = Number(process.env.N ?? 2000);
const WARM = Number(process.env.WARM ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const CLIENTS = Number(process.env.CLIENTS ?? 1);
const HTTP = process.env.HTTP !== '0';
const PROFILE = process.env.PROFILE;

/** The body every per-run bench sends (cluster-figures.ts `trivialRun`). */
const BODY = JSON.stringify({
  code: PROGRAM,
  description: 'Measure a trivial program',
  sessionId: 'bench',
  turnId: 't',
  callId: 'c',
  connections: [],
});

/** The client, run in a child process so its CPU is not the gateway's: `<n> <clients>` → `done`. */
const CLIENT = `
const http = require('node:http');
const [url, key, body] = process.argv.slice(1);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const headers = { authorization: 'Bearer ' + key, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
const post = () => new Promise((resolve, reject) => {
  const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
    res.resume();
    res.on('end', () => (res.statusCode === 202 ? resolve() : reject(new Error('status ' + res.statusCode))));
  });
  req.on('error', reject);
  req.end(body);
});
async function batch(n, clients) {
  let left = n;
  await Promise.all(Array.from({ length: clients }, async () => { while (left-- > 0) await post(); }));
}
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  for (let i; (i = buf.indexOf('\\n')) >= 0; ) {
    const [n, c] = buf.slice(0, i).split(' ').map(Number);
    buf = buf.slice(i + 1);
    batch(n, c).then(() => process.stdout.write('done\\n'), (e) => { console.error(e); process.exit(1); });
  }
});
`;

type Op = () => unknown;

/** Before and after alternated round by round; then one op each 2 ms, p50 (caches gone cold). */
async function pair(name: string, before: Op, after: Op): Promise<void> {
  const hot: [number[], number[]] = [[], []];
  for (let i = 0; i < N; i++) {
    await before();
    await after();
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const [side, op] of [before, after].entries()) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < N; i++) await op();
      hot[side]?.push(Number(process.hrtime.bigint() - t0) / 1000 / N);
    }
  }
  const spaced: [number[], number[]] = [[], []];
  for (let i = 0; i < 200; i++) {
    for (const [side, op] of [before, after].entries()) {
      await new Promise((r) => setTimeout(r, 2));
      const t0 = process.hrtime.bigint();
      await op();
      spaced[side]?.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
  }
  const median = (xs: number[] = []) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  console.log(
    `${name.padEnd(44)} hot ${median(hot[0]).toFixed(2)} -> ${median(hot[1]).toFixed(2)} µs; one each 2 ms ${median(spaced[0]).toFixed(1)} -> ${median(spaced[1]).toFixed(1)} µs`,
  );
}

if (process.env.PAIRS === '1') {
  console.log(`load ${loadavg()[0]?.toFixed(2)}, N ${N}, median of ${ROUNDS}; before -> after`);
  const key = `isk_${randomBytes(24).toString('base64url')}`;
  let sink: unknown;
  await pair(
    'API key hash (createHash -> crypto.hash)',
    () => {
      sink = createHash('sha256').update(key).digest('hex');
    },
    () => {
      sink = hashApiKey(key);
    },
  );
  // The add's building, the script call answered at once: what the submit's CPU pays before its write.
  const queue = new Queue('bench', { connection: { lazyConnect: true }, prefix: 'islet' });
  queue.on('error', () => undefined);
  const scripts = (queue as unknown as { scripts: { execCommand: (...a: unknown[]) => Promise<unknown> } })
    .scripts;
  scripts.execCommand = async (_c, _n, args) => (args as unknown[])[1];
  Object.defineProperty(queue, 'client', { value: Promise.resolve({}) });
  const add = runAdds(queue);
  const data = () => ({ runId: randomUUID(), tenant: 'bench', enqueuedAtMs: Date.now() });
  await pair(
    "a run's BullMQ add (Queue.add -> run-add-store)",
    () => queue.add('run', data(), runJobOptions(randomUUID(), 3)),
    () => add('run', data(), runJobOptions(randomUUID(), 3)),
  );
  // The admission's EVAL as ioredis writes it (RESP text, then UTF-8 into the socket's writev),
  // its source as read from its files (a two-byte string) against the one-byte copy LuaScript holds.
  const args = Array.from({ length: 55 }, (_, i) => `islet:tenant:{t:bench}:arg-${i}-${randomUUID()}`);
  const command = (source: string) => () => {
    let text = `*${args.length + 3}\r\n$4\r\nEVAL\r\n$${Buffer.byteLength(source)}\r\n${source}\r\n`;
    for (const a of args) text += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
    sink = Buffer.from(text);
  };
  await pair(
    "the admission's EVAL encoded (source as read -> one-byte)",
    // The same text held two bytes a character, as compacting a file with a non-ASCII comment leaves it.
    command(`\u2014\n${ADMIT_AND_CREATE.source}`.split('\n').slice(1).join('\n')),
    command(ADMIT_AND_CREATE.source),
  );
  // The request path's four hooks (shutdown's onRequest and onSend, the submit's onSend, the
  // metrics' onResponse), async against callback-style, around a route that answers at once.
  const hooked = async (style: 'async' | 'callback') => {
    const app = Fastify();
    for (let i = 0; i < 2; i++)
      if (style === 'async') app.addHook('onSend', async (_q, _r, payload) => payload);
      else app.addHook('onSend', (_q, _r, payload, done) => done(null, payload));
    if (style === 'async') {
      app.addHook('onRequest', async () => undefined);
      app.addHook('onResponse', async () => undefined);
    } else {
      app.addHook('onRequest', (_q, _r, done) => done());
      app.addHook('onResponse', (_q, _r, done) => done());
    }
    app.post('/v1/runs', async () => ({ id: 'x', status: 'Running' }));
    await app.ready();
    return () => app.inject({ method: 'POST', url: '/v1/runs', payload: { code: 'x' } });
  };
  await pair(
    'four request hooks, inject (async -> callback)',
    await hooked('async'),
    await hooked('callback'),
  );
  void sink;
  process.exit(0);
}

const server = await startRedis({ appendOnly: false });
const logger = createLogger({ name: 'submit-cost', level: 'silent' });
const config = loadConfig({
  ISLET_REDIS_URL: server.url,
  ISLET_SEAL_KEYS: generateSealKey(),
  ISLET_INTERNAL_TOKEN: 'internal-token-for-bench',
  ISLET_RATE_LIMIT_PER_MINUTE: '100000000',
  ISLET_MAX_IN_FLIGHT_RUNS: '100000000',
  ISLET_LOG_LEVEL: 'silent',
});
const deps = await createGatewayDeps(config, logger);
const app = await buildApp(deps);
let child: ReturnType<typeof spawn> | undefined;
try {
  await deps.tenants.createTenant({ id: 'bench', name: 'bench' });
  const { key } = await deps.tenants.createKey('bench', ['apps.use', 'sessions.read']);
  let batch: (n: number) => Promise<void>;
  if (HTTP) {
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const c = spawn(process.execPath, ['-e', CLIENT, `${url}/v1/runs`, key, BODY], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    child = c;
    let waiting: (() => void) | undefined;
    c.stdout?.on('data', (d: Buffer) => {
      for (const _ of d.toString().match(/done\n/g) ?? []) waiting?.();
    });
    batch = (n) =>
      new Promise<void>((resolve) => {
        waiting = resolve;
        c.stdin?.write(`${n} ${CLIENTS}\n`);
      });
  } else {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const post = async () => {
      const res = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: BODY });
      if (res.statusCode !== 202) throw new Error(`status ${res.statusCode}: ${res.body}`);
    };
    batch = async (n) => {
      let left = n;
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (left-- > 0) await post();
        }),
      );
    };
  }
  await batch(WARM);
  const session = PROFILE ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
  }
  console.log(
    `load ${loadavg()[0]?.toFixed(2)}, ${HTTP ? 'HTTP' : 'inject'}, ${CLIENTS} client(s), N ${N}, ${ROUNDS} rounds`,
  );
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await batch(N);
    const used = process.cpuUsage(c0);
    wall.push(((performance.now() - t0) * 1000) / N);
    cpu.push((used.user + used.system) / N);
  }
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(PROFILE as string, JSON.stringify(profile));
    session.disconnect();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
  console.log(`CPU µs/submit: ${list(cpu)}; median ${median(cpu).toFixed(1)}`);
  console.log(`wall µs/submit: ${list(wall)}; median ${median(wall).toFixed(1)}`);
} finally {
  child?.kill();
  await app.close();
  await deps.close();
  await server.stop();
}
