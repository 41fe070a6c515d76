/**
 * What the run store writes under each `writeFormat` (core config `ISLET_WRITE_FORMAT`;
 * test/bench/README.md, round 40 `format-two`), on real Redis. `'1'`: the record's fields, the
 * create's and the end's pending entries are afaaca7's (names, values, `m` as JSON text). `'2'`,
 * the default since the release after e807b91 (round 41 `format-default`): no `clockMs` when it equals `createdAt`, the create entry's `m` an object without
 * the entry's own fields and no `n`, the end entry without `u`/`x`/`h`; and every reader of the
 * store reads those right — the record (get, the start's answer), the run list, sessions, usage,
 * health — also with both forms in one tenant's list.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { healthHour } from './health-buckets.ts';
import { createRunIndex, foldPendingEnds } from './run-index.ts';
import { USAGE_RETENTION_SECONDS, usageDay } from './run-index-writes.ts';
import { createRunStore } from './run-store.ts';
import type { WriteFormat } from './run-store-types.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const result = { _tag: 'Completed' as const, value: 1, logs: [] };

/** The pending list's entries, parsed. */
async function pending(redis: Redis, tenant: string): Promise<Record<string, unknown>[]> {
  return (await redis.lrange(keys.indexPending(tenant), 0, -1)).map((e) => JSON.parse(e));
}

/** One run created and ended by a store writing `format`; its record as stored and its two entries. */
async function oneRun(redis: Redis, format: WriteFormat | undefined, tenant: string, id: string) {
  const runs = createRunStore(redis, sealer, format ? { writeFormat: format } : {});
  const run = runFixture(id, { tenant, session: 'sess', principal: 'key-1', createdAt: Date.now() - 50 });
  await runs.create(run);
  const record = await redis.hgetall(keys.run(id));
  await runs.finish(run, { status: 'Completed', result, text: 'x' });
  const ended = await redis.hgetall(keys.run(id));
  const [create, end] = (await pending(redis, tenant)).filter((e) => e.i === id);
  return { run, record, ended, create: create!, end: end! };
}

describe('format 1 writes what afaaca7 writes', () => {
  it('the record keeps clockMs, the create entry m as the summary JSON and n, the end entry u, x, h', () =>
    withRedis(async (redis) => {
      for (const [format, id] of [['1', 'd2']] as const) {
        const { run, record, ended, create, end } = await oneRun(redis, format, 'td', id);
        expect(record.clockMs).toBe(String(run.createdAt));
        // A Completed run's `kind none`, which releases before d92635a need (round 42 `format-next`).
        expect(ended.kind).toBe('none');
        expect(Object.keys(create).sort()).toEqual(['a', 'i', 'm', 'n', 'o', 'p', 'r', 's', 't']);
        expect(typeof create.m).toBe('string');
        expect(JSON.parse(create.m as string)).toEqual({
          id,
          status: 'Running',
          description: record.description,
          sessionId: 'sess',
          principal: 'key-1',
          style: 'run_code',
          mode: 'read-only',
          createdAt: run.createdAt,
        });
        // afaaca7's key order (JSON.stringify of summaryOf)
        expect(Object.keys(JSON.parse(create.m as string))).toEqual([
          'id',
          'status',
          'description',
          'sessionId',
          'principal',
          'style',
          'mode',
          'createdAt',
        ]);
        const endedAt = Number(end.e);
        expect(end).toMatchObject({
          i: id,
          s: 'Completed',
          k: 'none',
          u: keys.usageDay('td', usageDay(endedAt)),
          x: String((Math.floor(endedAt / 86_400_000) + 1) * 86_400 + USAGE_RETENTION_SECONDS),
          h: keys.healthHour('td', healthHour(endedAt)),
        });
      }
    }));
});

