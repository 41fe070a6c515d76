/**
 * The cluster half of `npm run bench`: a local cluster from `@islet/devstack` (its own redis-server,
 * 1 gateway, 1 read-only runner) driven over HTTP with `Prefer: wait`, plus what it costs in Redis
 * commands and memory, and where a run's time goes stage by stage (from the timings the runner
 * stores with a run's end, see RunTimings in @islet/core).
 */
import { readFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import type { Socket } from 'node:net';
import { createRedis, keys } from '@islet/core';
import { type ClusterOptions, startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import {
  CALLS,
  cpuMsOfDescendants,
  measure,
  PROGRAM,
  parallelCalls,
  pct,
  type Sample,
  sequentialCalls,
  TRIVIAL_RUN_BODY,
} from './baselines.ts';
import { benchNow } from './bench-clock.ts';
import { cpuMs, processParents } from './capacity-cpu.ts';
import { type FairRow, fairRow } from './fair-row.ts';
import { appStamps } from './ping-app.ts';
import { deferralsOf, samplePool } from './pool-sampler.ts';
import { clockWatch, type StageSummary, stageRow, stagesOf } from './stages.ts';

export interface ClusterFigures {
  slots: number;
  concurrent16: Sample;
  /** CPU per run of the cluster's processes during the 16-client phase, ms, by kind (and `total`). */
  cpuMsPerRun: Record<string, number>;
  /**
   * In the same window: the runner's own process's CPU a run, ms (its threads; "runner + hosts"
   * less this is its sandbox hosts', the retired ones included), and the hosts replaced, by reason
   * (`islet_sandbox_process_restarts_total`): a host's start is ~0.1 s of CPU, so one replacement
   * in a 3 s window moves the row by ~0.1 ms a run (round 41 `format-cpu`).
   */
  window16: { runnerOwnMsPerRun: number; hostsReplaced: Record<string, number> };
  sequential: Sample;
  /**
   * A binding call's round trip inside a 20-call run, p50 over every run's calls, ms: from one
   * call's request arriving at the App to the next one's, on this process's clock (round 39,
   * `call-gaps.ts`). No trivial run subtracted.
   */
  callMs: number;
  /** Rounds ≤ 38's reading of the same row: `(p50 of a 20-call run − p50 of a trivial run) / 20`, ms. */
  callByRunsMs: number;
  parallel100Ms: number;
  parallel100ExtraMs: number;
  redisCommandsPerRun: number;
  redisTopCommands: string;
  idleHostRssMb: number;
  idleHostPssMb: number;
  idleHosts: number;
  waitingRuns: number;
  isolatesHeldWhileWaiting: number;
  stages: StageSummary;
  /** The settings that are not the defaults (environment of the cluster's processes). */
  settings: Record<string, string>;
  /** How far the wall clock moved against the monotonic one while the cluster ran, ms (`clockWatch`). */
  clockStepMs: number;
  /** The fair-share row's rates, runs/s: 16 clients of one tenant against 16 of two tenants (`fair`). */
  fairShare: { lonePerSec: number; twoPerSec: number };
  /** The fair-share row whole: each side's rate and counts, each cycle's rates (`fair-row.ts`). */
  fair: FairRow;
  /**
   * The runner's fair-share deferrals per run in the 16-client window and the commands' window
   * (the fair-share row's sides carry their own).
   */
  deferralsPerRun: { lone: number; counted: number };
}

const now = benchNow;

/**
 * A process's `/metrics` text; throws on any other answer, so a refused or failed scrape never
 * reads as a gauge at 0 (the slots-held row's goal).
 */
export async function metricsOf(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/metrics`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${baseUrl}/metrics answered ${res.status}: ${text.slice(0, 200)}`);
  return text;
}

/** Calls per command in `INFO commandstats`. */
export function commandStats(info: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

/** Sandbox host processes under `pid` (node started with --no-node-snapshot), RSS and PSS in MB. */
function hostMemory(rootPid: number): { rss: number; pss: number }[] {
  const parent = processParents();
  const under = (pid: number): boolean => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === rootPid) return true;
    return false;
  };
  const out: { rss: number; pss: number }[] = [];
  for (const pid of parent.keys()) {
    if (!under(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (!/node$/.test(cmd[0] ?? '') || !cmd.includes('--no-node-snapshot')) continue;
      const kb = (text: string, field: string) =>
        Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1]);
      const rss = kb(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS');
      const pss = kb(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss');
      out.push({ rss: rss / 1024, pss: pss / 1024 });
    } catch {
      // gone
    }
  }
  return out;
}

/**
 * The load generator's request: node:http on a keep-alive agent, not fetch(). The client shares
 * the two cores with what it measures, and fetch() cost about 0.7 ms of CPU per request here
 * (undici's WHATWG streams and Headers), a tenth of a whole run's CPU across the cluster; wrk or
 * autocannon would not charge the system under test for it either.
 */
export function leanPost(url: string, key: string): (body: unknown) => Promise<unknown> {
  const post = stampedPost(url, key, () => 0);
  return async (body) => (await post(body)).body;
}

/**
 * `leanPost` that also stamps (`now`) when the response's first bytes reach the socket's listeners,
 * before Node's http client parses them (`bytesAt`): where a bare-socket client has its answer, and
 * where the messages' floor's TCP round trip ends (message-floor.ts). The end's stage is read to
 * there as well as to the awaiting code (round 35, `end-gw`: the http client's own part, ~0.06 ms
 * p50 above a bare socket's, is the bench's, not the server's). The listener is prepended once a
 * socket (a keep-alive socket serves many requests); several requests at once each stamp their own.
 */
export function stampedPost(
  url: string,
  key: string,
  now: () => number,
): (body: unknown) => Promise<{ body: unknown; bytesAt: number; writtenAt: number }> {
  const agent = new Agent({ keepAlive: true });
  // The stamp of the request a socket serves now (one at a time on a socket).
  const serving = new WeakMap<Socket, { bytesAt: number; writtenAt: number }>();
  return (body) =>
    new Promise((resolve, reject) => {
      const text = JSON.stringify(body);
      const stamp = { bytesAt: Number.NaN, writtenAt: Number.NaN };
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${key}`,
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
                body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
                bytesAt: stamp.bytesAt,
                writtenAt: stamp.writtenAt,
              });
            } catch (e) {
              reject(e);
            }
          });
          res.on('error', reject);
        },
      );
      req.on('socket', (s: Socket) => {
        const hooked = serving.has(s);
        serving.set(s, stamp);
        if (hooked) return;
        s.prependListener('data', () => {
          const current = serving.get(s);
          if (current && Number.isNaN(current.bytesAt)) current.bytesAt = now();
        });
        // The request's first write to the socket (`writtenAt`): where the bench's http client has
        // built and sent it, and where a bare-socket client's send would be (round 37 `submit-gw`).
        const write = s.write;
        s.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
          const current = serving.get(s);
          if (current && Number.isNaN(current.writtenAt)) current.writtenAt = now();
          return write.apply(this, args);
        } as Socket['write'];
      });
      req.on('error', reject);
      req.end(text);
    });
}

/**
 * One trivial run over `leanPost` (`Prefer: wait`) on a local cluster's dev key, as every per-run
 * bench submits it; throws unless the run Completed. It names no Apps (`connections: []`) unless
 * `tenantApps`: then it sends no `connections` and the gateway reads the tenant's Apps at submit,
 * which command-count has always counted.
 */
export function trivialRun(
  cluster: { url: string; devKey: string },
  description: string,
  { tenantApps = false } = {},
): () => Promise<void> {
  const post = leanPost(`${cluster.url}/v1/runs`, cluster.devKey);
  return async () => {
    const body = (await post({
      code: PROGRAM,
      description,
      sessionId: 'bench',
      turnId: 't',
      callId: 'c',
      ...(tenantApps ? {} : { connections: [] }),
    })) as { status?: string };
    if (body?.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(body)}`);
  };
}

/**
 * One trivial run as `sequential.ts` and `hop-trace.ts` submit it, stamped with `now` right before
 * the send and right after the response (and at the response's first bytes: `stampedPost`); throws
 * unless the run Completed.
 */
export function stampedRun(
  cluster: { url: string; devKey: string },
  now: () => number,
): () => Promise<{ sent: number; received: number; bytesAt: number; writtenAt: number; id: string }> {
  const post = stampedPost(`${cluster.url}/v1/runs`, cluster.devKey, now);
  return async () => {
    const sent = now();
    const answer = await post(TRIVIAL_RUN_BODY);
    const received = now();
    const body = answer.body as { id: string; status?: string };
    if (body?.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(body)}`);
    return { sent, received, bytesAt: answer.bytesAt, writtenAt: answer.writtenAt, id: body.id };
  };
}

/** `runs` runs of `run` from `clients` clients, each starting its next run as its last one ends. */
export async function burst(run: () => Promise<void>, runs: number, clients: number): Promise<void> {
  let left = runs;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (left-- > 0) await run();
    }),
  );
}

/** `quick`: the ratio guard's short form (fewer runs, no binding-call figures, NaN there). */
export async function clusterFigures(seconds: number, quick = false): Promise<ClusterFigures> {
  const app = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appPort = (app.address() as { port: number }).port;
  const stamps = appStamps(app);
  const slots = Number(process.env.BENCH_SLOTS ?? 4);
  const clockStep = clockWatch();
  // Default settings, the fair share included (work-conserving: a lone tenant has the whole
  // pool), but the per-tenant rate limit (1,200 requests a minute): the 16-client phases send
  // ~15,000 a minute, and a limit's 429s would measure the policy, not the pipeline.
  // BENCH_TENANT_SHARE sets the share, BENCH_SLOTS the runner's slots; the bench prints each.
  const env: Record<string, string> = {
    ...(process.env.BENCH_TENANT_SHARE ? { ISLET_TENANT_POOL_SHARE: process.env.BENCH_TENANT_SHARE } : {}),
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
  };
  const cluster = await startCluster({
    gateways: 1,
    runners: [{ modes: ['read-only'], concurrency: slots }],
    env,
  });
  const redis = createRedis(cluster.redisUrl);
  const a = api(cluster.url, cluster.devKey);
  // One agent for every phase, as before; the sequential phase reads its stamp of the bytes too.
  const stamped = stampedPost(`${cluster.url}/v1/runs`, cluster.devKey, now);
  const post = async (body: unknown) => (await stamped(body)).body;
  const submit = async (code: string, connections: string[] = [], extra: Record<string, unknown> = {}) =>
    (await post({
      code,
      description: 'Benchmark a trivial program',
      sessionId: 'bench',
      turnId: 't',
      callId: 'c',
      connections,
      ...extra,
    })) as { id: string; status: string };
  const completed = async (code: string, connections: string[] = [], by = post) => {
    const body = (await by({
      code,
      description: 'Benchmark a trivial program',
      sessionId: 'bench',
      turnId: 't',
      callId: 'c',
      connections,
    })) as { id: string; status: string };
    if (body?.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(body)}`);
    return body;
  };
  try {
    const connection = async (name: string, policy: 'allow' | 'ask') => {
      const made = await a('POST', '/v1/connections', {
        name,
        kind: 'http',
        url: `http://127.0.0.1:${appPort}/`,
        tools: [{ name: 'ping', policy }],
      });
      if (made.status !== 201)
        throw new Error(`connection ${name}: ${made.status} ${JSON.stringify(made.body)}`);
      return (made.body as { id: string }).id;
    };
    const bench = await connection('Bench', 'allow');
    const ask = await connection('Ask', 'ask');

    // The processes' hot paths compiled first (V8 tiers a function up after hundreds of calls):
    // the sequential phase reads a serving cluster's steady state, as the 16-client phase reads
    // its own after a warm-up, not a fresh process's first runs. BENCH_SEQ_WARM sets the count.
    const warmRuns = quick ? 3 : Number(process.env.BENCH_SEQ_WARM ?? 300);
    for (let i = 0; i < warmRuns; i++) await completed(PROGRAM);
    // BENCH_SLICE_NS (round 46, `host-slice`): an EEVDF slice asked from here on, for the path's
    // main threads (BENCH_SLICE_TARGET=path, default) or every thread of the sandbox hosts alive now
    // (=hosts); the sequential rows are what it is for (slice-seq.ts).
    if (process.env.BENCH_SLICE_NS) await sliceFromEnv(Number(process.env.BENCH_SLICE_NS));

    // Sequential, with each run's stages.
    const stageRows: { stages: number[]; latencyMs: number }[] = [];
    const sequential = await measure(
      async () => {
        const sent = now();
        let bytesAt = Number.NaN;
        let writtenAt = Number.NaN;
        const { id } = await completed(PROGRAM, [], async (body) => {
          const answer = await stamped(body);
          bytesAt = answer.bytesAt;
          writtenAt = answer.writtenAt;
          return answer.body;
        });
        const received = now();
        const [createdAt, timings] = await redis.hmget(keys.run(id), 'createdAt', 'timings');
        stageRows.push({
          stages: stageRow(sent, received, createdAt, timings, bytesAt, writtenAt),
          latencyMs: received - sent,
        });
        // The latency is the request's alone: the read of its stages above is the bench's own work.
        return received - sent;
      },
      // At least 200 runs: a p99 over fewer is the slowest run or next to it.
      { seconds, warmup: 0, minRuns: quick ? 10 : 200 },
    );
    const stages = stagesOf(stageRows);

    // By entry point, not by the word: a checkout whose path has "gateway" in it (a worktree named
    // for its branch) would count every process as the gateway.
    const kindOf = (cmd: string) =>
      cmd.includes('redis-server')
        ? 'redis'
        : cmd.includes('gateway/src/main.ts')
          ? 'gateway'
          : 'runner + hosts';
    // The steady state at 16 clients, as every other phase: the runner's slots each with its host
    // (the sequential phase above needed one), started before the window, whose CPU counts only
    // the runs it measures (a warm-up inside `measure` would add its runs' CPU to the window).
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = 0; i < 3; i++) await completed(PROGRAM);
      }),
    );
    const deferrals = () => deferralsOf(cluster.runners[0]!.url);
    const deferred0 = await deferrals();
    const restarts = async () => {
      const out: Record<string, number> = {};
      for (const m of (await metricsOf(cluster.runners[0]!.url)).matchAll(
        /^islet_sandbox_process_restarts_total\{([^}]*)\} (\d+)/gm,
      )) {
        const reason = /reason="([^"]+)"/.exec(m[1]!)?.[1] ?? '?';
        out[reason] = (out[reason] ?? 0) + Number(m[2]);
      }
      return out;
    };
    const restarts0 = await restarts();
    const runnerPid = cluster.runners[0]!.pid!;
    const runnerCpu0 = cpuMs(runnerPid);
    const cpuBefore = cpuMsOfDescendants(kindOf);
    const concurrent16 = await measure(async () => void (await completed(PROGRAM)), {
      seconds,
      clients: 16,
      warmup: 0,
      minRuns: quick ? 16 : 32,
    });
    const cpuAfter = cpuMsOfDescendants(kindOf);
    const runnerCpu1 = cpuMs(runnerPid);
    const restarts1 = await restarts();
    const window16 = {
      runnerOwnMsPerRun: (runnerCpu1 - runnerCpu0) / concurrent16.runs,
      hostsReplaced: Object.fromEntries(
        Object.entries(restarts1)
          .map(([r, n]) => [r, n - (restarts0[r] ?? 0)] as const)
          .filter(([, n]) => n > 0),
      ),
    };
    const deferred1 = await deferrals();
    const cpuMsPerRun: Record<string, number> = {};
    for (const [kind, ms] of Object.entries(cpuAfter))
      cpuMsPerRun[kind] = (ms - (cpuBefore[kind] ?? 0)) / concurrent16.runs;
    cpuMsPerRun.total = Object.values(cpuMsPerRun).reduce((a, b) => a + b, 0);

    // Fair share, same stack (`fair-row.ts`): the lone tenant's 16 clients against 16 clients of
    // two tenants (8 each), switched in ABBA / BAAB segments of the same minutes. A work-conserving
    // share gives a lone tenant the whole pool and wastes nothing under contention: lone ÷ two ≈ 1;
    // a share that caps a lone tenant reads ~0.5-0.65; well above 1, two tenants leave slots idle.
    const second = 'bench-second';
    const tenant = await a('POST', '/v1/admin/tenants', { id: second, name: second });
    if (tenant.status !== 201)
      throw new Error(`second tenant: ${tenant.status} ${JSON.stringify(tenant.body)}`);
    const keyed = await a('POST', `/v1/admin/tenants/${second}/keys`, {
      scopes: ['apps.use', 'sessions.read'],
    });
    if (keyed.status !== 201)
      throw new Error(`second tenant's key: ${keyed.status} ${JSON.stringify(keyed.body)}`);
    const secondKey = (keyed.body as { key: string }).key;
    const post2 = leanPost(`${cluster.url}/v1/runs`, secondKey);
    // The second tenant's first runs (its key, tenant and policies into the gateway's caches).
    await Promise.all(Array.from({ length: 8 }, () => completed(PROGRAM, [], post2)));
    const fairSampleMs = Number(process.env.BENCH_FAIR_SAMPLE_MS ?? 25);
    const fair = await fairRow({
      lone: async () => void (await completed(PROGRAM)),
      other: async () => void (await completed(PROGRAM, [], post2)),
      clients: 16,
      segmentsPerSide: quick ? 2 : Number(process.env.BENCH_FAIR_SEGMENTS ?? 4),
      segmentSeconds: Number(process.env.BENCH_FAIR_SEGMENT_SECONDS ?? seconds / 2),
      deferrals,
      cpu: () => cpuMsOfDescendants(kindOf),
      sampler: samplePool({
        redisUrl: cluster.redisUrl,
        runnerUrl: cluster.runners[0]!.url,
        mode: 'read-only',
        slots,
        everyMs: fairSampleMs,
      }),
      sampleMs: fairSampleMs,
    });
    const deferred2 = await deferrals();
    const fairShare = { lonePerSec: fair.lone.perSec, twoPerSec: fair.two.perSec };

    // Redis commands per run: everything the cluster sent while 100 runs went through (the INFO
    // calls themselves excluded), so background polling during that time counts against the runs.
    const counted = quick ? 40 : 100;
    const before = commandStats(await redis.info('commandstats'));
    let left = counted;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left-- > 0) await completed(PROGRAM);
      }),
    );
    const after = commandStats(await redis.info('commandstats'));
    const deferred3 = await deferrals();
    const delta: [string, number][] = [...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]);
    const total = delta.reduce((s, [k, v]) => s + (k === 'info' ? Math.max(0, v - 1) : v), 0);
    const top = delta
      .filter(([k, v]) => v > 0 && k !== 'info')
      .sort((x, y) => y[1] - x[1])
      .slice(0, 8)
      .map(([k, v]) => `${k} ${(v / counted).toFixed(1)}`)
      .join(', ');

    // A run's gaps each; the first run is `measure`'s warm-up, not counted.
    const callGaps: number[][] = [];
    const skipped: Sample = { runs: 0, seconds: 0, perSec: Number.NaN, p50: Number.NaN, p99: Number.NaN };
    const withCalls = quick
      ? skipped
      : await measure(
          async () => {
            stamps.clear();
            await completed(sequentialCalls(CALLS), [bench]);
            // Each call's round trip on one clock: its request's arrival at the App → the next one's.
            const { arrived } = stamps;
            const gaps: number[] = [];
            for (let i = 0; i + 1 < arrived.length; i++) gaps.push(arrived[i + 1]! - arrived[i]!);
            callGaps.push(gaps);
          },
          { seconds: seconds / 2, warmup: 1, minRuns: 10 },
        );
    const parallel = quick
      ? skipped
      : await measure(async () => void (await completed(parallelCalls(100), [bench])), {
          seconds: seconds / 2,
          warmup: 1,
          minRuns: 5,
        });

    // Idle memory of the runner's pooled sandbox hosts (after the load settled).
    await new Promise((r) => setTimeout(r, quick ? 200 : 1000));
    const hosts = hostMemory(cluster.runners[0]!.pid!);
    const mean = (xs: number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : Number.NaN);

    // Runs stopped for a decision (approval `stop`): how many slots (each holding an isolate) they keep.
    const waitingIds: string[] = [];
    for (let i = 0; i < (quick ? 2 : 4); i++) {
      const body = await submit('await apps.ask.ping({}); return 1', [ask], { approval: 'stop' });
      if (body?.status !== 'Waiting') throw new Error(`expected Waiting, got ${JSON.stringify(body)}`);
      waitingIds.push(body.id);
    }
    await new Promise((r) => setTimeout(r, 500));
    const metrics = await metricsOf(cluster.runners[0]!.url);
    const busy = [...metrics.matchAll(/^islet_runner_slots\{[^}]*state="busy"[^}]*\} (\d+)/gm)].reduce(
      (s, m) => s + Number(m[1]),
      0,
    );
    for (const id of waitingIds) await a('POST', `/v1/code-runs/${id}/cancel`);

    return {
      slots,
      concurrent16,
      cpuMsPerRun,
      window16,
      sequential,
      callMs: callGaps.length > 1 ? pct(callGaps.slice(1).flat(), 50) : Number.NaN,
      callByRunsMs: Math.max(0, withCalls.p50 - sequential.p50) / CALLS,
      parallel100Ms: parallel.p50,
      parallel100ExtraMs: Math.max(0, parallel.p50 - sequential.p50),
      redisCommandsPerRun: total / counted,
      redisTopCommands: top,
      idleHostRssMb: mean(hosts.map((h) => h.rss)),
      idleHostPssMb: mean(hosts.map((h) => h.pss)),
      idleHosts: hosts.length,
      waitingRuns: waitingIds.length,
      fairShare,
      fair,
      deferralsPerRun: {
        lone: (deferred1 - deferred0) / concurrent16.runs,
        counted: (deferred3 - deferred2) / counted,
      },
      isolatesHeldWhileWaiting: busy,
      stages,
      // The runner's slots are its spec's (devstack), not the environment's.
      settings: { ...env, ...(slots !== 4 ? { ISLET_RUNNER_CONCURRENCY: String(slots) } : {}) },
      clockStepMs: clockStep(),
    };
  } finally {
    redis.disconnect();
    await cluster.stop();
    app.close();
  }
}

