/**
 * The baseline of the Redis-commands row: BullMQ alone carrying trivial jobs, with a run's job
 * options (`runJobOptions`), the runner's worker settings (prefix, slots) and the cluster figure's
 * load (16 producers, each adding a job and waiting for its completion), on its own redis-server.
 * Counted as the cluster's row is (INFO commandstats delta, commands inside scripts included), so
 * the ratio shows what Islet's own journal, admission and wake-ups add to the queue's floor, which
 * no setting of Islet can go under while BullMQ carries the runs.
 */

import { QUEUE_PREFIX } from '@islet/protocol';
import { runJobOptions } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';

/** Calls per command name in `INFO commandstats`. */
export function commandCalls(info: string): Map<string, number> {
  return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** Commands per job (INFO excluded) over `jobs` jobs, after a warm-up. */
export async function bullmqCommandsPerJob(slots: number, jobs = 100): Promise<number> {
  const server = await startRedis({ appendOnly: false });
  const connect = () => new Redis(server.url, { maxRetriesPerRequest: null });
  const [queueConnection, workerConnection, admin] = [connect(), connect(), connect()];
  const name = `floor-${process.pid}`;
  const queue = new Queue(name, { connection: queueConnection, prefix: QUEUE_PREFIX });
  const waiting = new Map<string, () => void>();
  const worker = new Worker(name, async () => 1, {
    connection: workerConnection,
    prefix: QUEUE_PREFIX,
    concurrency: slots,
  });
  worker.on('completed', (job) => waiting.get(job.id ?? '')?.());
  let next = 0;
  const one = async () => {
    const id = `j${next++}`;
    const done = new Promise<void>((resolve) => waiting.set(id, resolve));
    await queue.add('run', { runId: id }, runJobOptions(id, 3));
    await done;
    waiting.delete(id);
  };
  const load = async (count: number) => {
    let left = count;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left-- > 0) await one();
      }),
    );
  };
  try {
    await load(32);
    const before = commandCalls(await admin.info('commandstats'));
    await load(jobs);
    const after = commandCalls(await admin.info('commandstats'));
    let total = 0;
    for (const [command, calls] of after) {
      const delta = calls - (before.get(command) ?? 0);
      total += command === 'info' ? Math.max(0, delta - 1) : delta;
    }
    return total / jobs;
  } finally {
    await worker.close();
    await queue.close();
    for (const c of [queueConnection, workerConnection, admin]) c.disconnect();
    await server.stop();
  }
}
