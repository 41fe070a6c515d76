/**
 * The chaos driver (issue 4): many runs with `allow` and `ask` calls and parallel calls
 * (`Promise.all`, `Promise.race`) against an HTTP App that counts deliveries per Idempotency-Key,
 * while runners are SIGKILLed and restarted, a gateway is SIGKILLed and restarted and Redis is
 * SIGKILLed and restarted (AOF, fsync always). Then: every accepted run reached a final status,
 * no App call was delivered twice (exactly once where the run completed with its result), and
 * every result equals the result of the same program run with no faults (the engine in-process,
 * same App answers, same decisions). Runs that met an honest "outcome unknown" (a call sent just
 * before a gateway died) are counted and checked separately: their unknown call was delivered at
 * most once and reported as AppCallFailed with the documented reason.
 *
 * `redis: 'cluster'` runs the same stream on a 3-master Redis Cluster (3 replicas, AOF fsync
 * always) and SIGKILLs masters instead of restarting a single Redis: first the master serving the
 * mode's queue slot, then another; each time the replica is promoted (`cluster_state:ok`) while
 * runs, binding calls and decisions go on. It also measures what a failover costs: how long the
 * cluster was unhealthy, the slowest submit around it, and runs that needed an extra execution.
 */
import { createRedis, keys, type RedisConfig, sealerFromConfig } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { createCallJournal, UNKNOWN_OUTCOME_REASON } from '@islet/runs';
import {
  type RedisCluster,
  type RedisServer,
  type SentinelGroup,
  startRedis,
  startRedisCluster,
  startSentinelGroup,
} from '@islet/testkit';
import { Redis } from 'ioredis';
import { type Loose, sleep } from '../e2e/helpers.ts';
import { clusterRedisConfig } from '../e2e/redis-cluster-config.ts';
import { answerOf, client, faultFree, type Spec, specFor, startCountingApp } from './programs.ts';

export interface ChaosOptions {
  runs: number;
  /** Runs are submitted evenly over this window, ms. */
  submitWindowMs: number;
  /** A runner is SIGKILLed (and restarted) this often, ms. */
  killEveryMs: number;
  runners: number;
  runnerConcurrency: number;
  /** Longest time to wait for every run to end after the last submit, ms. */
  settleTimeoutMs: number;
  log?: (line: string) => void;
  /** One redis-server (SIGKILLed and restarted from its AOF) or a Redis Cluster (masters SIGKILLed). Default standalone. */
  redis?: 'standalone' | 'cluster' | 'sentinel';
  /**
   * Cluster: masters SIGKILLed during the submit window, evenly spaced. Default 1. Sentinel: the
   * master is SIGKILLed once, mid-window, and the sentinels promote the replica (at most 1).
   */
  masterKills?: number;
  /**
   * Cluster: the first master kill (the queue slot's) lands before the stream, while every runner's
   * pool sits idle in its blocking pop; later kills hit another master during the stream.
   */
  firstMasterKillIdle?: boolean;
  /** SIGKILL runners every `killEveryMs`. Default true. */
  runnerKills?: boolean;
  /** SIGKILL and restart gateway 1 at 35% of the window. Default true. */
  gatewayRestart?: boolean;
  /** Extra environment for every gateway and runner. */
  env?: Record<string, string>;
}

