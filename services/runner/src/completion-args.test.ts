/**
 * A job's completion's keys and arguments written with the worker's fixed parts made once
 * (completion-args.ts): the same array as BullMQ's `Scripts.moveToCompletedArgs`, its packed
 * options the same bytes, for tokens of every msgpack string length and for jobs whose options
 * differ (made again then). Real redis-server, BullMQ (its worker's Scripts).
 */
import { runJobOptions } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Job, Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CompletionArgsWriter } from './completion-args.ts';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
});
afterAll(async () => {
  await server.stop();
});

type ArgsOf = (job: Job, value: string, remove: unknown, token: string, fetchNext: boolean) => unknown[];

describe("a completion's arguments", () => {
  it("are BullMQ's own, the options' bytes included, their fixed parts made once", async () => {
    const name = 'completion-args';
    const connection = { host: '127.0.0.1', port: server.port };
    const queue = new Queue(name, { connection });
    const worker = new Worker(name, null, { connection, autorun: false, lockDuration: 12_345 });
    try {
      const scripts = (worker as unknown as { scripts: { moveToCompletedArgs: ArgsOf } }).scripts;
      const writer = CompletionArgsWriter.of(scripts);
      expect(writer).toBeDefined();
      await queue.add('run', { n: 1 }, runJobOptions('j1', 3));
      const job = (await Job.fromId(worker as unknown as Queue, 'j1')) as Job;
      // One clock for both (the arguments carry it).
      vi.useFakeTimers({ toFake: ['Date'], now: 1_800_000_000_000 });
      const tokens = [
        '',
        't',
        'x'.repeat(31),
        'x'.repeat(32),
        `${worker.id}:h:17`,
        'ü'.repeat(127),
        'y'.repeat(255),
        'z'.repeat(256),
        'w'.repeat(70_000),
      ];
      for (const token of tokens)
        for (const fetchNext of [true, false]) {
          const theirs = scripts.moveToCompletedArgs(
            job,
            '"completed"',
            job.opts.removeOnComplete,
            token,
            fetchNext,
          );
          const ours = writer?.args(job, '"completed"', job.opts.removeOnComplete, token, fetchNext);
          expect(ours).toEqual(theirs);
          expect(Buffer.compare(ours?.[21] as Buffer, theirs[21] as Buffer)).toBe(0);
        }
      expect(writer?.builds).toBe(1);
      // Across its slabs (16 KB each: ~150 of these a slab), no bytes handed out written over.
      const kept: [Buffer, Buffer][] = [];
      for (let i = 0; i < 400; i++) {
        const token = `${worker.id}:${'t'.repeat(i % 90)}:${i}`;
        const theirs = scripts.moveToCompletedArgs(
          job,
          '"completed"',
          job.opts.removeOnComplete,
          token,
          true,
        );
        const ours = writer?.args(job, '"completed"', job.opts.removeOnComplete, token, true);
        kept.push([ours?.[21] as Buffer, theirs[21] as Buffer]);
      }
      for (const [ours, theirs] of kept) expect(Buffer.compare(ours, theirs)).toBe(0);
      // Made before its job came (a hand-off's token): the same bytes, used once, for that token only.
      writer?.prepare(`${worker.id}:h:9`);
      const unprepared = writer?.args(
        job,
        '"completed"',
        job.opts.removeOnComplete,
        `${worker.id}:h:8`,
        true,
      );
      expect(writer?.preparedUses).toBe(0);
      for (const token of [`${worker.id}:h:9`, `${worker.id}:h:9`]) {
        const theirs = scripts.moveToCompletedArgs(
          job,
          '"completed"',
          job.opts.removeOnComplete,
          token,
          true,
        );
        const ours = writer?.args(job, '"completed"', job.opts.removeOnComplete, token, true);
        expect(Buffer.compare(ours?.[21] as Buffer, theirs[21] as Buffer)).toBe(0);
      }
      expect(writer?.preparedUses).toBe(1);
      expect(
        Buffer.compare(
          unprepared?.[21] as Buffer,
          scripts.moveToCompletedArgs(
            job,
            '"completed"',
            job.opts.removeOnComplete,
            `${worker.id}:h:8`,
            true,
          )[21] as Buffer,
        ),
      ).toBe(0);
      // Another job's options (another attempts, no removeOnComplete): made again, still BullMQ's.
      await queue.add('other', { n: 2 }, { jobId: 'j2', attempts: 1, failParentOnFailure: true });
      const other = (await Job.fromId(worker as unknown as Queue, 'j2')) as Job;
      for (const remove of [undefined, true, 7, { count: 3, age: 5 }]) {
        const theirs = scripts.moveToCompletedArgs(other, 'null', remove, 'tok', true);
        const ours = writer?.args(other, 'null', remove, 'tok', true);
        expect(ours).toEqual(theirs);
        expect(Buffer.compare(ours?.[21] as Buffer, theirs[21] as Buffer)).toBe(0);
      }
      expect(writer?.builds).toBe(5);
      expect(writer?.writes).toBe(tokens.length * 2 + 400 + 3 + 4);
    } finally {
      vi.useRealTimers();
      await worker.close();
      await queue.close();
    }
  });

  it("leave BullMQ's own to build them for Scripts of another version", () => {
    expect(
      CompletionArgsWriter.of({ version: '5.0.0', moveToFinishedKeys: [], getKeepJobs: () => 0, queue: {} }),
    ).toBe(undefined);
  });
});
