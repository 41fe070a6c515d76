import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { createRunStore } from './run-store.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

describe('run store on a real redis', () => {
  it('a single final status; admission and the Idempotency-Key take-over', async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      const sealer = sealerFromConfig(base);
      const runs = createRunStore(redis, sealer);
      const now = Date.now();
      const run = {
        id: 'r1',
        tenant: 't1',
        session: 's',
        turn: 't',
        callId: 'c',
        status: 'Running' as const,
        mode: 'read-only' as const,
        code: 'return 1',
        description: 'Return one',
        request: { connections: [], bindings: [] },
        createdAt: now,
        updatedAt: now,
        attempts: 0,
        cancelRequested: false,
        clockMs: now,
        seed: 'r1',
      };
      await runs.create(run);
      expect(await redis.hget('islet:run:{r1}', 'code')).toMatch(/^v1\.k1\./);
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
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