export interface ChaosReport {
  runs: number;
  accepted: number;
  runnerKills: number;
  gatewayRestarts: number;
  redisRestarts: number;
  /** Cluster: masters SIGKILLed (each replaced by its promoted replica). */
  masterKills: number;
  /** Cluster: ms from each master's SIGKILL to every live node reporting cluster_state:ok. */
  failoverMs: number[];
  /** Submit (POST /v1/runs) latency: p50 over the run, and the slowest within 15 s after a fault. */
  submitP50Ms: number;
  submitMaxAfterFaultMs: number;
  /** Runs that executed more often than their decisions explain (a replay a fault caused). */
  extraExecutions: number;
  calls: number;
  deliveries: number;
  duplicates: number;
  lost: number;
  unknownOutcomes: number;
  decisions: number;
  /** Parallel runs whose Promise.race the slow side won (timing under faults); checked against the journal. */
  raceFlips: number;
  statuses: Record<string, number>;
  /** Problems found; empty when every check passed. */
  violations: string[];
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => {});
  const specs = Array.from({ length: options.runs }, (_, i) => specFor(i));
  const expectedP = faultFree(specs);
  const onCluster = options.redis === 'cluster';
  const onSentinel = options.redis === 'sentinel';
  let redis: RedisServer | undefined;
  let rcluster: RedisCluster | undefined;
  let sentinel: SentinelGroup | undefined;
  if (onCluster)
    rcluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1, appendFsync: 'always' });
  else if (onSentinel) sentinel = await startSentinelGroup();
  else redis = await startRedis({ appendFsync: 'always' });
  const faultTimes: number[] = [];
  const submitTimes: { at: number; ms: number }[] = [];
  const app = await startCountingApp();
  let cluster: Cluster | undefined;
  const report: ChaosReport = {
    runs: options.runs,
    accepted: 0,
    runnerKills: 0,
    gatewayRestarts: 0,
    redisRestarts: 0,
    masterKills: 0,
    failoverMs: [],
    submitP50Ms: 0,
    submitMaxAfterFaultMs: 0,
    extraExecutions: 0,
    calls: 0,
    deliveries: 0,
    duplicates: 0,
    lost: 0,
    unknownOutcomes: 0,
    decisions: 0,
    raceFlips: 0,
    statuses: {},
    violations: [],
  };
  try {
    cluster = await startCluster({
      ...(rcluster
        ? { redisConfig: clusterRedisConfig(rcluster) }
        : sentinel
          ? { redisConfig: sentinelRedisConfig(sentinel) }
          : { redisUrl: redis!.url }),
      gateways: 2,
      runners: Array.from({ length: options.runners }, () => ({
        modes: ['read-only' as const],
        concurrency: options.runnerConcurrency,
      })),
      env: {
        ISLET_RUNNER_LOCK_DURATION_MS: '2000',
        ISLET_RUNNER_STALLED_INTERVAL_MS: '1000',
        ISLET_RUNNER_MAX_STALLED_COUNT: '20',
        ISLET_JOB_ATTEMPTS: '20',
        ISLET_APP_CALL_TIMEOUT_MS: '10000',
        ...options.env,
      },
    });
    const c = cluster;
    const admin = client(() => c.gatewayUrls, c.devKey);
    await admin('POST', '/v1/admin/tenants', {
      id: 'chaos',
      name: 'Chaos',
      rateLimitPerMinute: 10_000_000,
      maxInFlightRuns: 100_000,
    });
    const key = (await admin('POST', '/v1/admin/tenants/chaos/keys', { scopes: ['apps.use', 'decisions'] }))
      .body.key as string;
    const http = client(() => c.gatewayUrls, key);
    const conn = await http('POST', '/v1/connections', {
      name: 'Chaos',
      kind: 'http',
      url: app.url,
      tools: [
        { name: 'read', policy: 'allow' },
        { name: 'slow', policy: 'allow' },
        { name: 'write', policy: 'ask' },
      ],
    });
    if (conn.status !== 201) throw new Error(`connection: ${JSON.stringify(conn.body)}`);

    /** SIGKILLs a Cluster master and waits for its replica's promotion; `what` names it in the log. */
    const killClusterMaster = async (cluster: RedisCluster, port: number, what: string) => {
      log(`chaos: SIGKILL Redis Cluster master ${port}${what}`);
      const t0 = Date.now();
      faultTimes.push(t0);
      await cluster.killMaster(port);
      report.failoverMs.push(Date.now() - t0);
      report.masterKills++;
      log(`chaos: replica promoted, cluster_state:ok after ${Date.now() - t0} ms`);
    };
    if (rcluster && options.firstMasterKillIdle && (options.masterKills ?? 1) > 0) {
      // Long enough for every worker to park in its blocking pop on the queue slot's master.
      await sleep(2_000);
      const queue = await rcluster.masterOf('{runs-read-only}');
      await killClusterMaster(rcluster, queue, ' (queue slot) under idle pools');
    }

    const ids = new Map<number, string>();
    const specOfRun = new Map<string, Spec>();
    let stop = false;

    // The decider: answers every pending decision (deny where the spec says so).
    const decider = (async () => {
      while (!stop) {
        try {
          const res = await http('GET', '/v1/decisions');
          for (const d of (res.body?.items ?? []) as Loose[]) {
            const spec = specOfRun.get(d.code.run);
            if (!spec) continue;
            const answer = await http('POST', `/v1/code-runs/${d.code.run}/decisions`, {
              index: d.code.index,
              allow: !spec.deny,
            });
            if (answer.status === 200) report.decisions++;
          }
        } catch {
          // a fault is in progress; try again
        }
        await sleep(150);
      }
    })();

    // Faults.
    const started = Date.now();
    const faults = (async () => {
      let next = 0;
      let gatewayDone = options.gatewayRestart === false;
      let redisDone = onCluster || onSentinel;
      const masterKills = onCluster
        ? (options.masterKills ?? 1)
        : onSentinel
          ? Math.min(1, options.masterKills ?? 1)
          : 0;
      const restarting = new Set<number>();
      const restarts: Promise<void>[] = [];
      while (!stop) {
        await sleep(options.killEveryMs);
        if (stop) break;
        const elapsed = (Date.now() - started) / options.submitWindowMs;
        if (!gatewayDone && elapsed > 0.35) {
          gatewayDone = true;
          log('chaos: SIGKILL gateway 1 and restart it');
          await c.restartGateway(1);
          report.gatewayRestarts++;
          continue;
        }
        if (!redisDone && elapsed > 0.6) {
          redisDone = true;
          log('chaos: SIGKILL redis and restart it (AOF)');
          faultTimes.push(Date.now());
          await redis!.restart();
          report.redisRestarts++;
          continue;
        }
        if (
          rcluster &&
          report.masterKills < masterKills &&
          elapsed > (report.masterKills + 1) / (masterKills + 1)
        ) {
          // First the master of the mode's queue slot (BullMQ's keys for this pool), then another.
          const masters = await rcluster.masters();
          const queue = await rcluster.masterOf('{runs-read-only}');
          const target = report.masterKills === 0 ? queue : (masters.find((p) => p !== queue) ?? queue);
          await killClusterMaster(rcluster, target, target === queue ? ' (queue slot)' : '');
          continue;
        }
        if (sentinel && report.masterKills < masterKills && elapsed > 0.5) {
          log(`chaos: SIGKILL the Sentinel group's master ${sentinel.masterPort}`);
          const t0 = Date.now();
          faultTimes.push(t0);
          await sentinel.killMaster();
          await waitForPromotion(sentinel);
          report.failoverMs.push(Date.now() - t0);
          report.masterKills++;
          log(
            `chaos: sentinels report the replica ${sentinel.replicaPort} as master after ${Date.now() - t0} ms`,
          );
          continue;
        }
        if (options.runnerKills === false) continue;
        // Restarts run in the background so the kill schedule does not stretch when a loaded
        // machine starts runners slowly (a slow restart used to leave a 30 s window one kill).
        const i = next++ % options.runners;
        if (restarting.has(i)) continue;
        log(`chaos: SIGKILL runner ${i}`);
        await c.killRunner(i, 'SIGKILL');
        report.runnerKills++;
        restarting.add(i);
        restarts.push(
          (async () => {
            await sleep(500 + Math.random() * 1000);
            await c.restartRunner(i);
            restarting.delete(i);
          })(),
        );
      }
      await Promise.all(restarts);
    })();

    // Submit evenly over the window, each with an Idempotency-Key so a retried submit is the same run.
    const gap = options.submitWindowMs / options.runs;
    const submits: Promise<void>[] = [];
    for (const spec of specs) {
      submits.push(
        (async () => {
          const t0 = Date.now();
          const res = await http(
            'POST',
            '/v1/runs',
            {
              // Stop-and-replay after each decision is what the chaos run exercises (Code Mode's rule).
              style: 'code-mode',
              code: spec.code,
              description: `Chaos run ${spec.i} of kind ${spec.kind}`,
              sessionId: 'chaos',
              turnId: `turn-${spec.i}`,
              callId: `call-${spec.i}`,
              connections: [conn.body.id],
            },
            { 'idempotency-key': `chaos-${spec.i}` },
          );
          submitTimes.push({ at: t0, ms: Date.now() - t0 });
          if (res.status === 202 || res.status === 200) {
            ids.set(spec.i, res.body.id);
            specOfRun.set(res.body.id, spec);
            report.accepted++;
          } else
            report.violations.push(
              `run ${spec.i}: submit answered ${res.status} ${JSON.stringify(res.body)}`,
            );
        })(),
      );
      await sleep(gap);
    }
    await Promise.all(submits);
    log(`chaos: ${report.accepted} runs accepted; waiting for them to end`);

    // Wait for every run to reach a final status.
    const final = new Map<string, Loose>();
    const deadline = Date.now() + options.settleTimeoutMs;
    while (final.size < ids.size && Date.now() < deadline) {
      for (const id of ids.values()) {
        if (final.has(id)) continue;
        const r = await http('GET', `/v1/code-runs/${id}`);
        if (['Completed', 'Failed', 'Cancelled'].includes(r.body?.status)) final.set(id, r.body);
      }
      if (final.size < ids.size) await sleep(500);
    }
    stop = true;
    await Promise.all([decider, faults]);

    // Checks.
    const expected = await expectedP;
    const spec = (i: number) => specs[i]!;
    const journalRedis = createRedis(c.redisConfig);
    const journal = createCallJournal({
      redis: journalRedis,
      sealer: sealerFromConfig({ ISLET_SEAL_KEYS: c.env.ISLET_SEAL_KEYS ?? '' }),
    });
    try {
      const sorted = submitTimes.map((x) => x.ms).sort((x, y) => x - y);
      report.submitP50Ms = sorted[Math.floor(sorted.length / 2)] ?? 0;
      report.submitMaxAfterFaultMs = Math.max(
        0,
        ...submitTimes.filter((x) => faultTimes.some((f) => x.at >= f && x.at < f + 15_000)).map((x) => x.ms),
      );
      for (const [i, id] of ids) {
        if (!final.has(id)) continue;
        const attempts = Number(await journalRedis.hget(keys.run(id), 'attempts'));
        // Each decision stops the run and replays it once; `parallel` runs ask nothing.
        const planned = 1 + (spec(i).kind === 'parallel' ? 0 : 1);
        if (attempts > planned) report.extraExecutions++;
      }
      report.lost = ids.size - final.size;
      if (process.env.CHAOS_DIAG) {
        // After the settle no submit hands anything over: a job still on a worker's hand-off key
        // (score 0) went to a registration whose runner was SIGKILLed before its pop (one begun
        // attempt that only the stalled check takes back). And every run's starts, summed.
        let deadHandOffs = 0;
        for (const k of await journalRedis.keys('*:handoff:*')) {
          if (k.endsWith(':closed') || (await journalRedis.type(k)) !== 'zset') continue;
          deadHandOffs += await journalRedis.zcount(k, 0, 0);
        }
        const byAttempts = new Map<number, number>();
        for (const id of ids.values()) {
          const n = Number(await journalRedis.hget(keys.run(id), 'attempts'));
          byAttempts.set(n, (byAttempts.get(n) ?? 0) + 1);
        }
        const hist = [...byAttempts].sort(([a], [b]) => a - b).map(([n, c]) => `${n}:${c}`);
        console.log(
          `DIAG hand-offs left to dead workers ${deadHandOffs}; runs by attempts ${hist.join(' ')}; not ended ${report.lost}`,
        );
      }
      for (const [i, id] of ids) {
        if (final.has(id)) continue;
        // Where it got stuck: its status, executions and calls (a lost job, an unanswered decision…).
        const r = await http('GET', `/v1/code-runs/${id}`).catch(() => undefined);
        const attempts = await journalRedis.hget(keys.run(id), 'attempts').catch(() => '?');
        const calls = ((r?.body?.calls ?? []) as Loose[]).map((c) => c.outcome?._tag).join(',');
        report.violations.push(
          `run ${i} (${id}) never ended: ${r?.status} ${r?.body?.status ?? ''} attempts ${attempts} calls [${calls}]`,
        );
        if (process.env.CHAOS_DIAG) {
          const rec = await journalRedis.hgetall(keys.run(id)).catch(() => ({}) as Record<string, string>);
          const { code: _c, request: _q, description: _d, ...head } = rec;
          const jr = await journalRedis.hgetall(`islet:journal:{${id}}`).catch(() => ({}));
          const jttl = await journalRedis.ttl(`islet:journal:{${id}}`).catch(() => -3);
          const bull = await journalRedis.keys(`*${id}*`).catch(() => [] as string[]);
          const jobs: Record<string, unknown> = {};
          for (const k of bull) {
            const t = await journalRedis.type(k);
            if (t === 'hash' && k.includes('bull')) {
              const h = await journalRedis.hgetall(k);
              delete h.data;
              jobs[k] = h;
            } else jobs[k] = t;
          }
          const where: string[] = [];
          for (const st of ['wait', 'active', 'paused', 'delayed', 'prioritized', 'waiting-children']) {
            for (const q of await journalRedis.keys(`*runs-read-only*:${st}`)) {
              const t = await journalRedis.type(q);
              const has =
                t === 'list'
                  ? (await journalRedis.lpos(q, id)) !== null
                  : t === 'zset'
                    ? (await journalRedis.zscore(q, id)) !== null
                    : false;
              if (has) where.push(q);
            }
          }
          for (const st of ['completed', 'failed']) {
            for (const q of await journalRedis.keys(`*runs-read-only*:${st}`))
              if ((await journalRedis.zscore(q, id)) !== null) where.push(q);
          }
          console.log(
            `DIAG run ${i} ${id}: record ${JSON.stringify(head)} journal(ttl ${jttl}) ${JSON.stringify(jr)} in ${JSON.stringify(where)} keys ${JSON.stringify(jobs)}`,
          );
        }
      }
      for (const { count } of app.deliveries.values()) {
        report.deliveries += count;
        if (count > 1) report.duplicates++;
      }
      for (const [key, d] of app.deliveries)
        if (d.count > 1) report.violations.push(`${key} (${d.tool}) delivered ${d.count} times`);
      for (const [i, id] of ids) {
        const rec = final.get(id);
        if (!rec) continue;
        report.statuses[rec.status] = (report.statuses[rec.status] ?? 0) + 1;
        report.calls += rec.calls.length;
        let unknown = false;
        for (const call of rec.calls as Loose[]) {
          const delivered = app.deliveries.get(`${id}:${call.index}`)?.count ?? 0;
          const result = call.outcome?.result;
          if (result?._tag === 'Failed' && result.error?.details?.reason === UNKNOWN_OUTCOME_REASON) {
            unknown = true;
            if (delivered > 1)
              report.violations.push(`run ${i} call ${call.index}: unknown outcome delivered twice`);
          } else if (rec.status === 'Completed' && result?._tag === 'Completed' && delivered !== 1) {
            report.violations.push(
              `run ${i} call ${call.index}: completed with a result but delivered ${delivered} times`,
            );
          } else if (result?.error?.name === 'AppCallDenied' && delivered !== 0) {
            report.violations.push(`run ${i} call ${call.index}: denied but delivered ${delivered} times`);
          }
        }
        if (unknown) {
          report.unknownOutcomes++;
          continue;
        }
        if (rec.status !== 'Completed') {
          report.violations.push(`run ${i}: ended ${rec.status} (${JSON.stringify(rec.result)})`);
          continue;
        }
        let want = expected.get(i) as Loose;
        if (spec(i).kind === 'parallel' && want) {
          // Promise.race: which side won depends on timing, faults included. The replay guarantee is
          // that the program saw the side the journal delivered first; the rest must match exactly.
          const entries = await journal.list(id);
          const seq = (index: number) => entries.find((e) => e.index === index)?.deliverySeq ?? Infinity;
          if (seq(5) < seq(4)) {
            want = { ...want, first: answerOf('slow', { run: i, k: 10 }) };
            report.raceFlips++;
          }
        }
        if (JSON.stringify(rec.result.value) !== JSON.stringify(want))
          report.violations.push(
            `run ${i}: result ${JSON.stringify(rec.result.value)} differs from fault-free ${JSON.stringify(want)}`,
          );
      }
    } finally {
      journalRedis.disconnect();
    }
    return report;
  } finally {
    await cluster?.stop();
    await app.close();
    await redis?.stop();
    await rcluster?.stop();
    await sentinel?.stop();
  }
}

