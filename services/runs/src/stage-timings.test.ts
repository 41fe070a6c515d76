/**
 * An end's stage stamps (`timings`) stored only when the store is asked to (round 43 `format-43`):
 * the runner passes core config `ISLET_RUN_STAGE_TIMINGS` (default off; only benches read them),
 * a store given nothing writes what it is given, as before. Real Redis. Fails on a0565cd2 (no
 * `stageTimings`: the stamps stored either way).
 */
import { generateSealKey, keys, loadConfig, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createRunStore } from './run-store.ts';
import { timingsFrom } from './run-timings.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const timings = {
  enqueued: 1000.5,
  pickedUp: 1001.5,
  engineCalled: 1002,
  engineReturned: 1003,
  endSent: 1004,
};
const end = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: 1, logs: [] },
  text: 'ok',
  timings,
};

describe("an end's stage stamps", () => {
  it('stored when asked (and by a store given nothing), not with stageTimings false', () =>
    withRedis(async (redis) => {
      for (const [id, stageTimings] of [
        ['t0', undefined],
        ['t1', true],
        ['t2', false],
      ] as const) {
        const runs = createRunStore(redis, sealer, stageTimings === undefined ? {} : { stageTimings });
        const run = runFixture(id, { tenant: 't1' });
        await runs.create(run);
        expect(await runs.finish(run, end)).toBe(true);
        const stored = await redis.hget(keys.run(id), 'timings');
        if (stageTimings === false) expect(stored).toBeNull();
        else expect(timingsFrom(stored)).toMatchObject({ enqueued: 1000.5, endSent: 1004 });
        expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
      }
    }));

  it("the runner's setting is off unless set", () => {
    const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };
    expect(loadConfig(base).ISLET_RUN_STAGE_TIMINGS).toBe('false');
    expect(loadConfig({ ...base, ISLET_RUN_STAGE_TIMINGS: 'true' }).ISLET_RUN_STAGE_TIMINGS).toBe('true');
    expect(() => loadConfig({ ...base, ISLET_RUN_STAGE_TIMINGS: '1' })).toThrow(/ISLET_RUN_STAGE_TIMINGS/);
  });
});
