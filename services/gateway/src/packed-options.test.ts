// A run job's options packed once per `attempts` (packed-options.ts): which options take the bytes
// packed before and which are packed again, by the packer's count, and every answer the bytes
// msgpackr makes of the options without `jobId` (BullMQ's own bytes are run-add-store.test.ts's).
import { createRedis } from '@islet/core';
import { runJobOptions } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { runOptionsPacker } from './packed-options.ts';

const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
const withoutId = (o: object) => {
  const { jobId: _id, ...rest } = o as { jobId?: string };
  return packer.pack(rest);
};
const packs = () => {
  let calls = 0;
  const p = runOptionsPacker((opts) => {
    calls++;
    return withoutId(opts);
  });
  return { p, calls: () => calls };
};
/** `p`'s bytes of `o` are msgpackr's of it without `jobId`. */
const expectBytes = (bytes: Buffer, o: object) => expect(Buffer.compare(bytes, withoutId(o))).toBe(0);

describe('options packed once per attempts', () => {
  it("reuses the bytes for runJobOptions' own options with another job id, per attempts; packs anew on any other value, key or order", () => {
    const { p, calls } = packs();
    const first = p(runJobOptions('a', 3));
    expect(Buffer.compare(p(runJobOptions('b', 3)), first)).toBe(0);
    expect(p.packed).toBe(1);
    // Another attempts: its own bytes, kept beside the first's.
    expectBytes(p(runJobOptions('c', 1)), runJobOptions('c', 1));
    expect(Buffer.compare(p(runJobOptions('d', 3)), first)).toBe(0);
    p(runJobOptions('e', 1));
    expect(p.packed).toBe(2);
    // As enqueueRun builds them: a spread and the job's id put over it.
    expect(Buffer.compare(p({ ...runJobOptions('f', 3), ...{ jobId: 'g' } }), first)).toBe(0);
    expect(p.packed).toBe(2);
    const base = runJobOptions('h', 3);
    const others: object[] = [
      { ...base, attempts: -0 },
      { ...base, attempts: 0 },
      { ...base, attempts: 3.5 },
      { ...base, attempts: '3' },
      { ...base, backoff: { type: 'fixed', delay: 501 } },
      { ...base, removeOnComplete: { age: 3600, count: -0 } },
      { ...base, backoff: { type: 'fixed', delay: 500, extra: 1 } },
      { ...base, backoff: { delay: 500, type: 'fixed' } },
      { ...base, removeOnFail: { age: 86_400, count: undefined } },
      { ...base, removeOnFail: null },
      { ...base, extra: undefined },
      {
        jobId: 'i',
        removeOnFail: base.removeOnFail,
        attempts: 3,
        backoff: base.backoff,
        removeOnComplete: base.removeOnComplete,
      },
    ];
    for (const o of others) {
      // Packed every time, the first packed bytes kept for the source's own.
      const before = p.packed;
      expectBytes(p(o), o);
      expectBytes(p(o), o);
      expect(p.packed).toBe(before + 2);
      expect(Buffer.compare(p(base), first)).toBe(0);
      expect(p.packed).toBe(before + 2);
    }
    expect(calls()).toBe(p.packed);
  });

  it('packs every time a nested value msgpackr may walk otherwise: an array, a Date, a class instance', () => {
    const { p } = packs();
    const base = runJobOptions('a', 3);
    p(base);
    class Backoff {
      type = 'fixed';
      delay = 500;
    }
    for (const o of [
      { ...base, backoff: [500] },
      { ...base, removeOnFail: { age: new Date(0) } },
      { ...base, backoff: new Backoff() },
      Object.assign(Object.create({ inherited: 1 }), base),
    ]) {
      const before = p.packed;
      expectBytes(p(o), o);
      expectBytes(p(o), o);
      expect(p.packed).toBe(before + 2);
    }
  });

  it('options changed in place after their packing are packed again; the kept bytes stay the source’s', () => {
    const { p } = packs();
    const opts = runJobOptions('a', 3);
    const first = p(opts);
    opts.backoff.delay = 700;
    const second = p({ ...opts, jobId: 'b' });
    expect(p.packed).toBe(2);
    expect(Buffer.compare(first, second)).not.toBe(0);
    expectBytes(second, opts);
    expect(Buffer.compare(p(runJobOptions('c', 3)), first)).toBe(0);
    expect(p.packed).toBe(2);
  });
});

describe("the options as Redis's cjson writes them (the hand-off's add stores the text)", () => {
  it("gives, for the packer's own bytes of runJobOptions' options, cjson.encode(cmsgpack.unpack(bytes)) byte for byte, and nothing for other bytes", async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      const { p } = packs();
      for (const attempts of [1, 2, 3, 5, 10, 100, 12345]) {
        const bytes = p(runJobOptions(`id-${attempts}`, attempts));
        const text = p.cjsonOf(bytes);
        const redisText = await redis.eval('return cjson.encode(cmsgpack.unpack(ARGV[1]))', 0, bytes);
        expect(text).toBe(redisText);
        // The same bytes again (the memo's): the same text.
        expect(p.cjsonOf(p(runJobOptions('other', attempts)))).toBe(redisText);
      }
      // Not the source's own (another value): packed anew, no text; a copy of the bytes: no text.
      const other = p({ ...runJobOptions('x', 3), backoff: { type: 'fixed', delay: 700 } });
      expect(p.cjsonOf(other)).toBeUndefined();
      expect(p.cjsonOf(Buffer.from(p(runJobOptions('y', 3))))).toBeUndefined();
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
