// A run job's options packed once while they are the same (packed-options.ts): which options take
// the last packed bytes and which are packed again, by the packer's count. The bytes against
// BullMQ's own are run-add-store.test.ts's.
import { runJobOptions } from '@islet/runs';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { packedOnce } from './packed-options.ts';

const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
const packs = () => {
  let calls = 0;
  const p = packedOnce((opts) => {
    calls++;
    const { jobId: _id, ...rest } = opts as { jobId?: string };
    return packer.pack(rest);
  });
  return { p, calls: () => calls };
};

describe('options packed once', () => {
  it('reuses the bytes for the same options with another job id, packs anew on any other value, key or order', () => {
    const { p, calls } = packs();
    const first = p(runJobOptions('a', 3));
    expect(Buffer.compare(p(runJobOptions('b', 3)), first)).toBe(0);
    expect(p.packed).toBe(1);
    expect(calls()).toBe(1);
    const base = runJobOptions('c', 3);
    const others: object[] = [
      runJobOptions('d', 1),
      { ...base, attempts: -0 },
      { ...base, attempts: '3' },
      { ...base, backoff: { type: 'fixed', delay: 500, extra: 1 } },
      { ...base, backoff: { delay: 500, type: 'fixed' } },
      { ...base, removeOnFail: { age: 86_400, count: undefined } },
      { ...base, removeOnFail: null },
      {
        jobId: 'e',
        removeOnFail: base.removeOnFail,
        attempts: 3,
        backoff: base.backoff,
        removeOnComplete: base.removeOnComplete,
      },
    ];
    let expected = 1;
    for (const o of others) {
      // After the base, then after itself: packed anew, then reused.
      p(base);
      const before = p.packed;
      const bytes = p(o);
      expect(p.packed).toBe(before + 1);
      expect(Buffer.compare(bytes, packer.pack((({ jobId: _j, ...r }) => r)(o as { jobId?: string })))).toBe(
        0,
      );
      expect(Buffer.compare(p(o), bytes)).toBe(0);
      expect(p.packed).toBe(before + 1);
      expected = p.packed;
    }
    expect(calls()).toBe(expected);
  });

  it('packs every time what it does not follow: an array, a Date, a getter, an inherited prototype', () => {
    const { p } = packs();
    const base = runJobOptions('a', 3);
    class Backoff {
      type = 'fixed';
      delay = 500;
    }
    const getter = {
      ...base,
      get attempts() {
        return 3;
      },
    };
    for (const o of [
      { ...base, backoff: [500] },
      { ...base, removeOnFail: { age: new Date(0) } },
      { ...base, backoff: new Backoff() },
      getter,
    ]) {
      const before = p.packed;
      p(o);
      p(o);
      expect(p.packed).toBe(before + 2);
    }
  });

  it('a nested object changed in place after its packing is packed again', () => {
    const { p } = packs();
    const opts = runJobOptions('a', 3);
    const first = p(opts);
    opts.backoff.delay = 700;
    const second = p({ ...opts, jobId: 'b' });
    expect(p.packed).toBe(2);
    expect(Buffer.compare(first, second)).not.toBe(0);
  });
});
