// A run's add built without Queue.add (run-add-store.ts) against BullMQ's own, on a real
// redis-server: the script call's arguments byte for byte, the job BullMQ reads back, the hand-off
// applied alike, and what goes to Queue.add (a `waiting` listener, ids BullMQ refuses).

import { createRedis, type Redis } from '@islet/core';
import { QUEUE_PREFIX } from '@islet/protocol';
import { handOffKeys, runJobOptions } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { Packr, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HAND_OFF_ADD_SHA, handingAdds } from './handoff-add-store.ts';
import { runAdds } from './run-add-store.ts';

let server: RedisServer;
let redis: Redis;
const queues: Queue[] = [];

beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
  redis = createRedis(server.url);
});

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  redis?.disconnect();
  await server?.stop();
});

function queue(name: string): Queue {
  const q = new Queue(name, { connection: redis, prefix: QUEUE_PREFIX });
  queues.push(q);
  return q;
}

/** Every `execCommand` call's name and arguments, passed on to the real one. */
function recordCalls(q: Queue): Array<{ name: string; args: unknown[] }> {
  const scripts = (
    q as unknown as { scripts: { execCommand(c: unknown, n: string, a: unknown[]): Promise<unknown> } }
  ).scripts;
  const exec = scripts.execCommand.bind(scripts);
  const calls: Array<{ name: string; args: unknown[] }> = [];
  scripts.execCommand = (client, name, args) => {
    calls.push({ name, args });
    return exec(client, name, args);
  };
  return calls;
}

/** BullMQ's encoder (its `scripts.js`), as run-add-store.ts packs. */
const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

const data = {
  runId: '3f1c0b8e-8a77-4c55-9d0e-2b1f3f1d9a10',
  tenant: 'acme',
  enqueuedAtMs: 1_764_000_000_123,
};

