/**
 * `create`'s `ready`: a check its caller started beside the record's building. Nothing of the run
 * is sent before it passes; a refusal leaves no record, no in-flight entry, no job and no rate
 * count (the request's count stays its caller's to make).
 */
import { generateSealKey, keys, type Redis, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { onRedisServer } from '../test/test-redis.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
let redis: Redis;
onRedisServer(
  (client) => {
    redis = client;
  },
  { appendOnly: false },
);

const runOf = (id: string) => runFixture(id, { tenant: 'ready' });

describe('run store create with a ready check', () => {
  it('sends nothing before the check passes, and nothing at all when it fails', async () => {
    const runs = createRunStore(redis, sealer);
    const rate = { key: keys.rateWindow('ready', 1), limit: 10, counted: false };
    let enqueued = 0;
    const then = async () => {
      enqueued++;
    };
    const refused = Promise.reject(new Error('over its share'));
    await expect(
      runs.create(runOf('refused'), { maxInFlight: 5, sessionTtlSeconds: 60, rate, ready: refused }, then),
    ).rejects.toThrow('over its share');
    expect(await redis.exists(keys.run('refused'))).toBe(0);
    expect(await redis.zcard(keys.inFlight('ready'))).toBe(0);
    expect(await redis.get(rate.key)).toBeNull();
    expect(rate.counted).toBe(false);
    expect(enqueued).toBe(0);

    // Passing: the record is written only after the check resolved (none while it is pending).
    let pass: () => void = () => undefined;
    const pending = new Promise<void>((resolve) => {
      pass = resolve;
    });
    const created = runs.create(
      runOf('passed'),
      { maxInFlight: 5, sessionTtlSeconds: 60, rate, ready: pending },
      then,
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(await redis.exists(keys.run('passed'))).toBe(0);
    pass();
    expect(await created).toBe('created');
    expect(await redis.exists(keys.run('passed'))).toBe(1);
    expect(await redis.get(rate.key)).toBe('1');
    expect(enqueued).toBe(1);
  });
});
