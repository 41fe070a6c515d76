// A run's sealed fields as one sealed text at each end of a run (`ISLET_WRITE_FORMAT=2`,
// sealed-fields.ts; test/bench/README.md round 40 `seal-one`), on a real redis-server: what each
// format writes (`1` exactly the fields of the releases before e807b91; `2` the default since the
// release after it, round 41 `format-default`), that every reader of a record
// (the store's read, the attempt's start from the script's answer, the pushed end, recovery's head)
// reads both forms alike, the seals and opens each makes, and that a field copied elsewhere fails.
import { createRedis, generateSealKey, keys, type Sealer, sealerFromConfig } from '@islet/core';
import { runFixture, startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { pushedEnd } from '../test/pushed-end.ts';
import { withRedis } from '../test/test-redis.ts';
import { createCallJournal } from './call-journal.ts';
import { createInFlightStore } from './in-flight-store.ts';
import { createRunLifecycle } from './run-lifecycle.ts';
import { createRunStore } from './run-store.ts';
import { endFields, recordFields } from './run-store-args.ts';
import { completedText } from './sealed-fields.ts';

const inner = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

/** The sealer, counting its seals and opens. */
function counting() {
  const counts = { seal: 0, open: 0 };
  const sealer: Sealer = {
    seal: (p, bind) => {
      counts.seal++;
      return inner.seal(p, bind);
    },
    open: (s, bind) => {
      counts.open++;
      return inner.open(s, bind);
    },
  };
  return { sealer, counts };
}

/** The record's fields as afaaca7 (round 40's base) writes them at a create, in order. */
const CREATE_FIELDS_1 = [
  'id',
  'tenant',
  'session',
  'turn',
  'callId',
  'status',
  'mode',
  'code',
  'description',
  'request',
  'createdAt',
  'updatedAt',
  'attempts',
  'clockMs',
];

const request = {
  style: 'run_code' as const,
  connections: ['c1'],
  bindings: [],
  limits: { timeoutMs: 30_000, memoryMb: 512, outputBytes: 1024, outputCap: 'shared' as const },
};

const ends = {
  completed: {
    status: 'Completed' as const,
    result: { _tag: 'Completed' as const, value: { n: 1 }, logs: [{ level: 'log' as const, text: 'hi' }] },
    text: 'hi\n{"n":1}',
  },
  empty: {
    status: 'Completed' as const,
    result: { _tag: 'Completed' as const, logs: [] },
    text: '(run_code completed with no output)',
  },
  // A text the result does not render to (not the engine's): stored, not rendered.
  other: {
    status: 'Completed' as const,
    result: { _tag: 'Completed' as const, value: 'v', logs: [] },
    text: 'another text',
  },
  failed: {
    status: 'Failed' as const,
    result: {
      _tag: 'Failed' as const,
      reason: 'Error' as const,
      kind: 'exception' as const,
      message: 'boom',
      logs: [{ level: 'log' as const, text: 'before' }],
    },
    text: 'code run failed (exception): boom\n\nCaptured output:\nbefore',
  },
  // Lines past 1 KiB: a failed run's text refers to them (stored-text.ts) inside the one field.
  long: {
    status: 'Failed' as const,
    result: {
      _tag: 'Failed' as const,
      reason: 'Error' as const,
      kind: 'exception' as const,
      message: 'boom',
      logs: [{ level: 'log' as const, text: 'x'.repeat(3000) }],
    },
    text: `code run failed (exception): boom\n\nCaptured output:\n${'x'.repeat(3000)}`,
  },
};

describe("a run's record in format 1 and 2 (the default)", () => {
  it('1 writes the previous releases’ fields, in their order; 2 and the default write `pick` and `ended` in their place', async () => {
    await withRedis(async (redis) => {
      const one = createRunStore(redis, inner, { writeFormat: '1' });
      const two = createRunStore(redis, inner, { writeFormat: '2' });
      const defaulted = createRunStore(redis, inner);
      await one.create(runFixture('f1', { request }));
      await two.create(runFixture('f2', { request }));
      await defaulted.create(runFixture('f0', { request }));
      // The script's field-value pairs, in order (HGETALL's order is the hash's, not the write's).
      const created = (format: '1' | '2') =>
        Object.keys(
          recordFields(
            runFixture('x', { request }),
            inner,
            (v) => inner.seal(JSON.stringify(v)),
            'd',
            format,
          ),
        );
      expect(created('1')).toEqual(CREATE_FIELDS_1);
      // Format 2 also leaves out `clockMs` when it equals `createdAt` (round 40 `format-two`).
      expect(created('2')).toEqual(
        CREATE_FIELDS_1.filter((n) => n !== 'request' && n !== 'clockMs').map((n) =>
          n === 'code' ? 'pick' : n,
        ),
      );
      const names = async (id: string) => Object.keys(await redis.hgetall(keys.run(id))).sort();
      expect(await names('f1')).toEqual([...CREATE_FIELDS_1].sort());
      expect(await names('f2')).toEqual(created('2').sort());
      expect(await names('f0')).toEqual(created('2').sort());
      await one.finish(runFixture('f1'), ends.completed);
      await two.finish(runFixture('f2'), ends.completed);
      await defaulted.finish(runFixture('f0'), ends.completed);
      const ended1 = await redis.hgetall(keys.run('f1'));
      const ended2 = await redis.hgetall(keys.run('f2'));
      expect(Object.keys(await redis.hgetall(keys.run('f0'))).sort()).toEqual(Object.keys(ended2).sort());
      expect(Object.keys(ended1).sort()).toEqual([...CREATE_FIELDS_1, 'result', 'kind', 'text'].sort());
      // No `kind none` for a Completed run in format 2 (round 42 `format-next`).
      expect(Object.keys(ended2).sort()).toEqual([...created('2'), 'ended'].sort());
      const endNames = (format: '1' | '2') =>
        Object.keys(
          endFields({ id: 'x' }, ends.completed, inner, (v) => inner.seal(JSON.stringify(v)), format),
        );
      expect(endNames('1')).toEqual(['status', 'result', 'kind', 'text']);
      expect(endNames('2')).toEqual(['status', 'ended']);
      // Fewer bytes stored: one seal's head and tag fewer at each end, and no Completed text.
      const bytes = (h: Record<string, string>, names: string[]) =>
        names.reduce((n, name) => n + (h[name]?.length ?? 0), 0);
      expect(bytes(ended2, ['pick'])).toBeLessThan(bytes(ended1, ['code', 'request']));
      expect(bytes(ended2, ['ended'])).toBeLessThan(bytes(ended1, ['result', 'text']));
      // The Completed text is not in the field: its plaintext holds the result and `0`.
      expect(JSON.parse(inner.open(ended2.ended as string, 'ended\0f2'))).toEqual([ends.completed.result, 0]);
    });
  });

  it('every reader reads both forms alike, each end kind; the writes of 2 make one seal and the reads one open at each end', async () => {
    await withRedis(async (redis) => {
      for (const [name, end] of Object.entries(ends)) {
        const reads: Record<string, unknown>[] = [];
        for (const format of ['1', '2'] as const) {
          const { sealer, counts } = counting();
          const runs = createRunStore(redis, sealer, { writeFormat: format });
          const journal = createCallJournal({ redis, sealer });
          const lifecycle = createRunLifecycle({ runs, journal });
          const id = `${name}-${format}`;
          await runs.create(runFixture(id, { request, code: `return "${name}"` }));
          // code, description and request; or pick and description (and the store's first status event).
          expect(counts.seal).toBe(format === '1' ? 4 : 3);
          counts.open = 0;
          // The runner's pick-up (the script's flat answer, fromFields): two opens, or one.
          const begun = await lifecycle.beginAttempt(id);
          expect(begun.run?.code).toBe(`return "${name}"`);
          expect(begun.run?.request).toEqual(request);
          expect(counts.open).toBe(format === '1' ? 2 : 1);
          expect((await createInFlightStore(redis).head(id))?.attempts).toBe(1);
          counts.seal = 0;
          await runs.finish(runFixture(id), end);
          // result and text (or its reference); or ended (and the store's first seal of the end's
          // status event).
          expect(counts.seal).toBe(format === '1' ? 3 : 2);
          counts.open = 0;
          const read = await runs.get(id);
          expect(read?.result).toEqual(end.result);
          expect(read?.text).toBe(end.text);
          expect(read?.code).toBe(`return "${name}"`);
          expect(read?.request).toEqual(request);
          // code, request, result, text; or pick and ended.
          expect(counts.open).toBe(format === '1' ? 4 : 2);
          const {
            id: _id,
            createdAt: _c,
            updatedAt: _u,
            clockMs: _k,
            seed: _s,
            ...rest
          } = read as object as Record<string, unknown>;
          reads.push(rest);
        }
        expect(reads[1]).toEqual(reads[0]);
      }
    });
  });

  it('a record of one form at its create and the other at its end reads right either way', async () => {
    await withRedis(async (redis) => {
      const one = createRunStore(redis, inner, { writeFormat: '1' });
      const two = createRunStore(redis, inner, { writeFormat: '2' });
      await one.create(runFixture('m1', { request }));
      await two.finish(runFixture('m1'), ends.failed);
      await two.create(runFixture('m2', { request }));
      await one.finish(runFixture('m2'), ends.long);
      for (const [id, end] of [
        ['m1', ends.failed],
        ['m2', ends.long],
      ] as const) {
        for (const reader of [one, two]) {
          const read = await reader.get(id);
          expect(read?.request).toEqual(request);
          expect(read?.code).toBe('return 1');
          expect(read?.result).toEqual(end.result);
          expect(read?.text).toBe(end.text);
        }
      }
    });
  });

  it("the pushed end's record (a waiting gateway's read) reads a format-2 record", async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      const runs = createRunStore(redis, inner, { writeFormat: '2' });
      const run = runFixture('p1', { request, pushEnd: true });
      await runs.create(run);
      const [record] = await pushedEnd(redis, redis, 'p1', () =>
        runs.finish(run, { ...ends.completed, sentNoCall: true }),
      );
      expect(record).toContain('ended');
      // The submit's `pick` and description are its waiter's (round 41 `push-lean`).
      expect(record).not.toContain('pick');
      expect(record).not.toContain('description');
      const read = runs.fromLeanEnd(record, run);
      expect(read?.status).toBe('Completed');
      expect(read?.result).toEqual(ends.completed.result);
      expect(read?.text).toBe(ends.completed.text);
      expect(read?.code).toBe('return 1');
      expect(read?.request).toEqual(request);
      expect(read?.description).toBe('Return one');
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('a `pick` or `ended` copied to another run, or to the other field, does not open', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, inner, { writeFormat: '2' });
      for (const id of ['a', 'b']) {
        await runs.create(runFixture(id, { request, code: `return "${id}"` }));
        await runs.finish(runFixture(id), ends.completed);
      }
      const a = await redis.hgetall(keys.run('a'));
      expect((await runs.get('b'))?.code).toBe('return "b"');
      await redis.hset(keys.run('b'), 'pick', a.pick as string);
      await expect(runs.get('b')).rejects.toThrow(/failed authentication/);
      await redis.hset(keys.run('b'), 'pick', a.ended as string);
      await expect(runs.get('b')).rejects.toThrow(/failed authentication/);
      // Run a's own fields swapped: each opens for its own field alone.
      await redis.hset(keys.run('a'), 'ended', a.pick as string);
      await expect(runs.get('a')).rejects.toThrow(/failed authentication/);
      // And a's end copied to b (its pick put back): b's read fails, not a's answer.
      await redis.hset(keys.run('a'), 'ended', a.ended as string);
      const b = await redis.hgetall(keys.run('b'));
      expect(b.ended).not.toBe(a.ended);
      await redis.hdel(keys.run('b'), 'pick');
      await redis.hset(keys.run('b'), 'ended', a.ended as string);
      await expect(runs.get('b')).rejects.toThrow(/failed authentication/);
      expect((await runs.get('a'))?.text).toBe(ends.completed.text);
    });
  });

  it("completedText renders a Completed result as the engine's text does for each value kind", () => {
    const lines = [{ level: 'log' as const, text: 'a' }];
    expect(completedText({ _tag: 'Completed', logs: [] })).toBe('(run_code completed with no output)');
    expect(completedText({ _tag: 'Completed', logs: lines })).toBe('a');
    expect(completedText({ _tag: 'Completed', logs: lines, value: 'str' })).toBe('a\nstr');
    expect(completedText({ _tag: 'Completed', logs: [], value: null })).toBe('null');
    expect(completedText({ _tag: 'Completed', logs: [], value: '' })).toBe('');
    expect(completedText({ _tag: 'Completed', logs: [], value: [1, { b: 'c' }] })).toBe('[1,{"b":"c"}]');
  });
});