describe('a run job added without Queue.add', () => {
  it("sends BullMQ's addStandardJob with byte-identical arguments but the options' jobId, for a run and for a decision round", async () => {
    const q = queue('add-bytes');
    const calls = recordCalls(q);
    const add = runAdds(q);
    const now = vi.spyOn(Date, 'now').mockReturnValue(1_764_000_000_456);
    try {
      for (const opts of [
        runJobOptions(data.runId, 3),
        { ...runJobOptions(data.runId, 1), jobId: `${data.runId}-r2` },
      ]) {
        calls.length = 0;
        await q.add('run', data, opts);
        // The same id again: BullMQ answers it as a duplicate, the arguments are what is compared.
        expect(await add('run', data, opts)).toBe(opts.jobId);
        expect(calls).toHaveLength(2);
        const [bullmq, direct] = calls;
        expect(bullmq?.name).toBe('addStandardJob');
        expect(direct?.name).toBe('addStandardJob');
        expect(direct?.args).toHaveLength(bullmq?.args.length ?? -1);
        const optsAt = direct!.args.length - 1;
        direct?.args.forEach((arg, i) => {
          const theirs = bullmq?.args[i];
          if (i === optsAt) return;
          if (Buffer.isBuffer(theirs)) expect(Buffer.compare(arg as Buffer, theirs)).toBe(0);
          else expect(arg).toStrictEqual(theirs);
        });
        // The options: BullMQ's, in its order, without the copy of the id (the script's own
        // arguments carry it); packed as BullMQ packs them.
        const { jobId, ...rest } = unpack(bullmq!.args[optsAt] as Buffer) as Record<string, unknown>;
        expect(jobId).toBe(opts.jobId);
        const ours = direct!.args[optsAt] as Buffer;
        expect(Buffer.compare(ours, packer.pack(rest))).toBe(0);
        expect(Object.keys(unpack(ours) as object)).toStrictEqual(Object.keys(rest));
      }
    } finally {
      now.mockRestore();
    }
  });

  it('stores the job BullMQ reads back as its own add would', async () => {
    const q = queue('add-read');
    const add = runAdds(q);
    await q.add('run', data, runJobOptions('via-queue', 3));
    expect(await add('run', data, runJobOptions('direct', 3))).toBe('direct');
    const [theirs, ours] = await Promise.all([q.getJob('via-queue'), q.getJob('direct')]);
    expect(ours?.name).toBe('run');
    expect(ours?.data).toEqual(theirs?.data);
    // Read back by BullMQ alike but for the options' copy of the id, which nothing reads: the
    // job's id is its key (`ours.id`).
    const { jobId, ...rest } = theirs?.opts ?? {};
    expect(jobId).toBe('via-queue');
    expect(ours?.id).toBe('direct');
    expect(ours?.opts).toStrictEqual(rest);
    // 47 bytes fewer stored (and written to the AOF): `"jobId":"direct",` is 17 of a 6-byte id.
    const [theirsRaw, oursRaw] = await Promise.all([
      redis.hget(`${q.keys['']}via-queue`, 'opts'),
      redis.hget(`${q.keys['']}direct`, 'opts'),
    ]);
    expect(theirsRaw).toContain('"jobId":"via-queue"');
    expect(oursRaw).not.toContain('jobId');
    expect((theirsRaw ?? '').length - (oursRaw ?? '').length).toBe('"jobId":"via-queue",'.length);
    expect(await ours?.getState()).toBe('waiting');
    expect((await q.getJobCounts('waiting')).waiting).toBe(2);
  });

  it('goes through the hand-off when the queue hands its adds off', async () => {
    const q = queue('add-handoff');
    handingAdds(q);
    expect(await redis.script('EXISTS', HAND_OFF_ADD_SHA)).toEqual([0]);
    expect(await runAdds(q)('run', data, runJobOptions('handed', 3))).toBe('handed');
    expect(await redis.script('EXISTS', HAND_OFF_ADD_SHA)).toEqual([1]);
    expect(await q.getJob('handed')).toBeTruthy();
  });

  it("asks whether a worker idles in the add's own EXISTS: no ZPOPMAX of an absent idle set", async () => {
    const q = queue('add-idle');
    handingAdds(q);
    const add = runAdds(q);
    const calls = async () => {
      const info = await redis.info('commandstats');
      const n = (name: string) =>
        Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
      return { exists: n('exists'), zpopmax: n('zpopmax') };
    };
    const before = await calls();
    expect(await add('run', data, runJobOptions('idle-1', 3))).toBe('idle-1');
    const after = await calls();
    // Before: the add's EXISTS, then the ZPOPMAX of the idle set, which no worker had registered in.
    expect(after.zpopmax - before.zpopmax).toBe(0);
    expect(after.exists - before.exists).toBe(1);
    // The job counted twice in that EXISTS: a duplicate is still answered as one.
    expect(await add('run', data, runJobOptions('idle-1', 3))).toBe('idle-1');
    expect((await q.getJobCounts('waiting')).waiting).toBe(1);
    // A registration there (expired: nothing is handed) is popped, as ever.
    const { idle } = handOffKeys(q.keys[''] ?? '', '');
    await redis.zadd(idle, 1, 'gone');
    const was = await calls();
    expect(await add('run', data, runJobOptions('idle-2', 3))).toBe('idle-2');
    expect((await calls()).zpopmax - was.zpopmax).toBe(1);
    expect(await redis.exists(idle)).toBe(0);
    expect((await q.getJobCounts('waiting')).waiting).toBe(2);
  });

  it('leaves to Queue.add a queue someone listens to for waiting jobs, and the ids BullMQ refuses', async () => {
    const q = queue('add-fallback');
    const add = runAdds(q);
    const viaQueue = vi.spyOn(q, 'add');
    try {
      const waiting = vi.fn();
      q.on('waiting', waiting);
      await add('run', data, runJobOptions('listened', 3));
      expect(viaQueue).toHaveBeenCalledTimes(1);
      expect(waiting).toHaveBeenCalledTimes(1);
      q.off('waiting', waiting);
      await expect(add('run', data, runJobOptions('a:b', 3))).rejects.toThrow('Custom Id cannot contain :');
      await expect(add('run', data, runJobOptions('42', 3))).rejects.toThrow('Custom Id cannot be integers');
      expect(viaQueue).toHaveBeenCalledTimes(3);
      await add('run', data, runJobOptions('plain', 3));
      expect(viaQueue).toHaveBeenCalledTimes(3);
    } finally {
      viaQueue.mockRestore();
    }
  });

  it("packs a job's options once while they are the same, and anew for any other value or order: BullMQ's bytes every time", async () => {
    const q = queue('add-packed');
    const calls = recordCalls(q);
    const add = runAdds(q);
    const base = (id: string) => runJobOptions(id, 3);
    let n = 0;
    // Each after the one before, through one add (its packed bytes kept from one to the next).
    const sets: Array<(id: string) => Record<string, unknown> & { jobId: string }> = [
      base,
      base,
      (id) => runJobOptions(id, 1),
      base,
      (id) => {
        const { jobId, attempts, backoff, removeOnComplete, removeOnFail } = base(id);
        return { jobId, removeOnFail, attempts, backoff, removeOnComplete };
      },
      (id) => ({ ...base(id), backoff: { type: 'fixed', delay: 501 } }),
      (id) => ({ ...base(id), removeOnComplete: { count: 10_000, age: 3600 } }),
      (id) => ({ ...base(id), removeOnFail: { age: 24 * 3600, count: undefined } }),
      (id) => ({ ...base(id), removeOnFail: { age: 24 * 3600 + 0.5 } }),
      base,
      (id) => ({ ...base(id), attempts: '3' }),
      base,
    ];
    const seen = new Set<string>();
    for (const make of sets) {
      const opts = make(`packed-${++n}`);
      calls.length = 0;
      await q.add('run', data, opts);
      expect(await add('run', data, opts as ReturnType<typeof runJobOptions>)).toBe(opts.jobId);
      const [bullmq, direct] = calls;
      const optsAt = (direct?.args.length ?? 0) - 1;
      const { jobId, ...rest } = unpack(bullmq!.args[optsAt] as Buffer) as Record<string, unknown>;
      expect(jobId).toBe(opts.jobId);
      const ours = direct!.args[optsAt] as Buffer;
      expect(Buffer.compare(ours, packer.pack(rest))).toBe(0);
      expect(Object.keys(unpack(ours) as object)).toStrictEqual(Object.keys(rest));
      seen.add(ours.toString('hex'));
    }
    // The sets' bytes: the base's and seven others (no two of those alike).
    expect(seen.size).toBe(8);
  });
});
