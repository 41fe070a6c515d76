/**
 * On one server a run whose fetch started it ends in its job's completion (end-complete-store.ts):
 * the run's end (with its lease given back) and BullMQ's moveToFinished are one script call, not
 * the end's script and then BullMQ's. The end is written and its wake-up sent; a completion whose
 * call fails still leaves the run ended once. Real redis-server, real BullMQ, real fair share, run
 * store and journal; the calls are read from MONITOR (their hashes and order), never from time.
 */

import { createHash } from 'node:crypto';
import {
  channels,
  createLogger,
  createMetrics,
  createRedis,
  generateSealKey,
  keys,
  loadConfig,
  sealerFromConfig,
} from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import {
  createCallJournal,
  createRunLifecycle,
  createRunStore,
  FINISH_RUN_RELEASE,
  type RunJobData,
  runJobOptions,
} from '@islet/runs';
import { type RedisServer, runFixture, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { END_AND_COMPLETE_SHA } from './end-complete-store.ts';
import type { ParkingWorker } from './parking-worker.ts';
import type { RunExecutor } from './run-executor.ts';
import { createRunner } from './runner.ts';
import type { SkillExecutor } from './skill-executor.ts';

let server: RedisServer;
let redis: Redis;
const logger = createLogger({ name: 'end-complete-test', level: 'silent' });
const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };
const closers: Array<() => Promise<void>> = [];
const sealer = sealerFromConfig(base);
const mode = 'read-only' as const;

beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
  redis = createRedis(server.url);
});
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  redis?.disconnect();
  await server?.stop();
});

const lifecycle = () =>
  createRunLifecycle({ runs: createRunStore(redis, sealer), journal: createCallJournal({ redis, sealer }) });

async function newRun(id: string, tenant = 'acme') {
  const run = runFixture(id, { tenant, mode });
  await createRunStore(redis, sealer).create(run);
  return run;
}

const done = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: 1, logs: [] },
  text: '1',
};

