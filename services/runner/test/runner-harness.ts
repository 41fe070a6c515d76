/**
 * Shared set-up of the runner's one-server script tests (fetch-start, end-complete, lease-in-scripts):
 * a redis-server of their own, the real run store and journal, and a runner of one mode (fair share
 * on) around an executor that runs the real lifecycle. Each test file makes one harness, starts it
 * in `beforeAll` and closes it in `afterAll` (`onRunnerHarness` registers both); `close` also closes
 * every runner and share it made.
 */
import {
  createLogger,
  createMetrics,
  createRedis,
  generateSealKey,
  type Logger,
  loadConfig,
  type Sealer,
  sealerFromConfig,
} from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import {
  createCallJournal,
  createRunLifecycle,
  createRunStore,
  handOffKeys,
  type RunJobData,
  runJobOptions,
  type WriteFormat,
} from '@islet/runs';
import { type RedisServer, runFixture, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect } from 'vitest';
import { handingAdds } from '../../gateway/src/handoff-add-store.ts';
import type { ParkingWorker } from '../src/parking-worker.ts';
import { HandBackError, type RunExecutor } from '../src/run-executor.ts';
import type { ExecuteJob } from '../src/run-executor-types.ts';
import { createRunner, type RunnerDeps } from '../src/runner.ts';
import type { SkillExecutor } from '../src/skill-executor.ts';

/** The one mode these tests run in. */
export const mode = 'read-only' as const;

/** A runner's config for a test on `redisUrl`: a fresh seal key, a test token, the read-only mode, then `env`. */
export function runnerTestConfig(redisUrl: string, env: Record<string, string>) {
  return loadConfig({
    ISLET_REDIS_URL: redisUrl,
    ISLET_SEAL_KEYS: generateSealKey(),
    ISLET_INTERNAL_TOKEN: 'internal-token-for-tests',
    ISLET_RUNNER_MODES: mode,
    ...env,
  });
}

/** A run's successful end, as the executor hands it to `finish`. */
export const done = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: 1, logs: [] },
  text: '1',
};

/** The hand-off's keys of `mode`'s queue: idle workers and their registered terms. */
export const handOff = handOffKeys(`${QUEUE_PREFIX}:${runQueueName(mode)}:`, '');

/** Waits until `t`'s worker is registered idle (and so blocked on its pop). */
export async function untilIdle(redis: Redis, t: RunnerUnderTest): Promise<void> {
  await until(
    'the worker registered idle',
    async () => (await redis.zscore(handOff.idle, t.worker().id)) !== null,
  );
}

