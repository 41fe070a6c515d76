/**
 * An end's write without work done twice (round 48 `engine-timers`): a Completed end whose writer
 * knows its text is the result's own (`textIsResult`, the runner's outcome mapping) is sealed with
 * the text left out without rendering it again (`completedText` not called: the result's lines are
 * never mapped), the same sealed content as a rendered one; and a store with stage stamps off
 * writes an end that has none without copying it. Counted through a Proxy, never timed. Both fail
 * on f63d2625 (the text rendered at every Completed end, the end copied at every finish).
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import type { RunResult } from '@islet/protocol';
import { runFixture } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createRunStore } from './run-store.ts';
import { completedText, ENDED_FIELD, sealEnded } from './sealed-fields.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

/** A Completed result whose lines count how often they are mapped (a rendering of its text). */
function counted(value: unknown) {
  const counts = { map: 0 };
  const lines = [
    { level: 'log' as const, text: 'one' },
    { level: 'log' as const, text: 'two ✓' },
  ];
  const logs = new Proxy(lines, {
    get(target, key, receiver) {
      if (key === 'map') counts.map++;
      return Reflect.get(target, key, receiver);
    },
  });
  const result = { _tag: 'Completed', logs, value } as Extract<RunResult, { _tag: 'Completed' }>;
  return { result, counts };
}

const opened = (sealed: string, runId: string) => JSON.parse(sealer.open(sealed, `${ENDED_FIELD}\0${runId}`));

describe("a Completed end's text", () => {
  it("known to be the result's own, is left out without a second rendering, sealed as a rendered one", () => {
    const { result, counts } = counted({ a: [1, 'x'] });
    const text = completedText(result);
    expect(counts.map).toBe(1);
    const compared = sealEnded(sealer, 'r1', { result, text });
    // The base's path: rendered again to be compared.
    expect(counts.map).toBe(2);
    const known = sealEnded(sealer, 'r1', { result, text, textIsResult: true });
    expect(counts.map).toBe(2);
    // The same sealed content: the result and `0` for its text, byte for byte.
    expect(sealer.open(known, `${ENDED_FIELD}\0r1`)).toBe(sealer.open(compared, `${ENDED_FIELD}\0r1`));
    expect(opened(known, 'r1')[1]).toBe(0);
  });

  it('not known to be (or another text), is compared and kept as before', () => {
    const { result } = counted(1);
    expect(opened(sealEnded(sealer, 'r2', { result, text: 'one\ntwo ✓\n1' }), 'r2')[1]).toBe(0);
    expect(opened(sealEnded(sealer, 'r2', { result, text: 'one\ntwo ✓\n1.0' }), 'r2')[1]).toBe(
      'one\ntwo ✓\n1.0',
    );
  });
});

describe('an end with no stage stamps', () => {
  it('is written as it is, not copied, by a store with stamps off', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer, { stageTimings: false });
      const run = runFixture('s1', { tenant: 't1' });
      await runs.create(run);
      let listed = 0;
      const end = new Proxy(
        {
          status: 'Completed' as const,
          result: { _tag: 'Completed' as const, value: 1, logs: [] },
          text: '1',
        },
        {
          ownKeys(target) {
            // A spread (`{ ...end }`) lists the end's keys.
            listed++;
            return Reflect.ownKeys(target);
          },
        },
      );
      expect(await runs.finish(run, end)).toBe(true);
      expect(listed).toBe(0);
      expect(await redis.hget(keys.run('s1'), 'status')).toBe('Completed');
      expect((await runs.get('s1'))?.text).toBe('1');
      expect(await redis.hget(keys.run('s1'), 'timings')).toBeNull();
    }));
});