/** The services' Redis configuration for a test Sentinel group (what a pod gets in sentinel mode). */
function sentinelRedisConfig(group: SentinelGroup): RedisConfig {
  return {
    ISLET_REDIS_MODE: 'sentinel',
    ISLET_REDIS_URL: 'redis://127.0.0.1',
    ISLET_REDIS_PASSWORD: group.password,
    ISLET_REDIS_SENTINELS: group.sentinels,
    ISLET_REDIS_SENTINEL_MASTER: group.masterName,
  };
}

/** Until a sentinel names the replica as the master (the failover is over), at most 30 s. */
async function waitForPromotion(group: SentinelGroup): Promise<void> {
  const [host, port] = group.sentinels.split(',')[0]!.split(':');
  const s = new Redis({ host: host!, port: Number(port), lazyConnect: true, maxRetriesPerRequest: 1 });
  s.on('error', () => {});
  try {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const addr = (await s
        .call('SENTINEL', 'get-master-addr-by-name', group.masterName)
        .catch(() => null)) as string[] | null;
      if (addr?.[1] === String(group.replicaPort)) return;
      await sleep(100);
    }
    throw new Error('the sentinels did not promote the replica within 30 s');
  } finally {
    s.disconnect();
  }
}

export function formatReport(r: ChaosReport): string {
  return [
    `runs: ${r.runs} (accepted ${r.accepted}; ${Object.entries(r.statuses)
      .map(([s, n]) => `${s} ${n}`)
      .join(', ')})`,
    `kills: ${r.runnerKills} runner SIGKILLs, ${r.gatewayRestarts} gateway restart, ${r.redisRestarts} redis restart, ${r.masterKills} Redis master SIGKILLs (failover ${r.failoverMs.join(', ') || '-'} ms)`,
    `cost: submit p50 ${r.submitP50Ms} ms, slowest submit within 15 s of a fault ${r.submitMaxAfterFaultMs} ms, runs with an extra execution ${r.extraExecutions}`,
    `calls: ${r.calls} journaled, ${r.deliveries} App deliveries, ${r.decisions} decisions`,
    `duplicates: ${r.duplicates}`,
    `lost: ${r.lost}`,
    `unknown outcomes (reported as AppCallFailed, not resent): ${r.unknownOutcomes}`,
    `Promise.race won by the slow side (matched against the journal's delivery order): ${r.raceFlips}`,
    `violations: ${r.violations.length}`,
  ].join('\n');
}