describe('format 2 (the default) writes the leaner forms, and every reader reads them', () => {
  it('no clockMs, the create entry m an object of the rest and no n, the end entry without u, x, h, no `kind none`', () =>
    withRedis(async (redis) => {
      // A store given no format writes format 2's forms.
      const defaulted = await oneRun(redis, undefined, 'tl', 'l0');
      expect(defaulted.record.clockMs).toBeUndefined();
      // No `"o":0` (round 43 `format-43`): a session not found owned leaves `o` out.
      expect(Object.keys(defaulted.create).sort()).toEqual(['a', 'i', 'm', 'p', 'r', 's', 't']);
      expect(typeof defaulted.create.m).toBe('object');
      // No `k`, and no `kind` in the record: a Completed run's `none` is read from its absence
      // (round 42 `format-next`).
      expect(Object.keys(defaulted.end).sort()).toEqual(['e', 'i', 'o', 's']);
      expect(defaulted.ended).not.toHaveProperty('kind');
      const { run, record, ended, create, end } = await oneRun(redis, '2', 'tl', 'l1');
      expect(ended).not.toHaveProperty('kind');
      expect(record.clockMs).toBeUndefined();
      expect(record.createdAt).toBe(String(run.createdAt));
      expect(create).toEqual({
        t: 'c',
        i: 'l1',
        a: String(run.createdAt),
        s: 'sess',
        p: 'key-1',
        r: String(7 * 24 * 3600 * 1000),
        m: { status: 'Running', description: record.description, style: 'run_code', mode: 'read-only' },
      });
      expect(Object.keys(end).sort()).toEqual(['e', 'i', 'o', 's']);
      // a clock other than the creation time is kept
      const runs = createRunStore(redis, sealer, { writeFormat: '2' });
      await runs.create(runFixture('l2', { tenant: 'tl', clockMs: 5 }));
      expect(await redis.hget(keys.run('l2'), 'clockMs')).toBe('5');
      expect((await runs.get('l1'))?.clockMs).toBe(run.createdAt);
      expect((await runs.get('l2'))?.clockMs).toBe(5);
    }));

  it('a tenant whose runs were written in both formats lists, counts and charts them as one written in format 1 alone', () =>
    withRedis(async (redis) => {
      for (const [tenant, formats] of [
        ['t-one', ['1', '1', '1', '1']],
        ['t-mix', ['1', '2', '2', '1']],
      ] as const) {
        for (let i = 0; i < formats.length; i++) {
          const runs = createRunStore(redis, sealer, { writeFormat: formats[i] });
          const run = runFixture(`${tenant}-${i}`, {
            tenant,
            session: i < 2 ? 'sa' : 'sb',
            ...(i === 3 ? {} : { principal: `key-${i % 2}` }),
            description: `run ${i}`,
            // listed newest first: one order in both tenants
            createdAt: Date.now() - 1000 + i * 10,
          });
          await runs.create(run);
          if (i !== 2)
            await runs.finish(
              run,
              i === 1
                ? {
                    status: 'Failed',
                    kind: 'timeout',
                    result,
                    text: 'slow',
                    usage: { cpuMs: 3, bindingCalls: 2 },
                  }
                : { status: 'Completed', result, text: 'x' },
            );
        }
      }
      const index = createRunIndex(redis, sealer);
      const view = async (tenant: string) => {
        await foldPendingEnds(redis, tenant);
        const listed = (await index.listRuns(tenant, { limit: 10 })).items.map((s) => ({
          ...s,
          id: s.id.slice(tenant.length),
          createdAt: 0,
          endedAt: s.endedAt ? 1 : 0,
        }));
        const sessions = (await index.listSessions(tenant, { limit: 10 })).items.map((s) => ({
          ...s,
          createdAt: 0,
          lastActivity: 0,
        }));
        const today = usageDay(Date.now());
        const usage = (await index.usage(tenant, today, today)).map((d) => ({ ...d, wallMs: 0 }));
        const hour = await redis.hgetall(keys.healthHour(tenant, healthHour(Date.now())));
        // Summed by name: the field's leading bucket is the end's time, so two ends may fall in one
        // bucket or two (a boundary between them), whichever format wrote them.
        const counters: Record<string, number> = {};
        for (const [f, v] of Object.entries(hour)) {
          const name = f.replace(/\|e:(\w+):\d+$/, '|e:$1').replace(/^\d+/, 'b');
          counters[name] = (counters[name] ?? 0) + Number(v);
        }
        return {
          listed,
          sessions,
          usage,
          counters,
          pending: await redis.llen(keys.indexPending(tenant)),
        };
      };
      const one = await view('t-one');
      const mix = await view('t-mix');
      expect(mix).toEqual(one);
      expect(one.listed.map((s) => [s.id, s.status, s.kind])).toEqual([
        ['-3', 'Completed', 'none'],
        ['-2', 'Running', undefined],
        ['-1', 'Failed', 'timeout'],
        ['-0', 'Completed', 'none'],
      ]);
      expect(one.usage[0]).toMatchObject({ runs: { Completed: 2, Failed: 1 }, cpuMs: 3, bindingCalls: 2 });
      expect(one.pending).toBe(0);
    }));
});
