/**
 * The file-wide redis-server of the runner's tests that make their own runner (`createRunner`) around
 * a fake executor (runner-release, runner-stop-signal, runner-slot-metrics): started in `beforeAll`
 * (no append-only file), stopped in `afterAll`; a runner config on it and a read-only queue on it.
 */
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { type RunJobData, runJobOptions } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { afterAll, beforeAll } from 'vitest';
import { mode, runnerTestConfig } from './runner-harness.ts';

/** Call at a file's top level: its hooks start and stop the server; read it inside tests. */
export function runnerServer() {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedis({ appendOnly: false });
  });
  afterAll(async () => {
    await server?.stop();
  });
  const up = (): RedisServer => {
    if (!server) throw new Error("no redis-server: runnerServer's beforeAll has not run");
    return server;
  };
  return {
    url: () => up().url,
    /** runnerTestConfig on this server. */
    config: (env: Record<string, string>) => runnerTestConfig(up().url, env),
    /** A BullMQ queue of the read-only mode on this server (the test closes it). */
    queue: () =>
      new Queue<RunJobData>(runQueueName(mode), {
        connection: { host: '127.0.0.1', port: up().port },
        prefix: QUEUE_PREFIX,
      }),
  };
}

/** Adds run `runId`'s job (tenant acme, one attempt) to `queue`, as a submit does. */
export const addRun = (queue: Queue<RunJobData>, runId: string) =>
  queue.add('run', { runId, tenant: 'acme', enqueuedAtMs: Date.now() }, runJobOptions(runId, 1));