async function until(what: string, ok: () => Promise<boolean>) {
  const deadline = Date.now() + 10_000;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Commands Redis ran, in order, as MONITOR shows them (name lower-cased, then arguments); `sent`:
 * those a client sent (a script's own commands left out).
 */
async function monitor(): Promise<{ seen: string[][]; sent: string[][]; stop: () => void }> {
  const mon = await redis.monitor();
  const seen: string[][] = [];
  const sent: string[][] = [];
  mon.on('monitor', (_time: string, args: string[], source: string) => {
    const command = [String(args[0]).toLowerCase(), ...args.slice(1).map(String)];
    seen.push(command);
    if (source !== 'lua') sent.push(command);
  });
  return { seen, sent, stop: () => mon.disconnect() };
}

/**
 * A runner of one mode, fair share on, around an executor that begins the attempt with the job's
 * lease (the real lifecycle), marks the run's own work with an ECHO, then ends the run. `fused`:
 * the executor lets fetches start runs (as the real one does); else each start is its own script.
 */
async function setUp(
  queueTag: string,
  fused: boolean,
  skills?: SkillExecutor,
  opts: { slots?: number; hold?: Promise<void> } = {},
) {
  const config = loadConfig({
    ISLET_REDIS_URL: server.url,
    ...base,
    ISLET_RUNNER_MODES: mode,
    ISLET_RUNNER_CONCURRENCY: String(opts.slots ?? 4),
    ISLET_TENANT_POOL_SHARE: '0.5',
    ISLET_TENANT_SHARE_RECHECK_MS: '60000',
  });
  const life = lifecycle();
  const outcomes: string[] = [];
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
      await redis.echo(`work ${job.runId} ${queueTag}`);
      await opts.hold;
      await life.finish(begun.run, { ...done, onEnded: (ended) => outcomes.push(`ended ${ended}`) });
      outcomes.push(`completed ${begun.attempt}`);
      return 'completed';
    },
    giveUp: async () => undefined,
    head: async () => null,
    ...(fused ? { fetchedStartArgs: life.fetchedStartArgs } : {}),
  };
  const metrics = createMetrics({ component: 'end-complete-test', defaults: false });
  const runner = createRunner({ config, executor, metrics, logger, ...(skills ? { skills } : {}) });
  const queue = new Queue<RunJobData>(runQueueName(mode), {
    connection: { host: '127.0.0.1', port: server.port },
    prefix: QUEUE_PREFIX,
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await runner.close(1000);
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    const found = await redis.keys('islet:{pool:read-only}:*');
    if (found.length) await redis.del(...found);
  };
  closers.push(close);
  await runner.start();
  const add = (id: string, tenant = 'acme', attempts = 1) =>
    queue.add('run', { runId: id, tenant, enqueuedAtMs: Date.now() }, runJobOptions(id, attempts));
  const worker = () => runner.workersForTest().get(mode) as ParkingWorker<RunJobData>;
  return { config, queue, outcomes, metrics, add, close, worker };
}

/** A first run through `t`'s runner to completion: it loads the scripts, so later calls are the path's own. */
async function warmUp(t: Awaited<ReturnType<typeof setUp>>, id: string): Promise<void> {
  await newRun(id);
  await t.add(id);
  await until(`${id} to complete`, async () => (await t.queue.getCompletedCount()) === 1);
}

/** BullMQ's own completion script's hash: the call the fused one replaces. */
const COMPLETE_SHA = createHash('sha1').update(moveToFinished.content).digest('hex');

/** Script hashes a client sent (EVALSHA), in order. */
const shas = (sent: string[][]) => sent.filter((c) => c[0] === 'evalsha').map((c) => c[1] ?? '');

/** The end events of a run's stream. */
async function endEvents(runId: string): Promise<number> {
  const events = await redis.xrange(keys.runEvents(runId), '-', '+');
  return events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end').length;
}

describe("a run's end in its job's completion (one server)", () => {
  it('the end and the completion are one script call: the end written, its waiter woken, the lease given back', async () => {
    const t = await setUp('fused-end', true);
    const sub = createRedis(server.url);
    try {
      await warmUp(t, 'ew');
      await newRun('e1');
      const heard: string[] = [];
      sub.on('message', (_ch: string, msg: string) => heard.push(msg));
      await sub.subscribe(channels.runEvents);
      const fused = t.worker().fusedCompletions;
      const m = await monitor();
      try {
        await t.add('e1');
        await until('e1 to complete', async () => (await t.queue.getCompletedCount()) === 2);
      } finally {
        m.stop();
      }
      const sent = shas(m.sent);
      expect(sent.filter((s) => s === END_AND_COMPLETE_SHA)).toHaveLength(1);
      // Neither the end's own script nor BullMQ's completion went on their own.
      expect(sent).not.toContain(FINISH_RUN_RELEASE.sha);
      expect(sent).not.toContain(COMPLETE_SHA);
      expect(t.worker().fusedCompletions).toBe(fused + 1);
      expect(await redis.hget(keys.run('e1'), 'status')).toBe('Completed');
      expect(await endEvents('e1')).toBe(1);
      // The end's answer reaches the run's caller once the fused call answered: this end was written.
      await until('the end told', async () => t.outcomes.filter((o) => o === 'ended true').length === 2);
      await until('the end to be heard', async () => heard.some((h) => h.startsWith('e1')));
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
      expect(await redis.zcard(keys.poolTenantLeases(mode, 'acme'))).toBe(0);
    } finally {
      sub.disconnect();
      await t.close();
    }
  });

  it("a job waiting for the slot takes its lease only after the fused call gave the ended run's back: no deferral", async () => {
    // One slot in the pool, one tenant: a lease seen still held means a full pool, and a deferral.
    let hold!: () => void;
    const held = new Promise<void>((r) => {
      hold = r;
    });
    const t = await setUp('fused-order', true, undefined, { slots: 1, hold: held });
    try {
      // The fused call reaches Redis late (a busy connection, a slow network): a job let through
      // when it was sent, before its answer, would take its lease first, on another connection.
      const client = (await t.worker().client) as unknown as Redis;
      const evalsha = client.evalsha.bind(client) as (...a: unknown[]) => Promise<unknown>;
      let late = 0;
      (client as unknown as { evalsha: (...a: unknown[]) => Promise<unknown> }).evalsha = (...a) => {
        if (a[0] !== END_AND_COMPLETE_SHA) return evalsha(...a);
        late++;
        return new Promise((r) => setTimeout(r, 100)).then(() => evalsha(...a));
      };
      for (const id of ['o1', 'o2', 'o3']) await newRun(id);
      await t.queue.addBulk(
        ['o1', 'o2', 'o3'].map((id) => ({
          name: 'run',
          data: { runId: id, tenant: 'acme', enqueuedAtMs: Date.now() },
          opts: runJobOptions(id, 1),
        })),
      );
      await until('o1 to start', async () => (await redis.hget(keys.run('o1'), 'status')) === 'Running');
      hold();
      const deferrals = async () =>
        Number(
          /islet_tenant_share_deferrals_total\{[^}]*\} (\d+)/.exec(
            await t.metrics.registry.getSingleMetricAsString('islet_tenant_share_deferrals_total'),
          )?.[1] ?? 0,
        );
      await until(
        'the three to complete, or one deferred',
        async () => (await deferrals()) > 0 || (await t.queue.getCompletedCount()) === 3,
      );
      expect(await deferrals()).toBe(0);
      expect(await t.queue.getDelayedCount()).toBe(0);
      expect(late).toBeGreaterThanOrEqual(2);
      for (const id of ['o1', 'o2', 'o3']) expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
      expect(t.outcomes.filter((o) => o.startsWith('completed'))).toEqual([
        'completed 1',
        'completed 1',
        'completed 1',
      ]);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('a completion whose fused call fails still leaves the run ended, once: the end alone follows', async () => {
    let hold!: () => void;
    const held = new Promise<void>((r) => {
      hold = r;
    });
    const t = await setUp('fused-fail', true, undefined, { hold: held });
    try {
      await newRun('x1');
      await t.add('x1');
      await until('x1 to start', async () => (await redis.hget(keys.run('x1'), 'status')) === 'Running');
      // BullMQ's completion writes to the queue's completed set: another type there makes its
      // part of the fused script fail, after the end's part ran.
      const completedKey = `${QUEUE_PREFIX}:${runQueueName(mode)}:completed`;
      await redis.set(completedKey, 'not a sorted set');
      const m = await monitor();
      try {
        hold();
        await until('the end alone', async () => shas(m.sent).includes(FINISH_RUN_RELEASE.sha));
      } finally {
        m.stop();
      }
      const sent = shas(m.sent);
      expect(sent.indexOf(END_AND_COMPLETE_SHA)).toBeGreaterThanOrEqual(0);
      expect(sent.indexOf(FINISH_RUN_RELEASE.sha)).toBeGreaterThan(sent.indexOf(END_AND_COMPLETE_SHA));
      expect(await redis.hget(keys.run('x1'), 'status')).toBe('Completed');
      expect(await endEvents('x1')).toBe(1);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
      await redis.del(completedKey);
    } finally {
      await t.close();
    }
  });
});
