/**
 * On one server a run's fair-share lease rides in its attempt's start (lease-and-begin-9) and its
 * end (finish-run-release-19): the pick-up costs one script call, a refused lease writes nothing
 * of the run and the runner defers the job as before (no attempt spent, the deferral counted), the
 * end gives the lease back and hands the freed slot on, and a run ended elsewhere is still
 * released by the runner. Real redis-server, real fair share, run store and journal; counted by
 * Redis's own command statistics, never by time.
 */
import { createMetrics, keys, loadConfig } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { createRunStore, noteQueued, type RunJobData, runJobOptions } from '@islet/runs';
import { type RedisServer, runFixture } from '@islet/testkit';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { done, onRunnerHarness } from '../test/runner-harness.ts';
import { shareConfig } from '../test/share-config.ts';
import { createFairShare, type FairShareDeps } from './fair-share.ts';
import type { RunExecutor } from './run-executor.ts';
import { createRunner } from './runner.ts';

let server: RedisServer;
let redis: Redis;
const h = onRunnerHarness('lease-in-scripts-test', (up) => {
  ({ server, redis } = up);
});
const { logger, base, sealer, lifecycle } = h;

const on = { ISLET_TENANT_POOL_SHARE: 0.5, ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0 };
const runs = () => createRunStore(redis, sealer);

function share(promote: FairShareDeps['promote'] = async () => true, concurrency = 4) {
  const s = createFairShare({
    redis,
    logger,
    promote,
    config: shareConfig({ ISLET_RUNNER_CONCURRENCY: concurrency, ...on }),
  });
  h.onClose(() => s.close());
  return s;
}

async function newRun(id: string, tenant = 'acme') {
  const run = runFixture(id, { tenant });
  await runs().create(run);
  return run;
}

/** Script calls Redis executed so far (EVAL and EVALSHA, as counted by INFO commandstats). */
async function scriptCalls(): Promise<number> {
  const text = await redis.info('commandstats');
  let n = 0;
  for (const m of text.matchAll(/^cmdstat_(eval|evalsha):calls=(\d+)/gm)) n += Number(m[2]);
  return n;
}

const leases = (tenant = 'acme') => keys.poolTenantLeases('read-only', tenant);

async function clean() {
  const found = await redis.keys('islet:{pool:read-only}:*');
  if (found.length) await redis.del(...found);
}

