/**
 * `node test/bench/stall-probe.ts`: hunts a run not picked up (round 32, `stall-hunt`). A local
 * cluster as `seq-cpu.ts` starts it (1 gateway, 1 read-only runner, `BENCH_SLOTS` slots), `CLIENTS`
 * (default 16) clients sending trivial runs with `Prefer: wait=30` in bursts of `BURST` runs
 * (default 200) up to `GAP_MS` apart (default 300: the runner goes idle between them, as between
 * a bench's warm-up and its measured runs), until `RUNS` (default 20000) or `SECONDS`. The last
 * line counts the runs not Completed and those answered after `STALL_MS` (the first burst, which
 * starts the sandbox hosts, not counted); `QUIET=1` prints only that. A request still unanswered after `STALL_MS` (default 2000) has its queue's state
 * captured at that moment (BullMQ's lists, the hand-off registrations and keys, the pool's sets)
 * with the runner's and the gateway's last log lines; the run's own record and job once it is
 * answered (`SLOW_STATE=1`: for a slow Completed one too). `LOG_LEVEL` sets the children's (default warn).
 *
 * Round 33 (`slot-bound`): `PARK_EVERY=n` makes every n-th run of a burst call an App that answers
 * after `APP_MS` (default 150, past the runner's 100 ms park-after): those runs park and come back
 * while the burst runs. `BENCH_TENANT_SHARE=1` turns the fair share off, and with it the fused
 * fetch-start and end (BullMQ's own completion fetches the next job). Every `SAMPLE_MS` (default
 * 100) the runner's metrics are read: the oldest wait for a slot of a job it fetched
 * (`islet_runner_fetched_wait_oldest_seconds`, where the runner has it) and how many wait; the end
 * line gives the largest seen, and the runner's own counts (`fetched_waits_total`,
 * `slots_passed_over_total`, the longest wait).
 */
import { Agent, request } from 'node:http';
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { api, startAppServer } from '../e2e/helpers.ts';
import { PROGRAM } from './baselines.ts';
import { metricsOf } from './cluster-figures.ts';

const CLIENTS = Number(process.env.CLIENTS ?? 16);
const RUNS = Number(process.env.RUNS ?? 20000);
const SECONDS = Number(process.env.SECONDS ?? 600);
const STALL_MS = Number(process.env.STALL_MS ?? 2000);
// Bursts of BURST runs from CLIENTS clients, GAP_MS apart (the queue drains and the worker blocks
// idle between them, as between a bench's warm-up and its measured runs).
const BURST = Number(process.env.BURST ?? 200);
const GAP_MS = Number(process.env.GAP_MS ?? 300);

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: {
    ISLET_TENANT_POOL_SHARE: process.env.BENCH_TENANT_SHARE ?? '0.5',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
  },
  logLevel: process.env.LOG_LEVEL ?? 'warn',
});
const redis = createRedis(cluster.redisUrl);
const PARK_EVERY = Number(process.env.PARK_EVERY ?? 0);
const APP_MS = Number(process.env.APP_MS ?? 150);
const SAMPLE_MS = Number(process.env.SAMPLE_MS ?? 100);
const app =
  PARK_EVERY > 0
    ? await startAppServer(async () => {
        await new Promise((r) => setTimeout(r, APP_MS));
        return { status: 200, body: JSON.stringify({ structuredContent: { ok: 1 } }) };
      })
    : undefined;
let connectionId: string | undefined;
if (app) {
  const conn = await api(cluster.url, cluster.devKey)('POST', '/v1/connections', {
    name: 'Slow',
    kind: 'http',
    url: app.url,
    tools: [{ name: 'wait' }],
  });
  if (conn.status !== 201) throw new Error(`connection: ${JSON.stringify(conn.body)}`);
  connectionId = conn.body.id;
}
const PARKING_PROGRAM = 'const r = await apps.slow.wait({}); return r.structuredContent.ok';
/** The runner's fetched jobs' waits for a slot, sampled (a metric the base may not have: then -1). */
const gateSeen = { oldestMs: -1, waitingMax: -1, samples: 0 };
const runnerUrl = cluster.runners[0]?.url ?? '';
const metricOf = (text: string, name: string): number | undefined => {
  const m = text.match(new RegExp(`^${name}\\{[^}]*\\} ([0-9.e+-]+)`, 'm'));
  return m ? Number(m[1]) : undefined;
};
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    await new Promise((r) => setTimeout(r, SAMPLE_MS));
    try {
      const text = await metricsOf(runnerUrl);
      const oldest = metricOf(text, 'islet_runner_fetched_wait_oldest_seconds');
      const waiting = metricOf(text, 'islet_runner_fetched_unstarted');
      gateSeen.samples++;
      if (oldest !== undefined) gateSeen.oldestMs = Math.max(gateSeen.oldestMs, oldest * 1000);
      if (waiting !== undefined) gateSeen.waitingMax = Math.max(gateSeen.waitingMax, waiting);
    } catch {}
  }
})();
const q = 'islet:{runs-read-only}:';