/** Polls `ok` until it holds; fails after `timeoutMs` (default 10 s) naming `what`. */
export async function until(
  what: string,
  ok: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface RunnerSetUpOptions {
  slots?: number;
  /** Held by the executor between the run's work and its end. */
  hold?: Promise<void>;
  /** Also notes `ended <true|false>` in `outcomes` when the end answers. */
  noteEnds?: boolean;
  /**
   * Direct hand-off on (ISLET_IDLE_HANDOFF): the runner registers while idle and `add` hands off
   * as the gateway's does (its run-queue store's add script). Off by default.
   */
  handOff?: boolean;
  /** More of the runner's settings. */
  env?: Record<string, string>;
  /** Called as the run's own work begins (where the real executor sends the program). */
  onWork?: (runId: string, job: ExecuteJob) => void;
  /** Called as the executor is entered, before the attempt's start (where the real one stamps `pickedUp`). */
  onExecute?: (runId: string, job: ExecuteJob) => void;
  /**
   * Read at each run's work, after `onWork`: a promise parks the run (its slot and lease given back,
   * as a binding call that waits) until it settles; the run then takes a slot again (`resume`).
   */
  parkFor?: (runId: string) => Promise<void> | undefined;
  /** The runner's fair share (a wrapper around the real one). */
  createShare?: RunnerDeps['createShare'];
}

/** A started harness's Redis: the server and one client on it. */
export interface RunnerHarnessRedis {
  server: RedisServer;
  redis: Redis;
}

export type RunnerHarness = ReturnType<typeof runnerHarness>;

/**
 * The stored format the harness's stores, runner and adds write: the config's default (`2`), or
 * format 1 when the environment names it (`ISLET_WRITE_FORMAT=1 npx vitest run …`; test/bench/README.md,
 * rounds 40 `format-two` and 41 `format-default`).
 */
const writeFormat: WriteFormat = process.env.ISLET_WRITE_FORMAT === '1' ? '1' : '2';
export type RunnerUnderTest = Awaited<ReturnType<RunnerHarness['setUp']>>;

/** `name`: the logger's and the metrics' component name. */
export function runnerHarness(name: string) {
  const logger: Logger = createLogger({ name, level: 'silent' });
  const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };
  const sealer: Sealer = sealerFromConfig(base);
  const closers: Array<() => Promise<void>> = [];
  let started: RunnerHarnessRedis | undefined;

  const current = (): RunnerHarnessRedis => {
    if (!started) throw new Error('runner harness not started');
    return started;
  };

  /** Starts the redis-server and its client. */
  async function start(): Promise<RunnerHarnessRedis> {
    const server = await startRedis({ appendOnly: false });
    started = { server, redis: createRedis(server.url) };
    return started;
  }

  /** Closes what `onClose` was given (last first), then the client and the server. Safe after a failed start. */
  async function close(): Promise<void> {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    closers.length = 0;
    started?.redis.disconnect();
    await started?.server.stop();
    started = undefined;
  }

  /** Runs `c` on `close`, before the server stops. */
  const onClose = (c: () => Promise<void>): void => {
    closers.push(c);
  };

  const lifecycle = () => {
    const { redis } = current();
    return createRunLifecycle({
      runs: createRunStore(redis, sealer, { writeFormat }),
      journal: createCallJournal({ redis, sealer, writeFormat }),
    });
  };

  async function newRun(id: string, tenant = 'acme') {
    const run = runFixture(id, { tenant, mode });
    await createRunStore(current().redis, sealer, { writeFormat }).create(run);
    return run;
  }

  /**
   * Commands Redis ran, in order, as MONITOR shows them (name lower-cased, then arguments); `sent`:
   * those a client sent (a script's own commands left out).
   */
  let monitors = 0;
  /**
   * MONITOR from now on. `stop` first sends an ECHO of its own and waits until MONITOR shows it:
   * MONITOR's lines come on their own connection, so a reply on another (the count a test waited
   * for) can be read before the lines of the commands that ran before it; stopped at once, a
   * capture could miss them (seen empty under load). The marker is left out of what is captured.
   */
  async function monitor(): Promise<{ seen: string[][]; sent: string[][]; stop: () => Promise<void> }> {
    const mon = await current().redis.monitor();
    const seen: string[][] = [];
    const sent: string[][] = [];
    const marker = `islet-monitor-end-${process.pid}-${++monitors}`;
    let markerSeen: () => void = () => {};
    const reached = new Promise<void>((resolve) => {
      markerSeen = resolve;
    });
    mon.on('monitor', (_time: string, args: string[], source: string) => {
      const command = [String(args[0]).toLowerCase(), ...args.slice(1).map(String)];
      if (command[0] === 'echo' && command[1] === marker) return markerSeen();
      seen.push(command);
      if (source !== 'lua') sent.push(command);
    });
    // Lines still in flight when the monitor is disconnected reach ioredis as replies to no
    // command, which it reports as an `error` event: harmless once stopped, a failure before.
    let stopped = false;
    mon.on('error', (err: Error) => {
      if (!stopped) throw err;
    });
    return {
      seen,
      sent,
      stop: async () => {
        if (stopped) return;
        try {
          // Best effort: a test that stopped Redis on purpose still stops its monitor (bounded wait).
          await current().redis.echo(marker);
          let bound: NodeJS.Timeout | undefined;
          await Promise.race([reached, new Promise((r) => (bound = setTimeout(r, 10_000)))]);
          clearTimeout(bound);
        } catch {
        } finally {
          stopped = true;
          mon.disconnect();
        }
      },
    };
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
    opts: RunnerSetUpOptions = {},
  ) {
    const { server, redis } = current();
    const config = loadConfig({
      ISLET_REDIS_URL: server.url,
      ...base,
      ISLET_RUNNER_MODES: mode,
      ISLET_RUNNER_CONCURRENCY: String(opts.slots ?? 4),
      ISLET_TENANT_POOL_SHARE: '0.5',
      ISLET_TENANT_SHARE_RECHECK_MS: '60000',
      ISLET_IDLE_HANDOFF: opts.handOff ? 'on' : 'off',
      ISLET_WRITE_FORMAT: writeFormat,
      ...opts.env,
    });
    const life = lifecycle();
    const outcomes: string[] = [];
    const executor: RunExecutor = {
      execute: async (job) => {
        opts.onExecute?.(job.runId, job);
        const begun = await life.beginAttempt(job.runId, job.lease);
        if (begun.deferred) {
          outcomes.push('deferred');
          return 'deferred';
        }
        if (!begun.run || begun.attempt === undefined) {
          outcomes.push('skipped');
          return 'skipped';
        }
        opts.onWork?.(job.runId, job);
        await redis.echo(`work ${job.runId} ${queueTag}`);
        const answer = opts.parkFor?.(job.runId);
        if (answer && job.slot?.park(() => undefined)) {
          await answer;
          await job.slot.resume();
        }
        // A hand-back (the close's grace over) while held: the job goes back, as the real one's.
        await new Promise<void>((resolve, reject) => {
          const handBack = () => reject(new HandBackError('handed back'));
          if (job.handBack.aborted) return handBack();
          job.handBack.addEventListener('abort', handBack, { once: true });
          void Promise.resolve(opts.hold).then(resolve);
        }).catch((err: unknown) => {
          outcomes.push('handed back');
          throw err;
        });
        // As the real executor: a resume's lease take-back answers before the end gives it back.
        const settling = job.slot?.leaseEnding?.();
        if (settling) await settling;
        await life.finish(
          begun.run,
          opts.noteEnds ? { ...done, onEnded: (ended) => outcomes.push(`ended ${ended}`) } : done,
        );
        outcomes.push(`completed ${begun.attempt}`);
        return 'completed';
      },
      giveUp: async () => undefined,
      head: async () => null,
      ...(fused ? { fetchedStart: life.fetchedStart } : {}),
    };
    const metrics = createMetrics({ component: name, defaults: false });
    const runner = createRunner({
      config,
      executor,
      metrics,
      logger,
      ...(skills ? { skills } : {}),
      ...(opts.createShare ? { createShare: opts.createShare } : {}),
    });
    const queue = new Queue<RunJobData>(runQueueName(mode), {
      connection: { host: '127.0.0.1', port: server.port },
      prefix: QUEUE_PREFIX,
    });
    // Its mode, as the gateway's (run-queue-store.ts): the adds read compact registrations too.
    if (opts.handOff) handingAdds(queue, mode);
    let closed = false;
    const closeRunner = async () => {
      if (closed) return;
      closed = true;
      await runner.close(1000);
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      const found = await redis.keys('islet:{pool:read-only}:*');
      if (found.length) await redis.del(...found);
    };
    onClose(closeRunner);
    await runner.start();
    const add = (id: string, tenant = 'acme', attempts = 1) =>
      writeFormat === '2'
        ? addLean(id, tenant, attempts)
        : queue.add('run', { runId: id, tenant, enqueuedAtMs: Date.now() }, runJobOptions(id, attempts));
    /** A run's job as format 2 writes it (run-queue-store.ts): no `runId` in its data, the job id is the run's. */
    const addLean = (id: string, tenant = 'acme', attempts = 1) =>
      queue.add('run', { tenant, enqueuedAtMs: Date.now() }, runJobOptions(id, attempts));
    const worker = () => runner.workersForTest().get(mode) as ParkingWorker<RunJobData>;
    /** The runner's close alone (the queue and its jobs stay). */
    const stop = () => runner.close(1000);
    return { config, queue, outcomes, metrics, add, addLean, close: closeRunner, stop, worker };
  }

  /** A first run through `t`'s runner to completion: it loads the scripts, so later calls are the path's own. */
  async function warmUp(t: { add: (id: string) => Promise<unknown>; queue: Queue<RunJobData> }, id: string) {
    await newRun(id);
    await t.add(id);
    await until(`${id} to complete`, async () => (await t.queue.getCompletedCount()) === 1);
  }

  return { logger, base, sealer, start, close, onClose, lifecycle, newRun, monitor, setUp, warmUp };
}

