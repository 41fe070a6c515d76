/**
 * A completion's packed worker options taken apart for a baked end (end-options.ts): the token, the
 * bytes around it and the verdict the end's direct completion would reach, given only where that
 * completion takes the options and each part is written back exactly. Packed as BullMQ packs them
 * (msgpackr, its options); no Redis (the script's side: end-start-baked.test.ts).
 */
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { EndOptions, fetchVerdict } from './end-options.ts';

/** BullMQ's encoder of its script arguments (its `scripts.js`). */
const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

/** The options as BullMQ's `moveToFinishedArgs` packs them, in its order. */
function packed(token: string, o: Record<string, unknown> = {}): Buffer {
  return packer.pack({
    token,
    name: 'vm',
    keepJobs: { count: 100 },
    limiter: undefined,
    lockDuration: 30_000,
    attempts: 1,
    maxMetricsSize: '',
    fpof: false,
    cpof: false,
    idof: false,
    rdof: false,
    ...o,
  });
}

/** msgpack's header of a string of `n` bytes as msgpackr writes it. */
const header = (n: number) =>
  Buffer.from(n < 32 ? [0xa0 | n] : n < 256 ? [0xd9, n] : [0xda, n >> 8, n & 0xff]);

describe("a baked end's packed options", () => {
  it('are the token, its lock duration and name, and the bytes around the token: the packed bytes again, decoded once a worker', () => {
    const options = new EndOptions();
    const first = options.split(packed('w1:1'));
    expect(first?.slice(0, 3)).toEqual(['w1:1', '30000', 'vm']);
    for (const token of ['w1:2', `${'t'.repeat(40)}:1`, `${'u'.repeat(300)}:9`]) {
      const b = packed(token);
      const parts = options.split(b);
      if (!parts) throw new Error('not taken apart');
      const [t, , , head, tail] = parts;
      expect(t).toBe(token);
      expect(Buffer.concat([head, header(token.length), Buffer.from(t), tail]).equals(b)).toBe(true);
      // The same worker's bytes: the same Buffers (the baker compares its names by identity).
      expect(head).toBe(first?.[3]);
      expect(tail).toBe(first?.[4]);
    }
    expect(options.decodes).toBe(1);
    // Another worker's options: decoded again, other bytes.
    const other = options.split(packed('w1:3', { name: 'other', lockDuration: 5_000 }));
    expect(other?.slice(0, 3)).toEqual(['w1:3', '5000', 'other']);
    expect(other?.[4]).not.toBe(first?.[4]);
    expect(options.decodes).toBe(2);
  });

  it('are not taken apart where the direct completion would not take them, or a part would not be written back exactly', () => {
    const refused: [string, Buffer | string][] = [
      ['a limiter', packed('w1:1', { limiter: { max: 1, duration: 1000 } })],
      ['metrics', packed('w1:1', { maxMetricsSize: 100 })],
      ['jobs removed', packed('w1:1', { keepJobs: { count: 0 } })],
      ['an age not a number', packed('w1:1', { keepJobs: { age: '1' } })],
      ['keepJobs not a map', packed('w1:1', { keepJobs: true })],
      ['no name', packed('w1:1', { name: undefined })],
      ['a lock duration not whole', packed('w1:1', { lockDuration: 1.5 })],
      ['no lock duration', packed('w1:1', { lockDuration: undefined })],
      ["the token '0'", packed('0')],
      ['a token not ASCII', packed('w1:é')],
      ['not packed', 'w1:1'],
      ['the token not first', packer.pack({ name: 'vm', token: 'w1:1', keepJobs: { count: 1 } })],
    ];
    for (const [why, b] of refused) expect([why, new EndOptions().split(b)]).toEqual([why, undefined]);
    // A header longer than the string needs (str8 for 4 bytes): the script's rebuild would write fixstr.
    const b = packed('w1:1');
    const at = b.indexOf(Buffer.from('w1:1')) - 1;
    const long = Buffer.concat([b.subarray(0, at), Buffer.from([0xd9, 4]), b.subarray(at + 1)]);
    expect(new EndOptions().split(long)).toBeUndefined();
    // Refused once, the same worker's next token is refused without a decode; '0' refused on known bytes.
    const options = new EndOptions();
    expect(options.split(packed('w1:1', { limiter: { max: 1 } }))).toBeUndefined();
    expect(options.split(packed('w1:2', { limiter: { max: 1 } }))).toBeUndefined();
    expect(options.decodes).toBe(1);
    expect(options.split(packed('w1:3'))).toBeDefined();
    expect(options.split(packed('0'))).toBeUndefined();
  });
});

describe("a fetch's packed options (round 52 `fetch-token`)", () => {
  /** The options as BullMQ's `moveToActive` packs them, in its order. */
  const fetchPacked = (token: string, o: Record<string, unknown> = {}): Buffer =>
    packer.pack({ token, lockDuration: 30_000, limiter: undefined, name: 'vm', ...o });

  it('are the token, its lock duration and name, and the bytes around the token, by the fetch verdict', () => {
    const options = new EndOptions(fetchVerdict);
    const first = options.split(fetchPacked('w1:1'));
    expect(first?.slice(0, 3)).toEqual(['w1:1', '30000', 'vm']);
    for (const token of ['w1:2', `${'t'.repeat(40)}:1`, `${'u'.repeat(300)}:9`]) {
      const b = fetchPacked(token);
      const parts = options.split(b);
      if (!parts) throw new Error('not taken apart');
      const [t, , , head, tail] = parts;
      expect(Buffer.concat([head, header(token.length), Buffer.from(t), tail]).equals(b)).toBe(true);
    }
    expect(options.decodes).toBe(1);
    // The end's verdict refuses a fetch's options (no keepJobs, no maxMetricsSize): each its own.
    expect(new EndOptions().split(fetchPacked('w1:1'))).toBeUndefined();
  });

  it('are not taken apart where the fetch text would read more than the parts', () => {
    const refused: [string, Buffer][] = [
      ['a limiter', fetchPacked('w1:1', { limiter: { max: 1, duration: 1000 } })],
      ['no name', fetchPacked('w1:1', { name: undefined })],
      ['a name not text', fetchPacked('w1:1', { name: 5 })],
      ['a lock duration not whole', fetchPacked('w1:1', { lockDuration: 1.5 })],
      ['no lock duration', fetchPacked('w1:1', { lockDuration: undefined })],
      ["the token '0'", fetchPacked('0')],
    ];
    for (const [why, b] of refused)
      expect([why, new EndOptions(fetchVerdict).split(b)]).toEqual([why, undefined]);
  });
});