async function snapshot(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { at: new Date().toISOString() };
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', 'islet:{*', 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  for (const key of keys.sort()) {
    if (/^islet:\{runs-read-only\}:[0-9a-f-]{20,}(:|$)/.test(key) && !key.endsWith(':lock')) continue;
    const type = await redis.type(key);
    if (type === 'list') out[key] = await redis.lrange(key, 0, 50);
    else if (type === 'zset') out[key] = await redis.zrange(key, 0, 50, 'WITHSCORES');
    else if (type === 'set') out[key] = await redis.smembers(key);
    else if (type === 'hash') {
      const h = await redis.hgetall(key);
      out[key] =
        key.endsWith(':meta') || key.includes('pool') || key.endsWith('idle:args') ? h : Object.keys(h);
    } else if (type === 'string') out[key] = (await redis.get(key))?.slice(0, 200);
    else if (type === 'stream') out[key] = `stream ${await redis.xlen(key)}`;
    else out[key] = type;
  }
  out.time = await redis.time();
  return out;
}

const agent = new Agent({ keepAlive: true });
function post(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(
      `${cluster.url}/v1/runs`,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${cluster.devKey}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          prefer: 'wait=30',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            resolve({
              status: res.statusCode ?? 0,
              body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
            });
          } catch (e) {
            reject(e);
          }
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

let left = RUNS;
let done = 0;
let stalls = 0;
/** Runs answered Completed but after STALL_MS, and the longest answer, ms. */
let slow = 0;
/** Of them, runs that call the slow App (they park). */
let slowParked = 0;
let longest = 0;
let bursts = 0;
const deadline = Date.now() + SECONDS * 1000;
const started = Date.now();
const log = (s: string) => process.stdout.write(`${new Date().toISOString()} ${s}\n`);
async function burst(): Promise<void> {
  let inBurst = BURST;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      while (inBurst-- > 0 && left-- > 0) {
        const parks = PARK_EVERY > 0 && inBurst % PARK_EVERY === 0;
        let snap: Promise<Record<string, unknown>> | undefined;
        const sentAt = Date.now();
        const timer = setTimeout(() => {
          snap = snapshot();
        }, STALL_MS);
        const res = await post({
          code: parks ? PARKING_PROGRAM : PROGRAM,
          description: 'stall probe',
          sessionId: 'bench',
          turnId: 't',
          callId: 'c',
          connections: parks && connectionId ? [connectionId] : [],
        });
        clearTimeout(timer);
        done++;
        if (bursts > 0) longest = Math.max(longest, Date.now() - sentAt);
        if (res.body.status === 'Completed' && snap) {
          // The first burst starts the sandbox hosts (seconds at load): not counted.
          if (bursts > 0) slow++;
          const id = String(res.body.id);
          if (bursts > 0 && parks) slowParked++;
          if (process.env.QUIET !== '1')
            log(`slow client ${client}: ${Date.now() - sentAt} ms, run ${id}${parks ? ' (parks)' : ''}`);
          if (process.env.SLOW_STATE === '1') {
            log(`state at ${STALL_MS} ms: ${JSON.stringify(await snap)}`);
            log(`job now: ${JSON.stringify(await redis.hgetall(`${q}${id}`)).slice(0, 1500)}`);
            log(`run now: ${JSON.stringify(await redis.hgetall(`islet:run:{${id}}`)).slice(0, 3000)}`);
          }
        } else if (res.body.status !== 'Completed') {
          stalls++;
          const id = String(res.body.id);
          log(
            `STALL client ${client} after ${Date.now() - sentAt} ms, run ${id} ${JSON.stringify(res.body).slice(0, 400)}`,
          );
          if (snap) log(`state at ${STALL_MS} ms: ${JSON.stringify(await snap, null, 1)}`);
          const job = await redis.hgetall(`${q}${id}`);
          log(`job now: ${JSON.stringify(job).slice(0, 1500)}`);
          log(`run now: ${JSON.stringify(await redis.hgetall(`islet:run:{${id}}`)).slice(0, 1500)}`);
          log(`runner log:\n${cluster.output('runner', 0)}`);
          log(`gateway log:\n${cluster.output('gateway', 0)}`);
        }
        if (done % 2000 === 0)
          log(
            `${done} runs, ${stalls} stalls, load ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim()}`,
          );
      }
    }),
  );
}
try {
  while (left > 0 && Date.now() < deadline) {
    await burst();
    bursts++;
    await new Promise((r) => setTimeout(r, Math.random() * GAP_MS));
  }
} finally {
  sampling = false;
  await sampler;
  let counts = 'runner counts: none (no such metrics)';
  try {
    const text = await metricsOf(runnerUrl);
    const waited = metricOf(text, 'islet_runner_fetched_waits_total');
    if (waited !== undefined)
      counts = `runner: ${waited} fetched jobs waited for a slot, longest ${((metricOf(text, 'islet_runner_fetched_wait_longest_seconds') ?? 0) * 1000).toFixed(0)} ms, ${metricOf(text, 'islet_runner_slots_passed_over_total') ?? 0} slots passed over a waiting job`;
  } catch {}
  log(
    `end: ${done} runs (${bursts} bursts of ${BURST}, the first not counted) in ${((Date.now() - started) / 1000).toFixed(0)} s, ${stalls} not Completed, ${slow} Completed after > ${STALL_MS} ms (${slowParked} of them parking), longest ${longest} ms; sampled ${gateSeen.samples}x: oldest fetched wait ${gateSeen.oldestMs.toFixed(0)} ms, most waiting ${gateSeen.waitingMax}; ${counts}`,
  );
  await app?.close();
  redis.disconnect();
  await cluster.stop();
}