/**
 * `runnerHarness(name)` started in the calling file's (or describe's) `beforeAll` and closed in its
 * `afterAll`; `started` is handed the server and its client once up (the file keeps its own
 * `redis`, read inside tests).
 */
export function onRunnerHarness(name: string, started?: (up: RunnerHarnessRedis) => void): RunnerHarness {
  const h = runnerHarness(name);
  beforeAll(async () => {
    const up = await h.start();
    started?.(up);
  });
  afterAll(() => h.close());
  return h;
}

/**
 * The script calls a client sent (their hash, or `eval`) before the ECHO that marks `runId`'s work
 * (`runnerHarness`'s executor); an idle worker's registration and its removal behind the pop (not
 * propagated, never a fetch) left out.
 */
export function scriptsBeforeWork(seen: string[][], runId: string): string[] {
  const work = seen.findIndex((c) => c[0] === 'echo' && c[1]?.startsWith(`work ${runId} `));
  expect(work).toBeGreaterThan(0);
  return seen
    .slice(0, work)
    .filter(
      (c) => c[0] === 'evalsha' || (c[0] === 'eval' && !c[1]?.startsWith('redis.set_repl(redis.REPL_NONE)')),
    )
    .map((c) => (c[0] === 'evalsha' ? (c[1] ?? '') : 'eval'));
}