describe('a run lease in the attempt start and end scripts (one server)', () => {
  it('the pick-up is one script call; the end gives the lease back in its own script', async () => {
    await clean();
    const fair = share();
    await fair.start(['read-only']);
    const life = lifecycle();
    // Loads the scripts, so the counted calls below are the path's own (no NOSCRIPT retry).
    await newRun('warm');
    const warm = await fair.runLease('read-only', 'acme', 'warm');
    const warmed = await life.beginAttempt('warm', warm);
    if (!warmed.run) throw new Error('no run');
    await life.finish(warmed.run, done);

    await newRun('r1');
    const lease = await fair.runLease('read-only', 'acme', 'r1');
    expect(lease).toBeDefined();
    const before = await scriptCalls();
    const begun = await life.beginAttempt('r1', lease);
    expect((await scriptCalls()) - before).toBe(1);
    expect(begun.deferred).toBe(false);
    expect(begun.attempt).toBe(1);
    expect(lease?.answer?.ok).toBe(true);
    expect(await redis.zscore(leases(), 'r1')).not.toBeNull();
    expect(await redis.zscore(keys.poolBusy('read-only'), 'r1')).not.toBeNull();
    expect(await redis.hget(keys.run('r1'), 'status')).toBe('Running');

    const ending = await scriptCalls();
    if (!begun.run) throw new Error('no run');
    expect(await life.finish(begun.run, done)).toBe(true);
    expect((await scriptCalls()) - ending).toBe(1);
    expect(lease?.endReleased).toBe(true);
    expect(await redis.zscore(leases(), 'r1')).toBeNull();
    expect(await redis.zscore(keys.poolBusy('read-only'), 'r1')).toBeNull();
    expect(await redis.hget(keys.run('r1'), 'status')).toBe('Completed');
    // A second release of the same lease (the runner's, had it not known) changes nothing.
    await fair.release('read-only', 'acme', 'r1');
    expect(await redis.zcard(keys.poolBusy('read-only'))).toBe(0);
  });

  it('a refused lease writes nothing of the run and the job waits deferred; the end hands the freed slot on', async () => {
    await clean();
    const promoted: string[] = [];
    const fair = share(async (_mode, jobId) => {
      promoted.push(jobId);
      return true;
    });
    await fair.start(['read-only']);
    const life = lifecycle();
    // Pool 4, share 2: acme holds two slots while another tenant has work queued.
    const held = [];
    for (const id of ['h1', 'h2']) {
      await newRun(id);
      const lease = await fair.runLease('read-only', 'acme', id);
      const begun = await life.beginAttempt(id, lease);
      expect(begun.deferred).toBe(false);
      held.push(begun);
    }
    await noteQueued(redis, on, 'read-only', 'other');
    await newRun('r2');
    const record = await redis.hgetall(keys.run('r2'));
    const lease = await fair.runLease('read-only', 'acme', 'r2');
    const begun = await life.beginAttempt('r2', lease);
    expect(begun.deferred).toBe(true);
    expect(begun.run).toBeNull();
    expect(lease?.answer).toMatchObject({ ok: false, limit: 2 });
    expect(await redis.hgetall(keys.run('r2'))).toEqual(record);
    expect(await redis.exists(`islet:journal:{r2}`)).toBe(0);
    expect(await redis.zscore(keys.poolTenantDeferred('read-only', 'acme'), 'r2')).not.toBeNull();
    expect(await redis.zscore(leases(), 'r2')).toBeNull();

    // The other tenant's queued job leaves (picked up elsewhere): h1's end leases its slot to r2.
    await redis.del(keys.poolQueued('read-only'));
    const first = held[0]?.run;
    if (!first) throw new Error('no run');
    await life.finish(first, done);
    await fair.close();
    expect(promoted).toEqual(['r2']);
    expect(await redis.zscore(leases(), 'r2')).not.toBeNull();
    expect(await redis.zscore(leases(), 'h1')).toBeNull();
  });

  it('runner: a refused lease defers the job without spending an attempt; a run ended elsewhere is released by the runner', async () => {
    await clean();
    const config = loadConfig({
      ISLET_REDIS_URL: server.url,
      ...base,
      ISLET_RUNNER_MODES: 'read-only',
      ISLET_RUNNER_CONCURRENCY: '4',
      ISLET_TENANT_POOL_SHARE: '0.5',
      ISLET_TENANT_SHARE_RECHECK_MS: '60000',
    });
    const life = lifecycle();
    const outcomes: string[] = [];
    // A thin executor around the real lifecycle: the attempt's start with the job's lease, then
    // the end (the real executor's path without the engine).
    const executor: RunExecutor = {
      execute: async (job) => {
        const begun = await life.beginAttempt(job.runId, job.lease);
        if (begun.deferred) {
          outcomes.push('deferred');
          return 'deferred';
        }
        if (!begun.run || begun.attempt === undefined) {
          outcomes.push('skipped');
          return 'skipped';
        }
        await life.finish(begun.run, done);
        outcomes.push('completed');
        return 'completed';
      },
      giveUp: async () => undefined,
      head: async () => null,
    };
    const released: string[] = [];
    const metrics = createMetrics({ component: 'lease-in-scripts-test', defaults: false });
    const runner = createRunner({
      config,
      executor,
      metrics,
      logger,
      createShare: (d) => {
        const real = createFairShare(d);
        return {
          ...real,
          release: async (...args: Parameters<typeof real.release>) => {
            released.push(args[2]);
            await real.release(...args);
          },
        };
      },
    });
    const queue = new Queue<RunJobData>(runQueueName('read-only'), {
      connection: { host: '127.0.0.1', port: server.port },
      prefix: QUEUE_PREFIX,
    });
    h.onClose(async () => {
      await runner.close(1000);
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    });
    await runner.start();
    const until = async (what: string, ok: () => Promise<boolean>) => {
      const deadline = Date.now() + 10_000;
      while (!(await ok())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    // Completed by its runner: the end gave the lease back, the runner released nothing.
    await newRun('j1');
    await queue.add('run', { runId: 'j1', tenant: 'acme', enqueuedAtMs: Date.now() }, runJobOptions('j1', 1));
    await until('j1 to complete', async () => (await queue.getCompletedCount()) === 1);
    expect(outcomes).toEqual(['completed']);
    expect(released).toEqual([]);
    expect(await redis.zcard(keys.poolBusy('read-only'))).toBe(0);

    // Ended elsewhere (cancelled before its pick-up): the lease granted at its start is released
    // by the runner.
    const j2 = await newRun('j2');
    await life.cancel(j2, 'cancelled before it started');
    await queue.add('run', { runId: 'j2', tenant: 'acme', enqueuedAtMs: Date.now() }, runJobOptions('j2', 1));
    await until('j2 to complete', async () => (await queue.getCompletedCount()) === 2);
    await until('j2 released', async () => released.length === 1);
    expect(outcomes).toEqual(['completed', 'skipped']);
    expect(released).toEqual(['j2']);
    expect(await redis.zcard(keys.poolBusy('read-only'))).toBe(0);

    // Refused: acme holds its share (two leases) while another tenant has work queued.
    const mode = 'read-only';
    const fair = createFairShare({ redis, logger, promote: async () => true, config });
    for (const id of ['x1', 'x2']) expect((await fair.acquire(mode, 'acme', id)).ok).toBe(true);
    await noteQueued(redis, on, mode, 'other');
    await newRun('j3');
    const record = await redis.hgetall(keys.run('j3'));
    await queue.add('run', { runId: 'j3', tenant: 'acme', enqueuedAtMs: Date.now() }, runJobOptions('j3', 2));
    await until('j3 to be deferred', async () => (await queue.getDelayedCount()) === 1);
    const job = await queue.getJob('j3');
    expect(job?.attemptsMade).toBe(0);
    expect(outcomes).toEqual(['completed', 'skipped', 'deferred']);
    expect(await redis.hgetall(keys.run('j3'))).toEqual(record);
    expect(released).toEqual(['j2']);
    expect(await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'j3')).not.toBeNull();
    const deferrals = await metrics.registry.getSingleMetricAsString('islet_tenant_share_deferrals_total');
    expect(deferrals).toMatch(/islet_tenant_share_deferrals_total\{[^}]*mode="read-only"[^}]*\} 1/);
  });
});
