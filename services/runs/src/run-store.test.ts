import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import { clearOfBoundary, runFixture, startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { pushedEnd } from '../test/pushed-end.ts';
import { withRedis } from '../test/test-redis.ts';
import { HEALTH_TTL_SECONDS, healthHour } from './health-buckets.ts';
import { foldPendingEnds } from './run-index.ts';
import { USAGE_RETENTION_SECONDS, usageDay } from './run-index-writes.ts';
import { createRunStore } from './run-store.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

/** A real sealer that records every plaintext it seals and every one it opens. */
function countingSealer() {
  const inner = sealerFromConfig(base);
  const sealed: string[] = [];
  const opened: string[] = [];
  const sealer = {
    seal: (plaintext: string) => {
      sealed.push(plaintext);
      return inner.seal(plaintext);
    },
    open: (text: string) => {
      const plain = inner.open(text);
      opened.push(plain);
      return plain;
    },
  };
  return { inner, sealed, opened, sealer };
}

describe('run store on a real redis', () => {
  it('a single final status; admission and the Idempotency-Key take-over', async () => {
    await withRedis(async (redis) => {
      const sealer = sealerFromConfig(base);
      const runs = createRunStore(redis, sealer);
      const run = runFixture('r1', { tenant: 't1' });
      await runs.create(run);
      // The program sealed (format 2, the default: with its request as `pick`, sealed-fields.ts).
      expect(await redis.hget('islet:run:{r1}', 'pick')).toMatch(/^v1\.k1\./);
      expect(await redis.hget('islet:run:{r1}', 'code')).toBeNull();
      const done = {
        status: 'Completed' as const,
        result: { _tag: 'Completed' as const, value: 1, logs: [] },
        text: '1',
      };
      expect(await runs.finish(run, done)).toBe(true);
      expect(await runs.finish(run, { ...done, status: 'Cancelled' })).toBe(false);
      expect((await runs.get('r1'))?.status).toBe('Completed');
      const events = await runs.readEvents('r1');
      expect(events.map((e) => e.type)).toEqual(['status', 'end']);
      expect(await runs.inFlightCount('t1')).toBe(0);

      // One server: `then` (the gateway's enqueue) is sent right behind the record's write, before
      // its reply, and what it sends still finds the record (one connection, commands in order).
      const followed = { ...run, id: 'r2', seed: 'r2' };
      const admission = { maxInFlight: 5, sessionTtlSeconds: 60 };
      let seen: string | null | undefined;
      expect(
        await runs.create(followed, admission, async () => {
          seen = await redis.hget('islet:run:{r2}', 'id');
        }),
      ).toBe('created');
      expect(seen).toBe('r2');
      // Admission and record are one script there, and `then` is sent behind it before its answer:
      // a refused run leaves no record, but `then` ran (its caller takes the job back).
      let called = false;
      expect(
        await runs.create({ ...run, id: 'r3', seed: 'r3' }, { ...admission, maxInFlight: 1 }, async () => {
          called = true;
        }),
      ).toBe('over-quota');
      expect(called).toBe(true);
      expect(await redis.exists('islet:run:{r3}')).toBe(0);
      expect(await redis.zscore(keys.inFlight('t1'), 'r3')).toBeNull();

      // An Idempotency-Key a retry took over: the first request is refused at its admission, on
      // both paths (one script with its enqueue; tenant half alone), and writes nothing.
      const idem = keys.idempotency('t1', 'k');
      await redis.set(idem, JSON.stringify({ runId: 'r5', hash: 'h' }));
      for (const [i, then] of [
        [4, async () => undefined],
        [6, undefined],
      ] as const) {
        const stale = { ...run, id: `r${i}`, seed: `r${i}` };
        expect(await runs.create(stale, { ...admission, idempotencyKey: idem }, then)).toBe('superseded');
        expect(await redis.exists(`islet:run:{r${i}}`)).toBe(0);
        expect(await redis.zscore(keys.inFlight('t1'), `r${i}`)).toBeNull();
      }
      expect(
        await runs.create({ ...run, id: 'r5', seed: 'r5' }, { ...admission, idempotencyKey: idem }),
      ).toBe('created');
      // A take-over needs the key unchanged and the first run never admitted.
      const held = JSON.stringify({ runId: 'r5', hash: 'h' });
      const next = JSON.stringify({ runId: 'r7', hash: 'h' });
      expect(await runs.takeOverIdempotency('t1', idem, held, next, 60, 'r5')).toBe(false);
      await redis.zrem(keys.inFlight('t1'), 'r5');
      expect(await runs.takeOverIdempotency('t1', idem, 'something else', next, 60, 'r5')).toBe(false);
      expect(await runs.takeOverIdempotency('t1', idem, held, next, 60, 'r5')).toBe(true);
      expect(await redis.get(idem)).toBe(next);
      await runs.releaseIdempotency(idem, held);
      expect(await redis.get(idem)).toBe(next);
      await runs.releaseIdempotency(idem, next);
      expect(await redis.exists(idem)).toBe(0);
    });
  });

  it("the tenant's storage share is checked in the admission's own step: one command, refused first, still counted", async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealerFromConfig(base), { retentionSeconds: 3600 });
      const now = Date.now();
      const run = (id: string) => runFixture(id, { tenant: 'full', principal: 'p', createdAt: now });
      // The connection's own checks (ready, the slot check) made by a first create elsewhere.
      await runs.create(
        { ...run('warm'), tenant: 'warm' },
        { maxInFlight: 5, sessionTtlSeconds: 60 },
        async () => {},
      );
      // What the store sends, command by command (a script is one).
      const sent: string[] = [];
      const send = redis.sendCommand.bind(redis);
      redis.sendCommand = (command, stream) => {
        sent.push(command.name);
        return send(command, stream);
      };
      const rateKey = keys.rateWindow('full', 0);
      const admission = (limitBytes: number) => ({
        maxInFlight: 5,
        sessionTtlSeconds: 60,
        storedBytes: 1000,
        storage: { limitBytes } as { limitBytes: number; usedBytes?: number },
        rate: { key: rateKey, limit: 1, counted: false },
      });
      // Under the share: admitted, on both paths, with nothing sent but the script (and `then`'s).
      const first = admission(1500);
      expect(await runs.create(run('a'), first, async () => undefined)).toBe('created');
      expect(sent).toEqual(['eval']);
      expect(first.storage.usedBytes).toBeUndefined();
      sent.length = 0;
      // The share is read across every live bucket: an older bucket's bytes count too.
      // (Buckets of an eighth of the retention: 450 s.)
      const older = keys.storedBytes('full', Math.floor(now / 1000 / 450) - 3);
      await redis.set(older, '400');
      sent.length = 0;
      // 1000 + 400 held, under 1500: admitted (the tenant half alone: its script, by hash, then by
      // text the first time; no read of its own).
      const second = admission(1500);
      second.rate.limit = 100;
      expect(await runs.create(run('b'), second)).toBe('created');
      expect(sent.filter((name) => name !== 'evalsha' && name !== 'eval')).toHaveLength(0);
      sent.length = 0;
      // Now 2400 ≥ 1500: refused with the bytes held, before the rate limit (already passed:
      // limit 1 after two counts), its request counted all the same, nothing of the run written.
      for (const then of [async () => undefined, undefined]) {
        const over = admission(1500);
        const counted = Number((await redis.get(rateKey)) ?? 0);
        sent.length = 0;
        expect(await runs.create(run('c'), over, then)).toBe('over-storage');
        const byCreate = [...sent];
        expect(over.storage.usedBytes).toBe(2400);
        expect(over.rate.counted).toBe(true);
        expect(Number(await redis.get(rateKey))).toBe(counted + 1);
        expect(await redis.exists('islet:run:{c}')).toBe(0);
        expect(await redis.zscore(keys.inFlight('full'), 'c')).toBeNull();
        expect(byCreate.filter((name) => name !== 'evalsha' && name !== 'eval')).toHaveLength(0);
        expect(byCreate.length).toBeLessThanOrEqual(2);
      }
      // No share (Infinity): nothing read, admitted (rate limited now: the share is checked first,
      // then the limit).
      const none = admission(Number.POSITIVE_INFINITY);
      expect(await runs.create(run('d'), none)).toBe('rate-limited');
      expect(none.storage.usedBytes).toBeUndefined();
    });
  });

  it("a session's later runs do not look for its principal while its owner stays theirs; a fresh claim still sets a missing one", async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealerFromConfig(base));
      const now = Date.now();
      const run = (id: string, session: string, principal?: string) =>
        runFixture(id, { tenant: 'ss', session, ...(principal ? { principal } : {}), createdAt: now });
      const hsetnxCalls = async () =>
        Number(/^cmdstat_hsetnx:calls=(\d+)/m.exec(await redis.info('commandstats'))?.[1] ?? 0);
      const admission = { maxInFlight: 10, sessionTtlSeconds: 60 };
      const stats = keys.indexSessionStats('ss');
      // The session's counters as a reader sees them: the pending creates folded first.
      const stat = async (field: string) => {
        await foldPendingEnds(redis, 'ss');
        return redis.hget(stats, field);
      };
      // One session, its principal's runs, on both paths: only the first writes the principal.
      expect(await runs.create(run('a1', 's1', 'p'), admission, async () => undefined)).toBe('created');
      const before = await hsetnxCalls();
      expect(await runs.create(run('a2', 's1', 'p'), admission, async () => undefined)).toBe('created');
      expect(await runs.create(run('a3', 's1', 'p'), admission)).toBe('created');
      expect(await hsetnxCalls()).toBe(before);
      expect(await stat('s1\nprincipal')).toBe('p');
      expect(await stat('s1\ntotal')).toBe('3');
      // A session whose first entry had no principal (a create without admission): the admission
      // that claims it for its principal sets it, and later ones find it.
      await runs.create(run('b1', 's2'));
      expect(await stat('s2\nprincipal')).toBeNull();
      expect(await runs.create(run('b2', 's2', 'q'), admission)).toBe('created');
      expect(await stat('s2\nprincipal')).toBe('q');
      expect(await runs.create(run('b3', 's2', 'q'), admission)).toBe('created');
      expect(await stat('s2\nprincipal')).toBe('q');
    });
  });

  it("an end counts once in the index, the day's usage, the hour's health and the stored bytes, each with its expiry", async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealerFromConfig(base), { retentionSeconds: 3600 });
      // Inside one bytes bucket (450 s), hour and day: the counts below are read from one each.
      await clearOfBoundary(450_000, 5_000);
      // One creation time for every call: a run's end is given the run as it was created.
      const now = Date.now();
      const run = (id: string) => runFixture(id, { tenant: 'acct', principal: 'p', createdAt: now });
      const admission = { maxInFlight: 5, sessionTtlSeconds: 60, storedBytes: 1000 };
      const bytes = async () => {
        const found = await redis.keys('islet:tenant:{t:acct}:bytes:*');
        const values = found.length ? await redis.mget(...found) : [];
        return { sum: values.reduce((n, v) => n + Number(v), 0), keys: found };
      };
      // Both admission paths count the record's bytes: with its enqueue (one script) and alone.
      expect(await runs.create(run('a'), admission, async () => undefined)).toBe('created');
      expect(await runs.create(run('b'), admission)).toBe('created');
      // A refused admission counts nothing.
      expect(await runs.create(run('c'), { ...admission, maxInFlight: 2 })).toBe('over-quota');
      const created = await bytes();
      expect(created.sum).toBe(2000);
      expect(created.keys).toHaveLength(1);
      const counterTtl = await redis.ttl(created.keys[0]!);
      expect(counterTtl).toBeGreaterThan(3600);
      expect(counterTtl).toBeLessThanOrEqual(3600 + 450 + 1);

      const result = { _tag: 'Completed' as const, value: 1, logs: [] };
      expect(
        await runs.finish(run('a'), {
          status: 'Completed',
          result,
          text: 'abc',
          usage: { bindingCalls: 2, cpuMs: 5 },
        }),
      ).toBe(true);
      expect(
        await runs.finish(run('b'), {
          status: 'Failed',
          result,
          text: '',
          kind: 'timeout',
          usage: { cpuMs: 7 },
        }),
      ).toBe(true);
      // The second end of a run writes nothing and counts nothing (but its bytes, as before).
      expect(await runs.finish(run('a'), { status: 'Cancelled', result, text: 'zz' })).toBe(false);
      expect(await runs.inFlightCount('acct')).toBe(0);
      // The creates and ends wait in the tenant's pending list (two creates, three ends: the second
      // end of `a` too) until a reader folds them, as every reader does first; the fold counts `a`
      // once.
      expect(await redis.llen(keys.indexPending('acct'))).toBe(5);
      expect(await foldPendingEnds(redis, 'acct')).toBe(5);
      expect(await redis.exists(keys.indexPending('acct'))).toBe(0);
      const summary = JSON.parse((await redis.hget(keys.indexRunSummaries('acct'), 'a')) ?? '{}');
      expect(summary.status).toBe('Completed');

      const day = keys.usageDay('acct', usageDay(Date.now()));
      const usage = await redis.hgetall(day);
      expect(usage).toMatchObject({
        'runs:Completed': '1',
        'runs:Failed': '1',
        outputBytes: '3',
        bindingCalls: '2',
        cpuMs: '12',
      });
      expect(Number(usage.wallMs)).toBeGreaterThanOrEqual(0);
      expect(usage['runs:Cancelled']).toBeUndefined();
      // The day's hash lives the retention past the day's end (at least as long as past its last write).
      const dayEnd = (Math.floor(Date.now() / 86_400_000) + 1) * 86_400;
      expect(
        Math.abs((await redis.ttl(day)) - (dayEnd + USAGE_RETENTION_SECONDS - Date.now() / 1000)),
      ).toBeLessThan(3);

      const hour = keys.healthHour('acct', healthHour(Date.now()));
      const health = await redis.hgetall(hour);
      const sum = (part: RegExp) =>
        Object.entries(health)
          .filter(([f]) => part.test(f))
          .reduce((n, [, v]) => n + Number(v), 0);
      // One counter per status and latency bin (read as both, health-buckets.ts).
      expect(sum(/\|e:Completed:\d+$/)).toBe(1);
      expect(sum(/\|e:Failed:\d+$/)).toBe(1);
      expect(sum(/\|k:timeout$/)).toBe(1);
      expect(Object.keys(health)).toHaveLength(3);
      expect(await redis.ttl(hour)).toBeGreaterThan(HEALTH_TTL_SECONDS - 5);

      // The ends' stored fields were counted (every end, as before), in the same counter.
      expect((await bytes()).sum).toBeGreaterThan(2000);
      expect(await redis.ttl(created.keys[0]!)).toBeGreaterThan(3600);
    });
  });

  it.each([
    // Format 2 stores no `kind none` for a Completed run (run-store-args.ts `storedKind`).
    { writeFormat: '1' as const, endFields: ['result', 'text', 'kind'] },
    { writeFormat: '2' as const, endFields: ['ended'] },
  ])(
    'an end pushed to its waiter (`end2`) carries the fields its execution and end wrote as stored, and the journal (format $writeFormat)',
    async ({ writeFormat, endFields }) => {
      const server = await startRedis({ appendOnly: false });
      const redis = createRedis(server.url);
      try {
        const runs = createRunStore(redis, sealerFromConfig(base), { writeFormat });
        const run = runFixture('p1', { tenant: 't1', pushEnd: true });
        await runs.create(run);
        await redis.hset('islet:journal:{p1}', '#attempt', '1');
        const result = { _tag: 'Completed' as const, value: 1, logs: [] };
        const [record, journal] = await pushedEnd(redis, redis, 'p1', async () =>
          expect(await runs.finish(run, { status: 'Completed', result, text: '1', kind: 'none' })).toBe(true),
        );
        // Not the submit's fields (program, request, description, session, …): its waiter holds them
        // (round 41 `push-lean`).
        const stored = await redis.hgetall('islet:run:{p1}');
        expect(Object.keys(fieldsOf(record)).sort()).toEqual(
          ['attempts', 'id', 'status', 'updatedAt', ...endFields].sort(),
        );
        for (const [name, value] of Object.entries(fieldsOf(record))) expect(stored[name]).toBe(value);
        for (const submitField of writeFormat === '1' ? ['code', 'request'] : ['pick'])
          expect(stored).toHaveProperty(submitField);
        expect(stored).toHaveProperty('description');
        expect(fieldsOf(journal)).toEqual({ '#attempt': '1' });
      } finally {
        redis.disconnect();
        await server.stop();
      }
    },
  );
  it("seals each status event's data once per store and reuses it; every event still opens to its status", async () => {
    await withRedis(async (redis) => {
      const { inner, sealed, sealer } = countingSealer();
      const runs = createRunStore(redis, sealer);
      const first = runs.attemptStartEvent('a1');
      const second = runs.attemptStartEvent('a2');
      expect(second.sealedData).toBe(first.sealedData);
      expect(inner.open(first.sealedData)).toBe('{"status":"Running"}');
      expect(sealed.filter((p) => p === '{"status":"Running"}')).toHaveLength(1);

      const now = Date.now();
      const runOf = (id: string) => runFixture(id, { tenant: 't1', createdAt: now });
      const result = { _tag: 'Completed' as const, value: 1, logs: [] };
      for (const id of ['e1', 'e2', 'e3']) {
        await runs.create(runOf(id));
        expect(await runs.finish(runOf(id), { status: 'Completed', result, text: '1' })).toBe(true);
        const events = await runs.readEvents(id);
        expect(events.map((e) => [e.type, e.data])).toEqual([
          ['status', { status: 'Running' }],
          ['end', { status: 'Completed' }],
        ]);
      }
      // The status events' data was sealed once each; the runs' own ends every time (format 2, the
      // default: the result with its text as one `ended`, a Completed text left out as 0).
      expect(sealed.filter((p) => p === '{"status":"Completed"}')).toHaveLength(1);
      expect(sealed.filter((p) => p === '{"status":"Running"}')).toHaveLength(1);
      expect(sealed.filter((p) => p === JSON.stringify([result, 0]))).toHaveLength(3);
    });
  });
  it("seals a submit's description once: its record and its index summary hold the same sealed text", async () => {
    await withRedis(async (redis) => {
      const { inner, sealed, sealer } = countingSealer();
      const runs = createRunStore(redis, sealer);
      const run = { ...runFixture('d1', { tenant: 't1' }), description: 'why the program runs' };
      expect(await runs.create(run, { maxInFlight: 5, sessionTtlSeconds: 60 }, async () => undefined)).toBe(
        'created',
      );
      expect(sealed.filter((p) => p === run.description)).toHaveLength(1);
      await foldPendingEnds(redis, 't1');
      const inRecord = await redis.hget(keys.run('d1'), 'description');
      const summary = JSON.parse((await redis.hget(keys.indexRunSummaries('t1'), 'd1')) ?? '{}') as {
        description?: string;
      };
      expect(inRecord).toMatch(/^v1\.k1\./);
      expect(summary.description).toBe(inRecord);
      expect(inner.open(inRecord ?? '')).toBe(run.description);
      expect((await runs.get('d1'))?.description).toBe(run.description);
    });
  });
  it("opens a run's description only when it is read: a record read for its attempt decrypts none", async () => {
    await withRedis(async (redis) => {
      const { opened, sealer } = countingSealer();
      const runs = createRunStore(redis, sealer);
      const run = { ...runFixture('l1', { tenant: 't1' }), description: 'read only by answers' };
      await runs.create(run);
      const read = await runs.get('l1');
      expect(read?.code).toBe(run.code);
      expect(opened.filter((p) => p === run.description)).toHaveLength(0);
      // Read, it is the text sealed, opened once however often it is read; copies carry it.
      expect(read?.description).toBe(run.description);
      expect(read?.description).toBe(run.description);
      expect(opened.filter((p) => p === run.description)).toHaveLength(1);
      expect(JSON.parse(JSON.stringify(read)).description).toBe(run.description);
      expect({ ...read }.description).toBe(run.description);
      // An empty description stays the empty string, with nothing to open.
      await runs.create({ ...runFixture('l2', { tenant: 't1' }), description: '' });
      expect((await runs.get('l2'))?.description).toBe('');
    });
  });
  it('opens the description at once, a plain field, for a caller that answers with the record', async () => {
    await withRedis(async (redis) => {
      const { opened, sealer } = countingSealer();
      const runs = createRunStore(redis, sealer);
      const run = { ...runFixture('e1', { tenant: 't1' }), description: 'in the answer' };
      await runs.create(run);
      const fields = await redis.hgetall(keys.run('e1'));
      const now = runs.fromHash(fields, true);
      // Opened in fromHash itself, held as a value (no accessor defined on the run).
      expect(opened.filter((p) => p === run.description)).toHaveLength(1);
      expect(Object.getOwnPropertyDescriptor(now, 'description')).toMatchObject({
        value: run.description,
        enumerable: true,
        writable: true,
      });
      // Without it (a runner's attempt), still opened only when read; read, the same run field for field.
      const lazy = runs.fromHash(fields);
      expect(Object.getOwnPropertyDescriptor(lazy, 'description')?.get).toBeTypeOf('function');
      expect(opened.filter((p) => p === run.description)).toHaveLength(1);
      expect(JSON.parse(JSON.stringify(now))).toEqual(JSON.parse(JSON.stringify(lazy)));
    });
  });
});
