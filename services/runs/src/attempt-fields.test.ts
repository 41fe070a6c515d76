import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import * as luaScript from '@islet/core/lua-script';
import { runFixture } from '@islet/testkit';
import { describe, expect, it, vi } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createCallJournal } from './call-journal.ts';
import { createRunLifecycle } from './run-lifecycle.ts';
import { createRunStore } from './run-store.ts';

// fieldsOf is the real one, counted: which records an attempt's start builds from its answer.
vi.mock('@islet/core/lua-script', async (real) => {
  const actual = await real<typeof import('@islet/core/lua-script')>();
  return { ...actual, fieldsOf: vi.fn(actual.fieldsOf) };
});

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const same = (a: unknown, b: unknown) =>
  expect(JSON.parse(JSON.stringify(a))).toEqual(JSON.parse(JSON.stringify(b)));

describe("an attempt's start reads the run from the script's flat answer", () => {
  it('fromFields gives what fromHash of the same fields as a record gives, for a fresh and an ended run', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const run = {
        ...runFixture('f1', { tenant: 't1' }),
        description: 'read only by answers',
        principal: 'p1',
      };
      await runs.create(run);
      const flat = (id: string) => redis.call('HGETALL', keys.run(id)) as Promise<string[]>;
      const fresh = await flat('f1');
      same(runs.fromFields(fresh), runs.fromHash(luaScript.fieldsOf(fresh)));
      same(runs.fromFields(fresh, true), runs.fromHash(luaScript.fieldsOf(fresh), true));
      // Read lazily as fromHash reads it: an accessor, opened at its first read.
      const lazy = runs.fromFields(fresh);
      expect(Object.getOwnPropertyDescriptor(lazy, 'description')?.get).toBeTypeOf('function');
      expect(lazy?.description).toBe('read only by answers');
      expect(lazy?.code).toBe(run.code);
      await runs.finish(
        { id: 'f1', tenant: 't1' },
        {
          status: 'Completed',
          result: { _tag: 'Completed', value: 3, logs: [{ level: 'log', text: 'hi' }] },
          text: 'code run completed: 3\nhi',
        },
      );
      const ended = await flat('f1');
      same(runs.fromFields(ended), runs.fromHash(luaScript.fieldsOf(ended)));
      expect(runs.fromFields(ended)?.status).toBe('Completed');
      // A field fromHash does not read is passed over; a name never seen changes nothing.
      same(runs.fromFields([...ended, 'unheard', 'x']), runs.fromHash(luaScript.fieldsOf(ended)));
      // No record: null, as an empty record is.
      expect(runs.fromFields([])).toBeNull();
      expect(runs.fromFields({})).toBeNull();
      expect(runs.fromHash({})).toBeNull();
    });
  });

  it.each(['1', '2'] as const)(
    "the lifecycle's beginAttempt builds no record of the run's fields from the answer (format %s)",
    async (writeFormat) => {
      await withRedis(async (redis) => {
        const runs = createRunStore(redis, sealer, { writeFormat });
        const journal = createCallJournal({ redis, sealer, writeFormat });
        const lifecycle = createRunLifecycle({ runs, journal });
        const run = { ...runFixture('f2', { tenant: 't1' }), description: 'd' };
        await runs.create(run);
        const fieldsOf = vi.mocked(luaScript.fieldsOf);
        fieldsOf.mockClear();
        const stored = await redis.hgetall(keys.run('f2'));
        const opens = vi.spyOn(sealer, 'open');
        const begun = await lifecycle.beginAttempt('f2');
        const opened = opens.mock.calls.map(([sealed]) => sealed);
        opens.mockRestore();
        expect(begun.attempt).toBe(1);
        expect(begun.run?.id).toBe('f2');
        expect(begun.run?.code).toBe(run.code);
        expect(begun.run?.status).toBe(run.status);
        expect('runFields' in begun).toBe(false);
        // The description a runner never reads: a plain '' (no accessor, which made the run a
        // dictionary-mode object), its sealed text not opened (only the program and request were:
        // format 1's two fields, format 2's one `pick`).
        expect(Object.getOwnPropertyDescriptor(begun.run, 'description')).toMatchObject({ value: '' });
        expect(begun.run?.description).toBe('');
        expect(opened).toEqual(writeFormat === '1' ? [stored.code, stored.request] : [stored.pick]);
        // Only the journal's own fields went through a record (its `#` counter and calls).
        const records = fieldsOf.mock.results.map((r) => r.value as Record<string, string>);
        expect(records.length).toBeGreaterThan(0);
        expect(records.filter((r) => 'id' in r)).toHaveLength(0);
      });
    },
  );
});