/**
 * The one-client benches' cluster: one gateway, one read-only runner (`BENCH_SLOTS`, default 4),
 * no rate limit; the fair share `BENCH_TENANT_SHARE` or `defaultShare` (one tenant drives it).
 */
export function startOneClientCluster(
  defaultShare: string,
  env: Record<string, string> = {},
  // The stack's Redis (e.g. a Redis Cluster's `redisConfig`); default: its own redis-server.
  redis: Pick<ClusterOptions, 'redisConfig'> = {},
) {
  return startCluster({
    ...redis,
    gateways: 1,
    runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
    env: {
      ISLET_TENANT_POOL_SHARE: process.env.BENCH_TENANT_SHARE ?? defaultShare,
      ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
      ...env,
    },
  });
}

async function sliceFromEnv(ns: number): Promise<void> {
  const { clusterThreads } = await import('./cluster-threads.ts');
  const { setSlice, sliceOf } = await import('./sched-slice.ts');
  const all = clusterThreads();
  const hosts = process.env.BENCH_SLICE_TARGET === 'hosts';
  const tids = all
    .filter((t) => (hosts ? t.kind === 'host' : t.main && ['redis', 'gateway', 'runner'].includes(t.kind)))
    .map((t) => t.tid);
  setSlice(ns, tids);
  console.log(
    `BENCH_SLICE_NS: ${tids.length} threads (${hosts ? 'hosts' : 'path'}) at ${[...new Set(tids.map(sliceOf))].join('/')} ns`,
  );
}
